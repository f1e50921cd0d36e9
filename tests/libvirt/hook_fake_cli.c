/* hook_fake_cli: `hpwarm libvirt-hook`'s rules (client/src/libvirt_hook*.c)
 * with a test double for the daemon: each request is run as the hpwarm
 * command line that would ask it ($HPWARM, test_hook.py's fake CLI, which
 * logs its arguments and answers with chosen exit codes), and its output
 * read back as the hook used to read the CLI's.  So libvirt.hook checks
 * every rule and failure path, operation by operation, with no daemon;
 * the real side (libvirt_daemon.c, libhpwarm) is what libvirt.boot and
 * libvirt.migrate run.
 *
 * Usage as the hook's: hook_fake_cli DOMAIN OP SUBOP [EXTRA] < XML. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libvirt_hook.h"

/* The value of "KEY: value" lines in OUT (the last one), into BUF. */
static void field(const char *out, const char *key, char *buf, size_t len)
{
        size_t k = strlen(key);

        buf[0] = '\0';
        for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                if (strncmp(l, key, k) != 0)
                        continue;
                const char *v = l + k + strspn(l + k, " ");
                size_t n = strcspn(v, "\n");
                snprintf(buf, len, "%.*s", (int)n, v);
        }
}

static void call(void *ud, const struct lv_settings *s, const struct lv_call *c, struct lv_answer *a)
{
        const char *cli = getenv("HPWARM") ? getenv("HPWARM") : "hpwarm";
        char buf[2048], *words[LV_ARGV_MAX], *argv[LV_ARGV_MAX + 1];
        int fd[2], st;
        size_t n = 0;
        pid_t pid;

        (void)ud;
        (void)s;
        lv_call_argv(c, buf, sizeof(buf), words);
        argv[0] = (char *)cli;
        for (size_t i = 0; i <= LV_ARGV_MAX - 1 && (argv[i + 1] = words[i]); i++)
                ;
        if (pipe(fd) < 0 || (pid = fork()) < 0) {
                a->rc = 1;
                return;
        }
        if (pid == 0) {
                dup2(fd[1], STDOUT_FILENO);
                dup2(fd[1], STDERR_FILENO);
                close(fd[0]);
                close(fd[1]);
                execvp(cli, argv);
                _exit(127);
        }
        close(fd[1]);
        for (;;) {
                ssize_t r = read(fd[0], a->out + n, sizeof(a->out) - 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        a->out[n] = '\0';
        close(fd[0]);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        a->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        if (c->kind == LV_STATUS) {
                char claimed[8];
                field(a->out, "path:", a->path, sizeof(a->path));
                field(a->out, "label:", a->label, sizeof(a->label));
                field(a->out, "claimed:", claimed, sizeof(claimed));
                a->claimed = strcmp(claimed, "yes") == 0;
                /* status's own output is no message */
                a->out[0] = '\0';
        }
}

int main(int argc, char **argv)
{
        struct lv_daemon d = { .call = call };

        return lv_hook_main(argc, argv, &d);
}
