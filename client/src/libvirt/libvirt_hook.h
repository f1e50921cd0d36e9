/* libvirt_hook: `hpwarm libvirt-hook DOMAIN OP SUBOP [EXTRA]`, the libvirt
 * QEMU hook's logic (deploy/libvirt/hpwarm-libvirt-hook is the few lines of
 * shell libvirt runs; deploy/libvirt/README.md and docs/LIBVIRT.md say what
 * it does for a domain).  Shared by its files, seen by nothing else:
 *   libvirt_main.c    one run: settings, the XML, which path (calls the three below)
 *   libvirt_hook.c    notes, messages, what every path shares (called by all)
 *   libvirt_argv.c    one pool through <qemu:commandline>
 *   libvirt_cells.c   one pool per NUMA cell, linked as libvirt's memory files
 *   libvirt_policy.c  HPWARM_LIBVIRT_POLICY=hugepages: hugepage domains as written
 *   libvirt_domain.c  the domain XML (libxml2)
 *   libvirt_daemon.c  the daemon seam's real side: libhpwarm
 * Every request to hpwarmd goes through one seam (struct lv_daemon), so the
 * rules run in tests against a fake (tests/libvirt/hook_fake_cli.c).
 *
 * Control flow mirrors a shell script that exits: a step returns LV_GO_ON
 * to continue or the process's exit code (0 or 1) to stop, and TRY passes
 * a stop up. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libvirt_domain.h"

#define LV_GO_ON (-1)
#define TRY(x)                                     \
        do {                                       \
                int try_rc_ = (x);                 \
                if (try_rc_ != LV_GO_ON)           \
                        return try_rc_;            \
        } while (0)

#define LV_PATH_MAX 4096
#define LV_OUT_MAX 4096
#define LV_NOTE_MAX (LV_PATH_MAX + 256)   /* NOTES/POOL.incoming */

/* One request to hpwarmd, named as the CLI command that would ask it. */
enum lv_call_kind { LV_WARM, LV_STATUS, LV_CLAIM, LV_RELEASE };

struct lv_call {
        enum lv_call_kind kind;
        const char *pool;
        unsigned timeout_s;
        /* warm */
        const char *node;          /* digits, checked */
        uint64_t size;
        const char *page_size;     /* as written: "2M", "2048kB" */
        bool ttl;                  /* with --ttl TTL_S */
        unsigned long ttl_s;
        const char *label;
        bool file_owned;
        unsigned long uid, gid;
        /* claim: 0 = no pid */
        long pid;
        /* release */
        bool ignore_missing;
};

/* What hpwarmd answered: RC as the CLI's exit code would be (0 ok, 1 failed
 * or no such pool, 2 usage, 3 unreachable, 4 timeout, 5 conflict, 6
 * credentials; hpwarm(1)), OUT the message a failure printed, and for
 * status the pool's path, claimed and label. */
struct lv_answer {
        int rc;
        char out[LV_OUT_MAX];
        char path[LV_PATH_MAX];
        bool claimed;
        char label[256];
};

struct lv_settings;
struct lv_daemon {
        /* Ask C of the daemon the settings S name; fill *A (zeroed by the
         * caller). */
        void (*call)(void *ud, const struct lv_settings *s, const struct lv_call *c, struct lv_answer *a);
        void *ud;
};

/* The words of C as an hpwarm command line, without "hpwarm": ARGV gets at
 * most LV_ARGV_MAX pointers into BUF (BUFLEN bytes), NULL-terminated.
 * The hook's calls log and the test double both speak these words. */
#define LV_ARGV_MAX 32
void lv_call_argv(const struct lv_call *c, char *buf, size_t buflen, char **argv);

/* The hook run: DOMAIN OP SUBOP [EXTRA], the domain XML on stdin.  Returns
 * the exit code libvirt sees. */
int lv_hook_main(int argc, char **argv, const struct lv_daemon *daemon);

/* ---- shared by the hook's files ---- */

struct lv_settings {
        const char *url, *token_file, *page_size, *rundir, *statedir, *mbd, *policy, *required, *qemu_conf,
                *mounts, *log, *calls;
        unsigned long timeout, ttl;
};

