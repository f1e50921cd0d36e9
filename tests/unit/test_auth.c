/* auth, audit and tls (the parts that need no socket): token file parsing
 * and its refusals, bearer header parsing, roles and ids, reload keeping the
 * old set on error, audit line escaping, PEM loading. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "auth.h"
#include "check.h"
#include "tls.h"
#include "util.h"

static char dir[] = "/tmp/hpw-test-auth-XXXXXX";

static const char *put(const char *name, const char *text, mode_t mode)
{
        static char path[8][256];
        static int n;
        char *p = path[n++ % 8];
        snprintf(p, 256, "%s/%s", dir, name);
        FILE *f = fopen(p, "w");
        CHECK(f);
        fputs(text, f);
        fclose(f);
        CHECK_INT(chmod(p, mode), ==, 0);
        return p;
}

static enum auth_role check(struct auth *a, const char *hdr, char *id, bool *sent)
{
        return auth_check_bearer(a, hdr, id, sent);
}

/* Two admin tokens (comments, blank lines, spaces and CR around them) and
 * one read-only token (no final newline, a group-readable file: a warning). */
static struct auth *load_sample(char *why, size_t why_len)
{
        const char *adm = put("adm", "# comment\n\n  first-admin-token-0001 \r\nsecond-admin-token-02\n\t\n", 0600);
        const char *rd = put("rd", "read-only-token-00001", 0640);
        struct auth *a = NULL;

        CHECK_INT(auth_new(adm, rd, &a, why, why_len), ==, 0);
        return a;
}

/* Tokens load from both files and each matches its role, under an id that
 * names its hash, never the token. */
TEST(tokens_load_and_match)
{
        char why[512], id[AUTH_ID_MAX] = "";
        struct auth *a = load_sample(why, sizeof(why));
        bool sent;

        CHECK(strstr(why, "accessible to its group"));
        size_t na, nr;
        auth_count(a, &na, &nr);
        CHECK_INT(na, ==, 2);
        CHECK_INT(nr, ==, 1);

        CHECK_INT(check(a, "Bearer first-admin-token-0001", id, &sent), ==, AUTH_ADMIN);
        CHECK(sent);
        CHECK(strncmp(id, "token:", 6) == 0 && strstr(id, " (admin)"));
        char id1[AUTH_ID_MAX];
        strcpy(id1, id);
        CHECK_INT(check(a, "bearer   second-admin-token-02  ", id, &sent), ==, AUTH_ADMIN);
        CHECK(strcmp(id, id1) != 0);
        CHECK(!strstr(id, "second"));
        CHECK_INT(check(a, "Bearer read-only-token-00001", id, &sent), ==, AUTH_READ);
        CHECK(strstr(id, " (read)"));
        auth_free(a);
}

/* Near misses, other schemes, nothing: no role, the id untouched. */
TEST(near_misses_refused)
{
        char why[512], id[AUTH_ID_MAX] = "";
        struct auth *a = load_sample(why, sizeof(why));
        bool sent;

        const char *bad[] = {"Bearer first-admin-token-000", "Bearer first-admin-token-00011",
                             "Bearer FIRST-ADMIN-TOKEN-0001", "Bearer # comment", "Bearer "};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                strcpy(id, "untouched");
                CHECK_INT(check(a, bad[i], id, &sent), ==, AUTH_NONE);
                CHECK_STR(id, "untouched");
        }
        CHECK_INT(check(a, "Bearer ", id, &sent), ==, AUTH_NONE);
        CHECK(!sent);
        CHECK_INT(check(a, "Basic first-admin-token-0001", id, &sent), ==, AUTH_NONE);
        CHECK(!sent);
        CHECK_INT(check(a, "Bearerfirst-admin-token-0001", id, &sent), ==, AUTH_NONE);
        CHECK_INT(check(a, NULL, id, &sent), ==, AUTH_NONE);
        CHECK(!sent);
        auth_free(a);
}

