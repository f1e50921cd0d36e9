/* auth: who is calling, and what may they do.
 *
 * Bearer tokens come from two files (admin, read-only), one token per line so
 * several can be valid at once while they are rotated.  Only SHA-256 digests
 * are kept in memory; a presented token is hashed and compared with every
 * digest, without early exit, so neither timing nor length tells how close a
 * guess came.  A caller is named in logs by the first 8 hex digits of its
 * token's digest, never by the token.
 *
 * The token set can be reloaded (SIGHUP) while requests are checked: lookups
 * take a read lock, a reload swaps the set under the write lock.
 *
 * Peer credentials of unix-socket callers (SO_PEERCRED) are read here too. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum auth_role {
        AUTH_NONE = 0, /* no valid credential */
        AUTH_READ,     /* GET only */
        AUTH_ADMIN,    /* everything */
};

struct auth;

/* Shorter tokens load, with a warning in the load report. */
#define AUTH_TOKEN_MIN_LEN 16
#define AUTH_TOKEN_MAX_LEN 4096
#define AUTH_MAX_TOKENS 1024
/* "token:" + 8 hex digits + " (admin)" */
#define AUTH_ID_MAX 32

/* Load the token files (either path may be NULL, not both) into *RET
 * (caller frees with auth_free()).  A file readable or writable by "other"
 * is refused (-EPERM); group access is allowed but reported.  On failure
 * WHY says what is wrong (path and line); on success it holds warnings or
 * is empty. */
int auth_new(const char *admin_path, const char *read_path, struct auth **ret, char *why, size_t why_len);
/* Re-read the same files; on failure the old set stays in force.  A file
 * that is not a regular file (a FIFO, say) is refused without blocking
 * (-EINVAL); a configured file left with no token is refused (-ENODATA):
 * a reload never empties a role. */
int auth_reload(struct auth *a, char *why, size_t why_len);
void auth_free(struct auth *a);
/* Number of admin and read tokens loaded. */
void auth_count(struct auth *a, size_t *ret_admin, size_t *ret_read);

/* Check an Authorization header value (may be NULL).  Returns the role of
 * the matching token, or AUTH_NONE; on a match writes its id ("token:1a2b3c4d
 * (admin)") into ID.  *RET_PRESENT says whether a bearer credential was sent
 * at all (for the WWW-Authenticate error code). */
enum auth_role auth_check_bearer(struct auth *a, const char *authorization, char id[AUTH_ID_MAX],
                                 bool *ret_present);

/* Credentials of the peer of unix socket FD. */
int auth_peer_cred(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid);

/* Role name for logs: "admin", "read" or "none". */
const char *auth_role_name(enum auth_role r);
