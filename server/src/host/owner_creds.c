/* owner_creds: who could open a file, known without walking /proc (owner.h).
 *
 * The holder check must find an O_PATH descriptor of a pool file (no lease
 * sees one), but only where it matters: a process can turn an O_PATH
 * descriptor into an open file only by reopening it through /proc/PID/fd,
 * which the kernel checks against the inode's owner, group and mode as they
 * are at that moment, like an open by name.  So only the processes whose ids
 * pass that check for the file as it is handed out are worth looking into;
 * root (all of its uids 0: CAP_DAC_OVERRIDE) opens any file anyway and is
 * left out.  Finding those processes by reading every /proc/PID/status would
 * cost a read per process on the host at every hand-out; instead the index
 * keeps every process's ids, read once, and follows the kernel's process
 * events (the netlink proc connector: fork copies the parent's ids, exec,
 * setuid/setgid families and exit) so that at a hand-out it answers from
 * memory and opens only the matching processes' /proc/PID/fd.
 *
 * Events are read on demand (owner_creds_scan drains the socket first), so
 * every change a process made before the check began is applied: the kernel
 * queues the event in the caller of setuid or exec, before it returns.
 * When the socket overflowed (ENOBUFS) events were lost: the index is read
 * again from /proc, once.  setgroups(2) sends no event, but only a process
 * with CAP_SETGID can call it, and such a process is root here (or drops to
 * another uid next, which does send one).  Entries sit in a hash by pid
 * (open addressing, tombstones) under one lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "owner.h"
#include "util.h"

/* Supplementary groups kept per process; one with more is matched as if it
 * had every group (looked into whenever a group could open the file). */
#define CREDS_GROUPS_MAX 16
/* The socket's receive buffer: a burst of forks and exits between two
 * checks fits; beyond it the kernel drops events and the index is reread. */
#define CREDS_RCVBUF (4 << 20)
/* How long the kernel's answer to a listen may take (it is sent at once;
 * where none comes, as in a user namespace here, the index is refused). */
#define CREDS_ACK_TIMEOUT_MS 1000
/* Largest event datagram: one nlmsghdr, cn_msg and proc_event. */
#define CREDS_MSG_MAX 1024
/* Datagrams one drain reads at most: more than CREDS_RCVBUF can hold at
 * once, so reaching it means processes fork and exec faster than the
 * events are applied (a busy build beside the daemon): the drain stops
 * and reads /proc again rather than chase them for ever, holding the
 * lock every check waits for. */
#define CREDS_DRAIN_MAX 16384

struct creds_entry {
        pid_t pid;              /* 0: empty; -1: tombstone */
        uint32_t uid[4];        /* real, effective, saved, fs */
        uint32_t gid[4];
        uint32_t groups[CREDS_GROUPS_MAX];
        unsigned n_groups;      /* > CREDS_GROUPS_MAX: more than kept */
};

struct owner_creds {
        char *proc_root;
        int sock;
        pthread_mutex_t lock;
        struct creds_entry *tab;        /* lock */
        size_t cap, used;               /* lock; used counts tombstones */
};

static size_t slot_of(const struct owner_creds *c, pid_t pid)
{
        return ((size_t)pid * 2654435761u) & (c->cap - 1);
}

static struct creds_entry *find(struct owner_creds *c, pid_t pid)
{
        for (size_t i = slot_of(c, pid), k = 0; k < c->cap; i = (i + 1) & (c->cap - 1), k++) {
                if (c->tab[i].pid == pid)
                        return &c->tab[i];
                if (c->tab[i].pid == 0)
                        return NULL;
        }
        return NULL;
}

/* Rehash into a table twice the size, or the same size when tombstones
 * (not live entries) filled it. */
static int grow(struct owner_creds *c)
{
        size_t live = 0, cap, old_cap = c->cap;
        struct creds_entry *old = c->tab, *tab;

        for (size_t i = 0; i < old_cap; i++)
                live += old[i].pid > 0;
        cap = !old_cap ? 1024 : live * 2 < old_cap ? old_cap : old_cap * 2;
        tab = calloc(cap, sizeof(*tab));

        if (!tab)
                return -ENOMEM;
        c->tab = tab;
        c->cap = cap;
        c->used = 0;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].pid > 0) {
                        size_t j = slot_of(c, old[i].pid);
                        while (tab[j].pid)
                                j = (j + 1) & (cap - 1);
                        tab[j] = old[i];
                        c->used++;
                }
        free(old);
        return 0;
}

