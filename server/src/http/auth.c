/* auth: bearer token sets and peer credentials (see auth.h for the design).
 *
 * Token files are parsed line by line: surrounding whitespace is trimmed,
 * blank lines and lines starting with '#' are skipped, and a token is one
 * word of visible ASCII (RFC 6750's token68 is a subset).  The same token in
 * both files is an error rather than a silent choice of role. */
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "auth.h"
#include "tls.h"
#include "util.h"

struct token {
        uint8_t digest[TLS_SHA256_LEN];
        enum auth_role role;
};

struct token_set {
        struct token *tokens;
        size_t n, n_admin, n_read;
};

struct auth {
        pthread_rwlock_t lock;
        struct token_set set; /* lock */
        char *paths[2];       /* admin, read; NULL when not given */
};

static const enum auth_role file_role[2] = {AUTH_ADMIN, AUTH_READ};

const char *auth_role_name(enum auth_role r)
{
        return r == AUTH_ADMIN ? "admin" : r == AUTH_READ ? "read" : "none";
}

static void set_clear(struct token_set *s)
{
        if (s->tokens)
                explicit_bzero(s->tokens, s->n * sizeof(*s->tokens));
        free(s->tokens);
        *s = (struct token_set){0};
}

static __attribute__((format(printf, 3, 4))) void say(char *why, size_t len, const char *fmt, ...)
{
        size_t used = strlen(why);
        if (used + 1 >= len)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why + used, len - used, fmt, ap);
        va_end(ap);
}

/* Constant time over the whole digest. */
static bool digest_eq(const uint8_t *a, const uint8_t *b)
{
        uint8_t d = 0;
        for (size_t i = 0; i < TLS_SHA256_LEN; i++)
                d |= a[i] ^ b[i];
        return d == 0;
}

static int set_add(struct token_set *s, const char *tok, size_t len, enum auth_role role)
{
        uint8_t dg[TLS_SHA256_LEN];
        int r = tls_sha256(tok, len, dg);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n; i++)
                if (digest_eq(s->tokens[i].digest, dg))
                        return s->tokens[i].role == role ? 0 : -EEXIST;
        if (s->n == AUTH_MAX_TOKENS)
                return -E2BIG;
        struct token *t = realloc(s->tokens, (s->n + 1) * sizeof(*t));
        if (!t)
                return -ENOMEM;
        s->tokens = t;
        memcpy(t[s->n].digest, dg, sizeof(dg));
        t[s->n].role = role;
        s->n++;
        if (role == AUTH_ADMIN)
                s->n_admin++;
        else
                s->n_read++;
        explicit_bzero(dg, sizeof(dg));
        return 0;
}

/* Opened non-blocking: a FIFO (or a device) at a token path would
 * otherwise block open(2) until a writer came, and with it the signal
 * thread that reloads on SIGHUP, which then could not act on SIGTERM.  Such
 * files are refused after fstat; reads of a regular file never block. */
static int load_file(struct token_set *s, const char *path, enum auth_role role, char *why, size_t why_len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
                int r = -errno;
                say(why, why_len, "%s: %s", path, strerror(-r));
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                say(why, why_len, "%s: %s", path, strerror(-r));
                close(fd);
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                say(why, why_len, "%s: not a regular file", path);
                close(fd);
                return -EINVAL;
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
                int r = -errno;
                say(why, why_len, "%s: %s", path, strerror(-r));
                close(fd);
                return r;
        }
        int r = 0;
        if (st.st_uid != 0 && st.st_uid != geteuid()) {
                r = -EPERM;
                say(why, why_len, "%s: token file is owned by uid %u; only root or the daemon's own user may "
                    "hold its tokens", path, (unsigned)st.st_uid);
                goto out;
        }
        if (st.st_mode & S_IRWXO) {
                r = -EPERM;
                say(why, why_len, "%s: token file is accessible to other users (mode %04o); chmod o-rwx it",
                    path, (unsigned)(st.st_mode & 07777));
                goto out;
        }
        if (st.st_mode & S_IRWXG)
                say(why, why_len, "%s%s: token file is accessible to its group (mode %04o)", why[0] ? "; " : "",
                    path, (unsigned)(st.st_mode & 07777));

        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        unsigned lineno = 0;
        bool short_warned = false;
        while ((n = getline(&line, &cap, f)) >= 0) {
                lineno++;
                char *p = line, *e = line + n;
                while (p < e && isspace((unsigned char)*p))
                        p++;
                while (e > p && isspace((unsigned char)e[-1]))
                        e--;
                if (p == e || *p == '#')
                        continue;
                size_t len = (size_t)(e - p);
                bool ok = len <= AUTH_TOKEN_MAX_LEN;
                for (char *c = p; ok && c < e; c++)
                        ok = *c > 0x20 && *c < 0x7f;
                if (!ok) {
                        r = -EINVAL;
                        say(why, why_len, "%s:%u: a token is one word of visible ASCII, at most %d bytes", path,
                            lineno, AUTH_TOKEN_MAX_LEN);
                        break;
                }
                if (len < AUTH_TOKEN_MIN_LEN && !short_warned) {
                        say(why, why_len, "%s%s:%u: token shorter than %d characters", why[0] ? "; " : "", path,
                            lineno, AUTH_TOKEN_MIN_LEN);
                        short_warned = true;
                }
                r = set_add(s, p, len, role);
                if (r < 0) {
                        say(why, why_len, "%s:%u: %s", path, lineno,
                            r == -EEXIST ? "the same token is in both the admin and the read-only file"
                            : r == -E2BIG ? "too many tokens"
                                          : strerror(-r));
                        break;
                }
        }
        if (line) {
                explicit_bzero(line, cap);
                free(line);
        }
