/* Fixture trees for unit tests (see tests/fixtures/README.md).
 *
 * Tests never write to the committed trees: fixture_copy() clones one into a
 * fresh temporary directory, fixture_remove() deletes the clone.  The source
 * directory comes from $HPW_FIXTURES, which tests/CMakeLists.txt sets.  Every
 * helper ends the test on failure (check.h), so call sites stay short.  A
 * failed test does not get to remove its copies: an atexit handler removes
 * every live one when the binary ends, and a SIGABRT handler does the same
 * for a check outside a registered test, so no temporary tree is left
 * behind. */
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

extern char **environ;

static inline const char *fixture_src_dir(void)
{
        const char *d = getenv("HPW_FIXTURES");

        if (!d || !*d)
                SKIP("HPW_FIXTURES is not set (run through ctest)");
        return d;
}

static inline void fixture_run_(char *const argv[])
{
        pid_t pid;
        int status;

        CHECK_INT(posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ), ==, 0);
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#define FIXTURE_MAX_LIVE 16
static char fixture_live_[FIXTURE_MAX_LIVE][64];

/* Only async-signal-safe calls (fork, execve, waitpid): also run from the
 * SIGABRT handler. */
static inline void fixture_remove_live_(void)
{
        size_t i;

        for (i = 0; i < FIXTURE_MAX_LIVE; i++) {
                char *argv[] = { "rm", "-rf", fixture_live_[i], NULL };
                char *envp[] = { NULL };
                pid_t pid;

                if (!fixture_live_[i][0])
                        continue;
                pid = fork();
                if (pid == 0) {
                        execve("/bin/rm", argv, envp);
                        _exit(127);
                }
                if (pid > 0)
                        waitpid(pid, NULL, 0);
                fixture_live_[i][0] = '\0';
        }
}

static inline void fixture_on_abort_(int sig)
{
        fixture_remove_live_();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* Only in the process that made the copies (not in a forked child). */
static pid_t fixture_owner_;

static inline void fixture_at_exit_(void)
{
        if (getpid() == fixture_owner_)
                fixture_remove_live_();
}

static inline void fixture_track_(const char *dir, bool add)
{
        static bool installed;
        size_t i;

        if (!installed) {
                signal(SIGABRT, fixture_on_abort_);
                fixture_owner_ = getpid();
                atexit(fixture_at_exit_);
                installed = true;
        }
        for (i = 0; i < FIXTURE_MAX_LIVE; i++) {
                if (add && !fixture_live_[i][0]) {
                        snprintf(fixture_live_[i], sizeof(fixture_live_[i]), "%s", dir);
                        return;
                }
                if (!add && strcmp(fixture_live_[i], dir) == 0) {
                        fixture_live_[i][0] = '\0';
                        return;
                }
        }
}

/* Copy fixture NAME to a new temporary directory; returns its malloc'd path. */
static inline char *fixture_copy(const char *name)
{
        char src[4096], tmpl[] = "/tmp/hpw-fixture.XXXXXX";
        char *dst;

        snprintf(src, sizeof(src), "%s/%s/.", fixture_src_dir(), name);
        CHECK(access(src, R_OK) == 0);
        CHECK((dst = mkdtemp(tmpl)) != NULL);
        fixture_track_(dst, true);
        char *argv[] = { "cp", "-R", src, dst, NULL };
        fixture_run_(argv);
        return strdup(dst);
}

/* Remove a copy made by fixture_copy() and free the path. */
static inline void fixture_remove(char *dir)
{
        if (!dir)
                return;
        CHECK(strncmp(dir, "/tmp/hpw-fixture.", 17) == 0);
        char *argv[] = { "rm", "-rf", dir, NULL };
        fixture_run_(argv);
        fixture_track_(dir, false);
        free(dir);
}

/* Replace DIR/REL with TEXT (creating it). */
static inline void fixture_write(const char *dir, const char *rel, const char *text)
{
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        CHECK((f = fopen(path, "w")) != NULL);
        CHECK(fputs(text, f) >= 0);
        CHECK(fclose(f) == 0);
}

/* Contents of DIR/REL into BUF (NUL-terminated). */
static inline void fixture_read(const char *dir, const char *rel, char *buf, size_t len)
{
        char path[4096];
        size_t n;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        CHECK((f = fopen(path, "r")) != NULL);
        n = fread(buf, 1, len - 1, f);
        buf[n] = '\0';
        fclose(f);
}

static inline void fixture_unlink(const char *dir, const char *rel)
{
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        CHECK(unlink(path) == 0);
}
