/* Child processes as stand-ins for VMMs in tests of owner-bound pools. */
#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* A child that sleeps until killed; it dies with the test too, so a failed
 * check leaves no process behind. */
static inline pid_t child_spawn(void)
{
        pid_t parent = getpid();
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                /* The parent may have gone before prctl took effect. */
                if (getppid() != parent)
                        _exit(0);
                for (;;)
                        pause();
        }
        return pid;
}

static inline void child_kill(pid_t pid)
{
        CHECK_INT(kill(pid, SIGKILL), ==, 0);
        CHECK_INT(waitpid(pid, NULL, 0), ==, pid);
}

/* A pid that named a process a moment ago and names none now. */
static inline pid_t child_dead_pid(void)
{
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0)
                _exit(0);
        CHECK_INT(waitpid(pid, NULL, 0), ==, pid);
        return pid;
}