/* Insert or replace E (by its pid). */
static int put(struct owner_creds *c, const struct creds_entry *e)
{
        struct creds_entry *slot = find(c, e->pid);
        int r;

        if (slot) {
                *slot = *e;
                return 0;
        }
        if ((c->used + 1) * 4 > c->cap * 3 && (r = grow(c)) < 0)
                return r;
        for (size_t i = slot_of(c, e->pid);; i = (i + 1) & (c->cap - 1))
                if (c->tab[i].pid <= 0) {
                        if (c->tab[i].pid == 0)
                                c->used++;
                        c->tab[i] = *e;
                        return 0;
                }
}

static void drop(struct owner_creds *c, pid_t pid)
{
        struct creds_entry *slot = find(c, pid);

        if (slot)
                slot->pid = -1;
}

static int parse_ids(const char *s, uint32_t *ids, unsigned max, unsigned *ret_n)
{
        unsigned n = 0;

        for (;;) {
                char *end;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s == '\n' || *s == '\0')
                        break;
                errno = 0;
                unsigned long v = strtoul(s, &end, 10);
                if (errno || end == s)
                        return -EIO;
                if (n < max)
                        ids[n] = (uint32_t)v;
                n++;
                s = end;
        }
        *ret_n = n;
        return 0;
}

/* Read PID's ids from /proc/PID/status into *RET.  -ESRCH: gone. */
static int read_ids(const char *proc_root, pid_t pid, struct creds_entry *ret)
{
        char path[PATH_MAX], line[1024];
        unsigned n, have = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        memset(ret, 0, sizeof(*ret));
        ret->pid = pid;
        while (fgets(line, sizeof(line), f) && have != 7) {
                if (strncmp(line, "Uid:", 4) == 0 && parse_ids(line + 4, ret->uid, 4, &n) == 0 && n == 4)
                        have |= 1;
                else if (strncmp(line, "Gid:", 4) == 0 && parse_ids(line + 4, ret->gid, 4, &n) == 0 && n == 4)
                        have |= 2;
                else if (strncmp(line, "Groups:", 7) == 0 &&
                         parse_ids(line + 7, ret->groups, CREDS_GROUPS_MAX, &ret->n_groups) == 0)
                        have |= 4;
        }
        fclose(f);
        return have == 7 ? 0 : -ESRCH;  /* a status cut short: the process is exiting */
}

static bool is_root(const struct creds_entry *e)
{
        return !e->uid[0] && !e->uid[1] && !e->uid[2] && !e->uid[3];
}