out:
        fclose(f);
        return r;
}

static int load_all(struct auth *a, struct token_set *ret, char *why, size_t why_len)
{
        struct token_set s = {0};
        why[0] = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(a->paths); i++) {
                if (!a->paths[i])
                        continue;
                int r = load_file(&s, a->paths[i], file_role[i], why, why_len);
                if (r < 0) {
                        set_clear(&s);
                        return r;
                }
        }
        if (s.n == 0) {
                set_clear(&s);
                why[0] = '\0';
                say(why, why_len, "the token files hold no token (everyone would be locked out)");
                return -ENODATA;
        }
        *ret = s;
        return 0;
}

int auth_new(const char *admin_path, const char *read_path, struct auth **ret, char *why, size_t why_len)
{
        if (!admin_path && !read_path)
                return -EINVAL;
        struct auth *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        pthread_rwlock_init(&a->lock, NULL);
        a->paths[0] = admin_path ? strdup(admin_path) : NULL;
        a->paths[1] = read_path ? strdup(read_path) : NULL;
        if ((admin_path && !a->paths[0]) || (read_path && !a->paths[1])) {
                auth_free(a);
                return -ENOMEM;
        }
        int r = load_all(a, &a->set, why, why_len);
        if (r < 0) {
                auth_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

int auth_reload(struct auth *a, char *why, size_t why_len)
{
        struct token_set s;
        int r = load_all(a, &s, why, why_len);
        if (r < 0)
                return r;
        /* An emptied file would silently take every access of its role away
         * (all admin access, say, while read tokens still work): keep the
         * old set and say why. */
        for (size_t i = 0; i < ARRAY_SIZE(a->paths); i++) {
                size_t n = file_role[i] == AUTH_ADMIN ? s.n_admin : s.n_read;
                if (a->paths[i] && n == 0) {
                        why[0] = '\0';
                        say(why, why_len, "%s holds no %s token; a reload may not take every %s token away",
                            a->paths[i], auth_role_name(file_role[i]), auth_role_name(file_role[i]));
                        set_clear(&s);
                        return -ENODATA;
                }
        }
        pthread_rwlock_wrlock(&a->lock);
        struct token_set old = a->set;
        a->set = s;
        pthread_rwlock_unlock(&a->lock);
        set_clear(&old);
        return 0;
}

void auth_free(struct auth *a)
{
        if (!a)
                return;
        set_clear(&a->set);
        free(a->paths[0]);
        free(a->paths[1]);
        pthread_rwlock_destroy(&a->lock);
        free(a);
}

void auth_count(struct auth *a, size_t *ret_admin, size_t *ret_read)
{
        pthread_rwlock_rdlock(&a->lock);
        *ret_admin = a->set.n_admin;
        *ret_read = a->set.n_read;
        pthread_rwlock_unlock(&a->lock);
}

enum auth_role auth_check_bearer(struct auth *a, const char *authorization, char id[AUTH_ID_MAX],
                                 bool *ret_present)
{
        *ret_present = false;
        if (!authorization)
                return AUTH_NONE;
        const char *p = authorization;
        while (*p == ' ' || *p == '\t')
                p++;
        if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
                return AUTH_NONE;
        p += 6;
        while (*p == ' ' || *p == '\t')
                p++;
        size_t len = strlen(p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
                len--;
        if (!len)
                return AUTH_NONE;
        *ret_present = true;
        if (len > AUTH_TOKEN_MAX_LEN)
                return AUTH_NONE;

        uint8_t dg[TLS_SHA256_LEN];
        if (tls_sha256(p, len, dg) < 0)
                return AUTH_NONE;
        /* Every digest is compared; the match is selected without a branch on
         * secret data until the loop is over. */
        pthread_rwlock_rdlock(&a->lock);
        size_t hit = SIZE_MAX;
        for (size_t i = 0; i < a->set.n; i++) {
                size_t m = (size_t)0 - (size_t)digest_eq(a->set.tokens[i].digest, dg);
                hit = (hit & ~m) | (i & m);
        }
        enum auth_role role = AUTH_NONE;
        if (hit != SIZE_MAX) {
                role = a->set.tokens[hit].role;
                const uint8_t *d = a->set.tokens[hit].digest;
                snprintf(id, AUTH_ID_MAX, "token:%02x%02x%02x%02x (%s)", d[0], d[1], d[2], d[3],
                         auth_role_name(role));
        }
        pthread_rwlock_unlock(&a->lock);
        explicit_bzero(dg, sizeof(dg));
        return role;
}

int auth_peer_cred(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid)
{
        struct ucred uc;
        socklen_t len = sizeof(uc);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return -errno;
        if (len != sizeof(uc))
                return -EIO;
        *ret_pid = uc.pid;
        *ret_uid = uc.uid;
        *ret_gid = uc.gid;
        return 0;
}
