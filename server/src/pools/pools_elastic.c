/* pools_elastic: the table of elastic policies, admission's hook into it,
 * the record of what each policy did, and whether growing gigantic pages at
 * runtime can be relied on.
 *
 * Layer 1, so that admission (layer 2) can ask it whether a pool may grow
 * without calling up: the policy's decisions are elastic.c's pure planner,
 * and the moves that write nr_hugepages are admission's own growth and
 * pools_policy.c's give-back.  The hook only says whether the demand fits
 * under max; the growth itself is the one "reserve": true makes (read back,
 * rolled back on failure), so an elastic pool and an explicit reserve
 * cannot differ in how they grow. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pools_internal.h"
#include "units.h"
#include "util.h"

struct pools_elastic_row *pools_elastic_find(struct pools *p, int node, uint64_t page_size)
{
        pools_assert_held(&p->reg.lock);
        for (size_t i = 0; i < p->elastic.n_rows; i++) {
                const struct elastic_policy_record *pol = &p->elastic.rows[i].shown.policy;
                if (pol->node == node && pol->page_size == page_size)
                        return &p->elastic.rows[i];
        }
        return NULL;
}

/* What ROW's policy did last: ACTION on PAGES pages, now, for WHY.
 * reg.lock held. */
static void note_last(struct pools *p, struct pools_elastic_row *row, enum elastic_action action, uint64_t pages,
                      const char *why)
{
        pools_assert_held(&p->reg.lock);
        row->shown.last = action;
        row->shown.last_pages = pages;
        row->shown.last_at = pools_now_unix();
        snprintf(row->shown.last_why, sizeof(row->shown.last_why), "%s", why);
}

int pools_elastic_admit_check(struct pools *p, int node, uint64_t page_size, const struct pools_avail *a,
                              uint64_t pages, bool *ret_elastic, struct problem *err)
{
        pools_assert_held(&p->admit.lock);
        struct elastic_counts c = { a->total, a->free, a->needed, a->foreign };
        struct elastic_decision d;
        struct elastic_policy_record pol;
        struct pools_elastic_row *row;

        /* By hand: reg.lock is dropped before the refusal is written. */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, node, page_size);
        if (!row) {
                pools_unlock(&p->reg.lock);
                *ret_elastic = false;
                return 0;
        }
        pol = row->shown.policy;
        elastic_plan(&pol, &c, pages, &row->idle, now_mono_ns(), &d);
        if (d.action == ELASTIC_REFUSE) {
                char why[sizeof(row->shown.last_why)];
                snprintf(why, sizeof(why), "a demand of %" PRIu64 " pages did not fit under max %" PRIu64, pages,
                         pol.max);
                note_last(p, row, ELASTIC_REFUSE, pages, why);
        }
        pools_unlock(&p->reg.lock);
        *ret_elastic = true;
        if (d.action != ELASTIC_REFUSE)
                return 0;
        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                      "node %d needs %" PRIu64 " available pages of %" PRIu64 " bytes; it has %" PRIu64 " (%" PRIu64
                      " free, %" PRIu64 " still to be taken by other warming pools, %" PRIu64 " reserved by mappings "
                      "not yet faulted), and its elastic policy's max of %" PRIu64 " pages lets the pool of %" PRIu64
                      " grow by %" PRIu64 " only (nothing written)",
                      node, pages, page_size, a->available, a->free, a->needed, a->foreign, pol.max, a->total, d.pages);
        return -ENOMEM;
}

void pools_elastic_note(struct pools *p, int node, uint64_t page_size, enum elastic_action action, uint64_t pages,
                        const char *why)
{
        struct pools_elastic_row *row;

        if (pages == 0)
                return;
        /* By hand: reg.lock is dropped before the log line. */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, node, page_size);
        if (row) {
                if (action == ELASTIC_GROW)
                        row->shown.grown_total += pages;
                else if (action == ELASTIC_RETURN)
                        row->shown.returned_total += pages;
                note_last(p, row, action, pages, why);
                /* A move starts a new idle period: no give-back right
                 * after a growth, no second one before idle_seconds.  A
                 * growth that failed moved nothing. */
                if (action != ELASTIC_REFUSE)
                        row->idle = (struct elastic_idle){0};
        }
        pools_unlock(&p->reg.lock);
        if (row && action == ELASTIC_REFUSE)
                /* Best-effort gigantic pages end here when the node's
                 * memory has no free gigabyte left: worth a line. */
                log_notice("pools: node %d %" PRIu64 "-byte pool could not grow by %" PRIu64 " pages: %s", node,
                           page_size, pages, why);
        else if (row)
                log_info("pools: node %d %" PRIu64 "-byte pool %s %" PRIu64 " pages: %s", node, page_size,
                         action == ELASTIC_GROW ? "grew by" : "gave back", pages, why);
}

/* Read PROC_ROOT/NAME into BUF (NUL-terminated); -errno. */
static int read_proc(const struct pools *p, const char *name, char *buf, size_t size)
{
        char path[PATH_MAX];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "%s/%s", p->proc_root, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return 0;
}

/* The value of meminfo line KEY ("CmaTotal:") in bytes; 0 when absent. */
static uint64_t meminfo_bytes(const char *text, const char *key)
{
        const char *s = strstr(text, key);
        if (!s)
                return 0;
        unsigned long long kb = strtoull(s + strlen(key), NULL, 10);
        return kb > UINT64_MAX / KIB ? UINT64_MAX : (uint64_t)kb * KIB;
}

enum elastic_growth pools_elastic_growth(struct pools *p, int node, uint64_t page_size, uint64_t *ret_cma_total,
                                         uint64_t *ret_cma_free)
{
        char meminfo[8192], cmdline[4096];
        uint64_t total = 0, free_b = 0;
        bool on_node = false;

        if (read_proc(p, "meminfo", meminfo, sizeof(meminfo)) == 0) {
                total = meminfo_bytes(meminfo, "CmaTotal:");
                free_b = meminfo_bytes(meminfo, "CmaFree:");
        }
        if (read_proc(p, "cmdline", cmdline, sizeof(cmdline)) == 0)
                on_node = elastic_cma_on_node(cmdline, node);
        if (ret_cma_total)
                *ret_cma_total = total;
        if (ret_cma_free)
                *ret_cma_free = free_b;
        return elastic_runtime_growth(page_size, on_node, total);
}
