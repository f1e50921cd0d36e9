/* Child processes as stand-ins for VMMs in tests of owner-bound pools. */
#pragma once
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* In a child: die with PARENT (SIGKILL when it goes), so a failed check
 * leaves no process behind.  Called again after a change of ids, which
 * clears the parent-death signal. */
static inline void child_die_with(pid_t parent)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The parent may have gone before prctl took effect. */
        if (getppid() != parent)
                _exit(0);
}

/* fork(), the child bound to die with this process: 0 in the child, its pid
 * here. */
static inline pid_t child_fork(void)
{
        pid_t parent = getpid();
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0)
                child_die_with(parent);
        return pid;
}

/* A child that sleeps until killed; it dies with the test too. */
static inline pid_t child_spawn(void)
{
        pid_t pid = child_fork();

        if (pid == 0)
                for (;;)
                        pause();
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