/* Reload: the new set is in force; a broken file keeps the old one. */
TEST(reload_replaces_or_keeps)
{
        char why[512], id[AUTH_ID_MAX] = "";
        struct auth *a = load_sample(why, sizeof(why));
        bool sent;

        put("adm", "rotated-admin-token-0003\n", 0600);
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, 0);
        CHECK_INT(check(a, "Bearer first-admin-token-0001", id, &sent), ==, AUTH_NONE);
        CHECK_INT(check(a, "Bearer rotated-admin-token-0003", id, &sent), ==, AUTH_ADMIN);
        put("adm", "two words\n", 0600);
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, -EINVAL);
        CHECK(strstr(why, ":1:"));
        CHECK_INT(check(a, "Bearer rotated-admin-token-0003", id, &sent), ==, AUTH_ADMIN);
        auth_free(a);
        auth_free(NULL);
}

TEST(refusals)
{
        struct auth *a = (struct auth *)0x1;
        char why[512];
        const char *ok = put("ok", "admin-token-abcdefgh\n", 0600);

        CHECK_INT(auth_new(put("world", "admin-token-abcdefgh\n", 0604), NULL, &a, why, sizeof(why)), ==, -EPERM);
        CHECK(strstr(why, "other users"));
        CHECK_INT(auth_new(put("empty", "# only\n\n", 0600), NULL, &a, why, sizeof(why)), ==, -ENODATA);
        CHECK_INT(auth_new(ok, ok, &a, why, sizeof(why)), ==, -EEXIST);
        CHECK(strstr(why, "both"));
        CHECK_INT(auth_new(put("ctl", "tok\001en-abcdefghijk\n", 0600), NULL, &a, why, sizeof(why)), ==, -EINVAL);
        char path[300];
        snprintf(path, sizeof(path), "%s/missing", dir);
        CHECK_INT(auth_new(path, NULL, &a, why, sizeof(why)), ==, -ENOENT);
        CHECK_INT(auth_new(NULL, NULL, &a, why, sizeof(why)), ==, -EINVAL);
        CHECK(a == (struct auth *)0x1); /* untouched on failure */

        /* Short tokens load, with a warning. */
        CHECK_INT(auth_new(put("short", "abc\n", 0600), NULL, &a, why, sizeof(why)), ==, 0);
        CHECK(strstr(why, "shorter than"));
        auth_free(a);
}

TEST(audit_format)
{
        char buf[1024];
        CHECK_STR(audit_format(buf, sizeof(buf), "uid=0 gid=0 pid=1", "PUT", "/v1/pools/a", 201),
                  "audit: who=\"uid=0 gid=0 pid=1\" method=PUT path=/v1/pools/a status=201");
        CHECK_STR(audit_format(buf, sizeof(buf), "cert:CN=\"x\"\n", "DELETE", "/v1/pools/a b\n\"c\\", 404),
                  "audit: who=\"cert:CN=\\x22x\\x22\\x0a\" method=DELETE path=/v1/pools/a\\x20b\\x0a\\x22c\\x5c "
                  "status=404");
        CHECK_STR(audit_format(buf, sizeof(buf), NULL, "POST", "/\xff", 401),
                  "audit: who=\"unknown\" method=POST path=/\\xff status=401");
        CHECK(audit_is_mutation("PUT") && audit_is_mutation("POST") && audit_is_mutation("DELETE") &&
              audit_is_mutation("PATCH") && audit_is_mutation("BREW"));
        CHECK(!audit_is_mutation("GET") && !audit_is_mutation("HEAD") && !audit_is_mutation("OPTIONS"));
}

