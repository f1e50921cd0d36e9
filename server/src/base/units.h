/* Sizes as people write them: the grammar shared with the client
 * (common/size.h: digits and an optional binary unit K/KiB/kB, M/MiB, G/GiB,
 * T/TiB, case-sensitive; page sizes need a unit and are powers of two of at
 * least 4 KiB).  Pure functions, no I/O. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* A hugepage size as used in URLs and requests: "2M", "2MiB", "2048kB",
 * "1G", "1GiB", "1048576kB".  -EINVAL otherwise. */
int parse_page_size(const char *s, uint64_t *ret);

/* A byte count: plain digits, or digits with a unit as above ("64G",
 * "2048kB").  Rejects overflow (-ERANGE), empty, signs, fractions (-EINVAL). */
int parse_size(const char *s, uint64_t *ret);

/* "2M", "1G", "512K", or plain bytes when not a whole unit.  Writes at most LEN. */
void format_size(uint64_t bytes, char *buf, size_t len);