struct lv_hook {
        const char *dom, *op, *sub;
        const struct lv_daemon *daemon;
        struct lv_settings s;
        struct lv_domain *d;
        char label[128];            /* libvirt:UUID */
        char notes[LV_PATH_MAX];    /* STATEDIR/UUID */
        bool owner;                 /* static numeric DAC label */
        unsigned long uid, gid;

        /* The pool at hand (the domain's, or a cell's) and its notes. */
        char pool[128];
        const char *node, *size_attr, *required, *cell;
        uint64_t size_bytes;
        char cold_note[LV_NOTE_MAX], own_note[LV_NOTE_MAX], in_note[LV_NOTE_MAX];

        /* policy mode: the note of what prepare took, "" when none */
        char pnote[LV_NOTE_MAX];
        bool preq;                  /* HPWARM_LIBVIRT_REQUIRED=yes */
};

/* Print "hpwarm hook: domain 'DOM': MSG" on stderr. */
void lv_say(const struct lv_hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* lv_say, and return 1 (the exit code of a refusal). */
int lv_fail(const struct lv_hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ask hpwarmd (noted in HPWARM_LIBVIRT_CALLS first when set). */
void lv_ask(const struct lv_hook *h, const struct lv_call *c, struct lv_answer *a);
/* OUT with its line breaks as spaces, for one line of message. */
const char *lv_flat(char *out);

/* libvirt's scaled integer NUM UNIT in bytes: 0 or -1 (nonsense, or 2^63 and over). */
int lv_to_bytes(const char *num, const char *unit, uint64_t *ret);
/* POOL is a name hpwarmd accepts: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
bool lv_pool_name_ok(const char *pool);
bool lv_digits(const char *s);

/* Set the pool at hand and its note paths. */
void lv_set_pool(struct lv_hook *h, const char *pool);
/* Check the pool at hand's name, required and node. */
int lv_check_attrs(struct lv_hook *h);
/* The pool's size: SIZE_ATTR or MEM; it must equal MEM (WHAT names it). */
int lv_pool_size(struct lv_hook *h, uint64_t mem, const char *what);
/* The call that warms the pool at hand on NODE with SIZE and PAGE_SIZE. */
struct lv_call lv_warm_call(const struct lv_hook *h, const char *node, uint64_t size, const char *page_size);
/* Why a warm failed (RC, OUT) for virsh start's error, into WHY. */
void lv_warm_why(const struct lv_hook *h, const char *node, int rc, const char *out, char *why, size_t len);
/* ours: hpwarmd holds the pool with this domain's label, claimed by nobody. */
bool lv_ours(const struct lv_hook *h);
/* Release the pool at hand only when it is this domain's own; drop OWN_NOTE. */
void lv_give_back(const struct lv_hook *h);
/* After a good warm: refuse a claimed pool, note the pool as ours. */
int lv_took(struct lv_hook *h);
/* started / release of the pool at hand; migrate begin's note. */
int lv_started(struct lv_hook *h);
int lv_release(struct lv_hook *h);
int lv_incoming(struct lv_hook *h);
bool lv_exists(const char *path);
/* Write LINE (may be "") as the file PATH (mode 0666 & ~umask MASK); 0 or -1. */
int lv_write_file(const char *path, const char *text, unsigned mask);
/* mkdir -p of the notes directory. */
int lv_mkdir_notes(const struct lv_hook *h);

/* One line where the host keeps the policy's notes (HPWARM_LIBVIRT_LOG,
 * else syslog), and on stderr (libvirt_policy.c). */
void lv_note(const struct lv_hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* status of the pool at hand (--timeout 10). */
void lv_status(const struct lv_hook *h, struct lv_answer *a);
/* "DEV:INO" of PATH (following links), "" when it cannot be stat'ed. */
void lv_dev_ino(const char *path, char *buf, size_t len);

/* libvirt_argv.c: one pool through <qemu:commandline>; its checks, then the operation. */
int lv_argv_main(struct lv_hook *h);
/* libvirt_cells.c */
int lv_cells_main(struct lv_hook *h);
/* libvirt_policy.c */
int lv_policy_main(struct lv_hook *h);