/* Read every process again (at start, and after lost events). */
static int reread(struct owner_creds *c)
{
        struct dirent *de;
        DIR *d = opendir(c->proc_root);

        if (!d)
                return -errno;
        memset(c->tab, 0, c->cap * sizeof(*c->tab));
        c->used = 0;
        while ((de = readdir(d))) {
                struct creds_entry e;
                char *end;
                long pid = strtol(de->d_name, &end, 10);

                if (*end || pid <= 0)
                        continue;
                /* Root is left out (see the top); so are the gone. */
                if (read_ids(c->proc_root, (pid_t)pid, &e) == 0 && !is_root(&e) && put(c, &e) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
        }
        closedir(d);
        return 0;
}

/* A process (TGID) whose ids may have changed: read them again. */
static int refresh(struct owner_creds *c, pid_t tgid)
{
        struct creds_entry e;

        if (read_ids(c->proc_root, tgid, &e) < 0 || is_root(&e)) {
                drop(c, tgid);
                return 0;
        }
        return put(c, &e);
}

static int apply(struct owner_creds *c, const struct proc_event *ev)
{
        switch (ev->what) {
        case PROC_EVENT_FORK:
                if (ev->event_data.fork.child_pid != ev->event_data.fork.child_tgid)
                        return 0;       /* a thread: its process is known */
                {
                        /* fork copies the parent's ids; a root parent's child is root. */
                        struct creds_entry *parent = find(c, ev->event_data.fork.parent_tgid);
                        if (!parent) {
                                drop(c, ev->event_data.fork.child_tgid);
                                return 0;
                        }
                        struct creds_entry e = *parent;
                        e.pid = ev->event_data.fork.child_tgid;
                        return put(c, &e);
                }
        case PROC_EVENT_EXEC:
                return refresh(c, ev->event_data.exec.process_tgid);
        case PROC_EVENT_UID:
        case PROC_EVENT_GID:
                return refresh(c, ev->event_data.id.process_tgid);
        case PROC_EVENT_EXIT:
                if (ev->event_data.exit.process_pid == ev->event_data.exit.process_tgid)
                        drop(c, ev->event_data.exit.process_tgid);
                return 0;
        default:
                return 0;
        }
}

/* Apply every queued event (lock held); reread on overflow. */
static int drain(struct owner_creds *c)
{
        char buf[CREDS_MSG_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
        bool lost = false;

        for (unsigned read = 0;; read++) {
                if (read == CREDS_DRAIN_MAX) {
                        lost = true;
                        break;
                }
                ssize_t n = recv(c->sock, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) {
                                lost = true;
                                continue;
                        }
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                break;
                        return -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *m = NLMSG_DATA(h);
                        struct proc_event ev;
                        if (h->nlmsg_type != NLMSG_DONE || m->id.idx != CN_IDX_PROC ||
                            m->len < sizeof(ev))
                                continue;
                        /* The event follows a 36-byte header: copied out
                         * to its own alignment. */
                        memcpy(&ev, m->data, sizeof(ev));
                        if (apply(c, &ev) < 0)
                                lost = true;    /* no room: read it all again */
                }
        }
        if (lost)
                return reread(c);
        return 0;
}

static int subscribe(int sock, bool on)
{
        struct {
                struct nlmsghdr h;
                struct cn_msg m;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) msg = { 0 };

        msg.h.nlmsg_len = sizeof(msg);
        msg.h.nlmsg_type = NLMSG_DONE;
        msg.h.nlmsg_pid = 0;
        msg.m.id.idx = CN_IDX_PROC;
        msg.m.id.val = CN_VAL_PROC;
        msg.m.len = sizeof(msg.op);
        msg.op = on ? PROC_CN_MCAST_LISTEN : PROC_CN_MCAST_IGNORE;
        return send(sock, &msg, sizeof(msg), 0) == (ssize_t)sizeof(msg) ? 0 : -errno;
}

/* The kernel answers a listen with an acknowledgement (PROC_EVENT_NONE,
 * its error in ack.err): refused outside the initial user and PID
 * namespaces, or without CAP_NET_ADMIN, with the send itself succeeding.
 * An index that hears nothing would miss every later change, so the answer
 * is waited for (events that come first are dropped: the read of every
 * process that follows covers them).  0 or -errno. */
static int subscribed(int sock)
{
        char buf[CREDS_MSG_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
        uint64_t deadline = now_mono_ns() + CREDS_ACK_TIMEOUT_MS * UINT64_C(1000000);

        for (;;) {
                /* Other processes' events keep coming: the wait is bounded
                 * as a whole, not per message. */
                uint64_t now = now_mono_ns();
                if (now >= deadline)
                        return -ETIMEDOUT;
                uint64_t left_us = (deadline - now) / 1000 + 1;
                struct timeval tv = { .tv_sec = (time_t)(left_us / 1000000), .tv_usec = (suseconds_t)(left_us % 1000000) };
                if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                        return -errno;
                ssize_t n = recv(sock, buf, sizeof(buf), 0);
                if (n < 0) {
                        if (errno == EINTR || errno == ENOBUFS)
                                continue;
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *m = NLMSG_DATA(h);
                        struct proc_event ev;
                        if (h->nlmsg_type != NLMSG_DONE || m->id.idx != CN_IDX_PROC || m->len < sizeof(ev))
                                continue;
                        memcpy(&ev, m->data, sizeof(ev));
                        if (ev.what == PROC_EVENT_NONE)
                                return ev.event_data.ack.err ? -(int)ev.event_data.ack.err : 0;
                }
        }
}

int owner_creds_new(const char *proc_root, struct owner_creds **ret)
{
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
        struct owner_creds *c;
        int buf = CREDS_RCVBUF, r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        c->sock = -1;
        c->proc_root = strdup(proc_root);
        if (!c->proc_root || grow(c) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        c->sock = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        if (c->sock < 0) {
                r = -errno;
                goto fail;
        }
        if (setsockopt(c->sock, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
                (void)setsockopt(c->sock, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
        if (bind(c->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = -errno;
                goto fail;
        }
        /* Listening first, then reading: a change made during the read is
         * queued and applied on top of it. */
        r = subscribe(c->sock, true);
        if (r == 0)
                r = subscribed(c->sock);
        if (r < 0)
                goto fail;
        r = reread(c);
        if (r < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        owner_creds_free(c);
        return r;
}

void owner_creds_free(struct owner_creds *c)
{
        if (!c)
                return;
        if (c->sock >= 0) {
                (void)subscribe(c->sock, false);
                close(c->sock);
        }
        free(c->tab);
        free(c->proc_root);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

static bool has_id(const uint32_t *ids, unsigned n, uint32_t id)
{
        for (unsigned i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

/* Could E open a file of A's owner, group and mode (the kernel's check:
 * owner bits for its fsuid, else group bits for its fsgid or groups, else
 * other bits)?  Any of its four uids or gids counts: a process may switch
 * its fs ids among them. */
static bool could_open(const struct creds_entry *e, const struct owner_access *a)
{
        bool owner = has_id(e->uid, 4, a->uid);
        bool group = has_id(e->gid, 4, a->gid) || e->n_groups > CREDS_GROUPS_MAX ||
                     has_id(e->groups, e->n_groups, a->gid);

        if (a->mode & 0006)
                return true;
        if (owner && (a->mode & 0600))
                return true;
        return group && (a->mode & 0060);
}

int owner_creds_scan(struct owner_creds *c, pid_t skip, const struct owner_access *who, size_t n_who,
                     struct owner_file *f, unsigned *ret_looked)
{
        unsigned looked = 0;
        pid_t *pids = NULL;
        size_t n = 0;
        int r;

        f->mapped = f->opened = false;
        pthread_mutex_lock(&c->lock);
        r = drain(c);
        if (r == 0) {
                for (size_t i = 0; i < c->cap; i++) {
                        const struct creds_entry *e = &c->tab[i];
                        bool match = false;
                        if (e->pid <= 0 || e->pid == skip)
                                continue;
                        for (size_t k = 0; k < n_who && !match; k++)
                                match = could_open(e, &who[k]);
                        if (!match)
                                continue;
                        pid_t *np = realloc(pids, (n + 1) * sizeof(*np));
                        if (!np) {
                                r = -ENOMEM;
                                break;
                        }
                        pids = np;
                        pids[n++] = e->pid;
                }
        }
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; r == 0 && i < n && !f->opened; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%d/fd", c->proc_root, (int)pids[i]);
                if (!owner_scan_fds(path, f, 1))
                        r = -EPERM;     /* its descriptors cannot be listed: cannot tell */
                looked++;
        }
        free(pids);
        if (ret_looked)
                *ret_looked = looked;
        return r;
}

size_t owner_creds_count(struct owner_creds *c)
{
        size_t n = 0;

        pthread_mutex_lock(&c->lock);
        (void)drain(c);
        for (size_t i = 0; i < c->cap; i++)
                n += c->tab[i].pid > 0;
        pthread_mutex_unlock(&c->lock);
        return n;
}

bool owner_creds_knows(struct owner_creds *c, pid_t pid)
{
        pthread_mutex_lock(&c->lock);
        (void)drain(c);
        bool known = find(c, pid) != NULL;
        pthread_mutex_unlock(&c->lock);
        return known;
}

void owner_creds_drain(struct owner_creds *c)
{
        pthread_mutex_lock(&c->lock);
        (void)drain(c);
        pthread_mutex_unlock(&c->lock);
}
