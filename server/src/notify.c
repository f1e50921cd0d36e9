/* notify: sd_notify and sd_listen_fds wrappers (see notify.h).
 *
 * The watchdog pings come from their own thread at half the period, as
 * sd_watchdog_enabled(3) advises.  The thread only proves the process is
 * scheduled and not deadlocked in the signal loop; a wedged HTTP thread is
 * caught by the health checks of whoever calls the API. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "notify.h"

static pthread_t wd_thread;
static bool wd_running;
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond;
static bool wd_stop;
static unsigned long long wd_usec;

void notify_ready(const char *status)
{
        sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void notify_stopping(const char *status)
{
        sd_notifyf(0, "STOPPING=1\nSTATUS=%s", status);
}

static void *wd_main(void *arg)
{
        (void)arg;
        unsigned long long half = wd_usec / 2;
        pthread_mutex_lock(&wd_lock);
        while (!wd_stop) {
                pthread_mutex_unlock(&wd_lock);
                sd_notify(0, "WATCHDOG=1");
                pthread_mutex_lock(&wd_lock);
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += (time_t)(half / 1000000);
                ts.tv_nsec += (long)(half % 1000000) * 1000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                while (!wd_stop && pthread_cond_timedwait(&wd_cond, &wd_lock, &ts) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&wd_lock);
        return NULL;
}

int notify_watchdog_start(unsigned long long *ret_usec)
{
        uint64_t usec = 0;
        int r = sd_watchdog_enabled(0, &usec);
        if (r <= 0 || usec == 0) {
                *ret_usec = 0;
                return r < 0 ? r : 0;
        }
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&wd_cond, &ca);
        pthread_condattr_destroy(&ca);
        wd_usec = usec;
        wd_stop = false;
        r = pthread_create(&wd_thread, NULL, wd_main, NULL);
        if (r != 0)
                return -r;
        /* Named like the daemon's other threads; unnamed it would pass for
         * the main thread ("hpwarmd") in top -H. */
        pthread_setname_np(wd_thread, "hpw-watchdog");
        wd_running = true;
        *ret_usec = usec;
        return 0;
}

void notify_watchdog_stop(void)
{
        if (!wd_running)
                return;
        pthread_mutex_lock(&wd_lock);
        wd_stop = true;
        pthread_cond_broadcast(&wd_cond);
        pthread_mutex_unlock(&wd_lock);
        pthread_join(wd_thread, NULL);
        wd_running = false;
}

int notify_listen_fds(int *fds, size_t max)
{
        int n = sd_listen_fds(1);
        if (n <= 0)
                return n;
        if ((size_t)n > max) {
                for (int i = 0; i < n; i++)
                        close(SD_LISTEN_FDS_START + i);
                return -E2BIG;
        }
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                        return -errno;
                fds[i] = fd;
        }
        return n;
}
