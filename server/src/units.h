/* Sizes as people write them.  Pure functions, no I/O. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* A hugepage size as used in URLs and requests: "2M", "2MiB", "2048kB",
 * "1G", "1GiB", "1048576kB" (and the same forms for any power-of-two size).
 * Case-sensitive on the unit, no spaces, no sign.  -EINVAL otherwise. */
int parse_page_size(const char *s, uint64_t *ret);

/* A byte count: plain digits, or digits with K/M/G/T (also KiB/MiB/GiB/TiB;
 * all binary).  Rejects overflow, empty, signs, fractions.  -EINVAL/-ERANGE. */
int parse_size(const char *s, uint64_t *ret);

/* "2M", "1G", "512K", or plain bytes when not a whole unit.  Writes at most LEN. */
void format_size(uint64_t bytes, char *buf, size_t len);
