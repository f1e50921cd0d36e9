/* size: the one grammar for sizes, compiled into hpwarmd and into libhpwarm
 * (so the CLI and the API accept exactly the same strings).
 *
 *   size      = digits [unit]            bytes when there is no unit
 *   page size = digits unit              a power of two, at least 4 KiB
 *   digits    = "0" | [1-9][0-9]*        no sign, fraction, spaces or leading 0
 *   unit      = K | KiB | kB | M | MiB | G | GiB | T | TiB   (case as written)
 *
 * Every unit is binary (K = KiB = kB = 1024): "kB" is the kernel's own
 * spelling (hugepages-2048kB, /proc/meminfo), where it means 1024 too.
 * Decimal-looking units (MB, GB) and other cases (2m, 1g) are refused rather
 * than guessed, since they name different numbers in different tools; the
 * explanation function says what to write instead.  Pure, no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A byte count.  0, -EINVAL (syntax) or -ERANGE (over 2^64-1). */
int hpw_size_parse(const char *s, uint64_t *ret);
/* A hugepage size.  0 or -EINVAL (syntax, no unit, not a power of two,
 * below 4 KiB, too large). */
int hpw_page_size_parse(const char *s, uint64_t *ret);
/* The shortest exact spelling: "2M", "1G", "512K", or plain digits.  Writes
 * at most LEN bytes including the NUL. */
void hpw_size_format(uint64_t bytes, char *buf, size_t len);
/* One sentence on why S is refused and what would work, e.g. "'2m': units
 * are case-sensitive; write 2M".  "" if S parses.  PAGE: as a page size. */
void hpw_size_explain(const char *s, bool page, char *buf, size_t len);
