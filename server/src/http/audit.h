/* audit: one log line per mutation (PUT, POST, DELETE, and any other
 * non-read method), refused ones included:
 *
 *   audit: who="token:1a2b3c4d (admin) ip=10.0.0.7" method=PUT path=/v1/pools/vm-1 status=201
 *
 * WHO and PATH come from the network: bytes outside printable ASCII, quotes
 * and backslashes are written as \xNN, so one request is always one line
 * and fields cannot be forged. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* True for methods that may change state (everything but GET, HEAD, OPTIONS). */
bool audit_is_mutation(const char *method);
/* Format the audit line into BUF (for tests); returns BUF. */
char *audit_format(char *buf, size_t len, const char *who, const char *method, const char *path, int status);
/* Write the audit line to the log (notice level). */
void audit_log(const char *who, const char *method, const char *path, int status);