TEST(pem)
{
        char *s = NULL;
        CHECK_INT(tls_read_pem(put("notpem", "hello\n", 0600), &s), ==, -EINVAL);
        CHECK_INT(tls_read_pem(put("pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 0600),
                               &s), ==, 0);
        CHECK(strstr(s, "AAAA"));
        tls_free_secret(s);
        tls_free_secret(NULL);
        CHECK_INT(tls_read_pem(dir, &s), ==, -EINVAL); /* a directory */
        uint8_t d[TLS_SHA256_LEN];
        CHECK_INT(tls_sha256("abc", 3, d), ==, 0);
        CHECK_INT(d[0], ==, 0xba);
        CHECK_INT(d[31], ==, 0xad);
        CHECK_INT(tls_verify_client(NULL), ==, -ENOTCONN);
        char subj[8];
        CHECK_INT(tls_client_subject(NULL, subj, sizeof(subj)), ==, -ENOKEY);
}

/* A FIFO at a token path is refused at once, never waited on (a blocking
 * open would hang until a writer came), at start and on reload. */
TEST(fifo_refused_without_blocking)
{
        char path[300], why[512];
        struct auth *a = NULL;
        snprintf(path, sizeof(path), "%s/fifo", dir);
        CHECK_INT(mkfifo(path, 0600), ==, 0);
        uint64_t t0 = now_mono_ns();
        CHECK_INT(auth_new(path, NULL, &a, why, sizeof(why)), ==, -EINVAL);
        CHECK(strstr(why, "not a regular file"));
        CHECK_U64(now_mono_ns() - t0, <, 2000000000ull);

        /* ... and on reload: the old set stays. */
        const char *adm = put("adm-fifo", "fifo-admin-token-00001\n", 0600);
        CHECK_INT(auth_new(adm, NULL, &a, why, sizeof(why)), ==, 0);
        CHECK_INT(unlink(adm), ==, 0);
        CHECK_INT(mkfifo(adm, 0600), ==, 0);
        t0 = now_mono_ns();
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, -EINVAL);
        CHECK_U64(now_mono_ns() - t0, <, 2000000000ull);
        char id[AUTH_ID_MAX];
        bool sent;
        CHECK_INT(check(a, "Bearer fifo-admin-token-00001", id, &sent), ==, AUTH_ADMIN);
        auth_free(a);
        unlink(adm);
        unlink(path);
}

/* A directory (another non-regular file) is refused too. */
TEST(directory_refused)
{
        char why[512];
        struct auth *a = NULL;
        CHECK_INT(auth_new(dir, NULL, &a, why, sizeof(why)), ==, -EINVAL);
        CHECK(strstr(why, "not a regular file"));
}

/* A reload that would leave a configured role with no token is refused and
 * the old set kept, for either role. */
TEST(reload_never_empties_a_role)
{
        char why[512], id[AUTH_ID_MAX];
        bool sent;
        struct auth *a = NULL;
        const char *adm = put("adm-role", "role-admin-token-00001\n", 0600);
        const char *rd = put("rd-role", "role-read-token-000001\n", 0600);
        CHECK_INT(auth_new(adm, rd, &a, why, sizeof(why)), ==, 0);

        put("adm-role", "# emptied\n", 0600);
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, -ENODATA);
        CHECK(strstr(why, "adm-role"));
        CHECK(strstr(why, "admin"));
        CHECK_INT(check(a, "Bearer role-admin-token-00001", id, &sent), ==, AUTH_ADMIN);
        CHECK_INT(check(a, "Bearer role-read-token-000001", id, &sent), ==, AUTH_READ);

        put("adm-role", "role-admin-token-00002\n", 0600);
        put("rd-role", "\n", 0600);
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, -ENODATA);
        CHECK(strstr(why, "rd-role"));
        CHECK_INT(check(a, "Bearer role-admin-token-00001", id, &sent), ==, AUTH_ADMIN);
        CHECK_INT(check(a, "Bearer role-admin-token-00002", id, &sent), ==, AUTH_NONE);

        /* Both roles still populated: the reload goes through. */
        put("rd-role", "role-read-token-000002\n", 0600);
        CHECK_INT(auth_reload(a, why, sizeof(why)), ==, 0);
        CHECK_INT(check(a, "Bearer role-admin-token-00002", id, &sent), ==, AUTH_ADMIN);
        CHECK_INT(check(a, "Bearer role-read-token-000002", id, &sent), ==, AUTH_READ);
        CHECK_INT(check(a, "Bearer role-admin-token-00001", id, &sent), ==, AUTH_NONE);
        auth_free(a);
}

int main(void)
{
        CHECK(mkdtemp(dir));
        int r = test_run_all();
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK_INT(system(cmd), ==, 0);
        return r;
}
