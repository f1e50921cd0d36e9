/* pools_registry: the bottom of the pool core, which calls no other pools
 * file: lookup, who holds a pool, the commit that saves a change before
 * showing it, the journal snapshot, views, and telling others (the
 * observer, the upkeep thread's kick).
 *
 * Everything above builds on these; the structs, the locks and their order
 * are described once, in pools_internal.h. */
#include <errno.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <sys/types.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pools_internal.h"
#include "util.h"

int64_t pools_now_unix(void) { return (int64_t)(now_real_ns() / NS_PER_SEC); }

const char *pools_mount_dir(const struct pools *p, uint64_t page_size)
{
        for (size_t i = 0; i < p->cfg.n_mounts; i++)
                if (p->cfg.mounts[i].page_size == page_size)
                        return p->mount_dirs[i];
        return NULL;
}

const char *pools_stock_dir(const struct pools *p, uint64_t page_size)
{
        for (size_t i = 0; i < p->cfg.n_mounts; i++)
                if (p->cfg.mounts[i].page_size == page_size)
                        return p->stock_dirs[i];
        return NULL;
}

int pools_path_of(const struct pools *p, uint64_t page_size, const char *name, char *buf, size_t size)
{
        const char *dir = name[0] == POOL_STOCK_PREFIX ? pools_stock_dir(p, page_size)
                                                       : pools_mount_dir(p, page_size);

        if (!dir)
                return -ENOENT;
        if ((size_t)snprintf(buf, size, "%s/%s", dir, name) >= size)
                return -ENAMETOOLONG;
        return 0;
}

uint64_t pools_rec_expires_boot_ns(const struct pool_record *r)
{
        if (r->state != POOL_READY || r->claimed || r->ttl_seconds == 0)
                return 0;
        /* ready_boot_ns is set on entering ready (0 only if CLOCK_BOOTTIME
         * read 0, i.e. never): expire at once rather than never. */
        return r->ready_boot_ns + r->ttl_seconds * NS_PER_SEC;
}

/* ---- the index by name (struct pool_index, pools_internal.h) ---- */

/* A tombstone: a slot that held a row, so probes go on past it. */
static char index_gone;
#define POOL_INDEX_GONE ((struct pool *)(void *)&index_gone)
/* Grow (or clear tombstones) before the table is more than half used:
 * linear probing stays at a probe or two per lookup up to there. */
#define POOL_INDEX_MIN_CAP 16

static uint64_t index_seed(void)
{
        static _Atomic uint64_t seed;
        uint64_t s = atomic_load_explicit(&seed, memory_order_relaxed);

        if (s == 0) {
                /* The FNV offset basis when there is no entropy: the table
                 * still works, only guessable. */
                uint64_t v = 0;
                if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v) || v == 0)
                        v = UINT64_C(0xcbf29ce484222325);
                uint64_t zero = 0;
                atomic_compare_exchange_strong(&seed, &zero, v);
                s = atomic_load_explicit(&seed, memory_order_relaxed);
        }
        return s;
}

uint64_t pool_index_hash(const char *name)
{
        uint64_t h = index_seed();

        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
                h ^= *c;
                h *= UINT64_C(0x100000001b3);
        }
        /* FNV's low bits mix poorly and the table uses the low bits. */
        h ^= h >> 29;
        h *= UINT64_C(0xbf58476d1ce4e5b9);
        h ^= h >> 32;
        return h;
}

struct pool *pool_index_find(const struct pool_index *ix, const char *name)
{
        if (!ix->cap)
                return NULL;
        size_t mask = ix->cap - 1;
        for (size_t i = pool_index_hash(name) & mask;; i = (i + 1) & mask) {
                struct pool *o = ix->slots[i];
                if (!o)
                        return NULL;
                if (o != POOL_INDEX_GONE && o->hold != POOL_REMOVING && strcmp(o->rec.name, name) == 0)
                        return o;
        }
}

static void index_put(struct pool **slots, size_t cap, struct pool *pool)
{
        size_t mask = cap - 1;
        size_t i = pool_index_hash(pool->rec.name) & mask;

        while (slots[i] && slots[i] != POOL_INDEX_GONE)
                i = (i + 1) & mask;
        slots[i] = pool;
}

/* Into the first free slot of POOL's run; the caller made sure there is
 * one. */
static void index_insert(struct pool_index *ix, struct pool *pool)
{
        size_t mask = ix->cap - 1;
        size_t i = pool_index_hash(pool->rec.name) & mask;

        while (ix->slots[i] && ix->slots[i] != POOL_INDEX_GONE)
                i = (i + 1) & mask;
        if (!ix->slots[i])
                ix->used++;
        ix->slots[i] = pool;
        ix->live++;
}

int pool_index_add(struct pool_index *ix, struct pool *pool)
{
        if ((ix->used + 1) * 2 > ix->cap) {
                /* At most a quarter full after the rehash, so at least a
                 * quarter of the table's adds or removals pass before the
                 * next one: amortised O(1). */
                size_t cap = POOL_INDEX_MIN_CAP;
                while ((ix->live + 1) * 4 > cap)
                        cap *= 2;
                struct pool **slots = calloc(cap, sizeof(*slots));
                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < ix->cap; i++)
                        if (ix->slots[i] && ix->slots[i] != POOL_INDEX_GONE)
                                index_put(slots, cap, ix->slots[i]);
                free(ix->slots);
                ix->slots = slots;
                ix->cap = cap;
                ix->used = ix->live;
        }
        index_insert(ix, pool);
        return 0;
}

void pool_index_remove(struct pool_index *ix, struct pool *pool)
{
        if (!ix->cap)
                return;
        size_t mask = ix->cap - 1;
        for (size_t i = pool_index_hash(pool->rec.name) & mask; ix->slots[i]; i = (i + 1) & mask)
                if (ix->slots[i] == pool) {
                        /* The next slot empty: nothing probes past this one. */
                        if (!ix->slots[(i + 1) & mask]) {
                                ix->slots[i] = NULL;
                                ix->used--;
                        } else {
                                ix->slots[i] = POOL_INDEX_GONE;
                        }
                        ix->live--;
                        return;
                }
}

void pool_index_free(struct pool_index *ix)
{
        free(ix->slots);
        *ix = (struct pool_index){0};
}

/* ---- rows ---- */

struct pool *pools_find(struct pools *p, const char *name)
{
        pools_assert_held(&p->reg.lock);
        return pool_index_find(&p->reg.by_name, name);
}

int pools_add(struct pools *p, struct pool *pool)
{
        pools_assert_held(&p->reg.lock);
        if (p->reg.n_pools == p->reg.cap_pools) {
                size_t cap = p->reg.cap_pools ? p->reg.cap_pools * 2 : 16;
                struct pool **n = realloc(p->reg.pools, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                p->reg.pools = n;
                p->reg.cap_pools = cap;
        }
        int r = pool_index_add(&p->reg.by_name, pool);
        if (r < 0)
                return r;
        pool->reg_at = p->reg.n_pools;
        p->reg.pools[p->reg.n_pools++] = pool;
        p->reg.n_stock_named += pool->rec.name[0] == POOL_STOCK_PREFIX;
        pool->owner = p;
        pools_mark_changed(pool);
        return 0;
}

void pools_mark_changed(struct pool *pool)
{
        struct pools *p = pool->owner;

        pools_assert_held(&p->reg.lock);
        p->reg.generation++;
        if (pool->save_due)
                return;
        if (p->reg.n_changed == p->reg.cap_changed) {
                size_t cap = p->reg.cap_changed ? p->reg.cap_changed * 2 : 16;
                struct pool **n = realloc(p->reg.changed_rows, cap * sizeof(*n));
                if (!n) {
                        p->reg.resync = true;   /* the next save looks at every row */
                        return;
                }
                p->reg.changed_rows = n;
                p->reg.cap_changed = cap;
        }
        p->reg.changed_rows[p->reg.n_changed++] = pool;
        pool->save_due = true;
}

void pools_drop(struct pools *p, struct pool *pool)
{
        pools_assert_held(&p->reg.lock);
        size_t i = pool->reg_at;

        if (i >= p->reg.n_pools || p->reg.pools[i] != pool)
                return;         /* not in the registry */
        pool_index_remove(&p->reg.by_name, pool);
        p->reg.generation++;
        p->reg.n_stock_named -= pool->rec.name[0] == POOL_STOCK_PREFIX;
        p->reg.pools[i] = p->reg.pools[--p->reg.n_pools];
        p->reg.pools[i]->reg_at = i;
        if (pool->save_due) {
                for (size_t k = 0; k < p->reg.n_changed; k++)
                        if (p->reg.changed_rows[k] == pool) {
                                p->reg.changed_rows[k] = p->reg.changed_rows[--p->reg.n_changed];
                                break;
                        }
                pool->save_due = false;
        }
        if (!pool->in_journal)
                return;
        /* The next save drops its row; without room for the name, that
         * save writes the whole state instead. */
        if (p->reg.n_gone == p->reg.cap_gone) {
                size_t cap = p->reg.cap_gone ? p->reg.cap_gone * 2 : 8;
                char (*g)[POOL_NAME_MAX + 1] = realloc(p->reg.gone, cap * sizeof(*g));
                if (!g) {
                        p->reg.resync = true;
                        return;
                }
                p->reg.gone = g;
                p->reg.cap_gone = cap;
        }
        memcpy(p->reg.gone[p->reg.n_gone++], pool->durable.name, sizeof(p->reg.gone[0]));
}

void pools_apply_rec(struct pools *p, struct pool *pool, const struct pool_record *next)
{
        pools_assert_held(&p->reg.lock);
        bool renamed = strcmp(pool->rec.name, next->name) != 0;
        bool indexed = pool->reg_at < p->reg.n_pools && p->reg.pools[pool->reg_at] == pool;

        if (renamed && indexed) {
                pool_index_remove(&p->reg.by_name, pool);
                p->reg.n_stock_named -= pool->rec.name[0] == POOL_STOCK_PREFIX;
                p->reg.n_stock_named += next->name[0] == POOL_STOCK_PREFIX;
        }
        pool->rec = *next;
        if (indexed)
                pools_mark_changed(pool);
        /* No allocation, so no failure: the entry just removed left a free
         * slot; a table this leaves over half used grows at the next add. */
        if (renamed && indexed)
                index_insert(&p->reg.by_name, pool);
}

void pools_set_hold(struct pool *pool, enum pool_hold to)
{
        pools_assert_held(&pool->owner->reg.lock);
        if (!pool_hold_allowed(pool->hold, to)) {
                /* Two threads think they own the pool: going on would
                 * corrupt the registry or unlink a file twice. */
                log_err("pools: pool %s: hold %s -> %s is not allowed", pool->rec.name,
                        pool_hold_name(pool->hold), pool_hold_name(to));
                abort();
        }
        /* A row on its way out is not saved; back, it is again. */
        bool out_before = pool->hold == POOL_REMOVING || pool->hold == POOL_RELEASING;
        bool out_after = to == POOL_REMOVING || to == POOL_RELEASING;
        pool->hold = to;
        if (out_before != out_after && pool->reg_at < pool->owner->reg.n_pools &&
            pool->owner->reg.pools[pool->reg_at] == pool)
                pools_mark_changed(pool);
}

const struct pool_record *pools_latest(const struct pool *pool)
{
        pools_assert_held(&pool->owner->reg.lock);
        return pool->pending ? pool->pending : &pool->rec;
}

void pools_record_from_req(struct pool_record *rec, const struct pool_req *req)
{
        snprintf(rec->name, sizeof(rec->name), "%s", req->name);
        snprintf(rec->label, sizeof(rec->label), "%s", req->label);
        rec->file_owned = req->file_owned;
        rec->file_uid = req->file_uid;
        rec->file_gid = req->file_gid;
        rec->node = req->node;
        rec->page_size = req->page_size;
        rec->size_bytes = req->size_bytes;
        rec->threads = req->threads;
        rec->ttl_seconds = req->ttl_seconds;
        rec->created_at = rec->started_at = pools_now_unix();
}

void pools_fill_view(struct pool *pool, struct pool_view *v)
{
        pools_assert_held(&pool->owner->reg.lock);
        const struct pool_record *r = &pool->rec;
        struct job_status st;
        uint64_t done = r->bytes_done;
        bool have = false;

        memset(v, 0, sizeof(*v));
        snprintf(v->name, sizeof(v->name), "%s", r->name);
        v->node = r->node;
        v->page_size = r->page_size;
        v->size_bytes = r->size_bytes;
        v->state = r->state;
        v->claimed = r->claimed;
        v->ttl_seconds = r->ttl_seconds;
        v->created_at = r->created_at;
        v->started_at = r->started_at;
        v->finished_at = r->finished_at;
        snprintf(v->error_slug, sizeof(v->error_slug), "%s", r->error_slug);
        snprintf(v->error_detail, sizeof(v->error_detail), "%s", r->error_detail);
        snprintf(v->path, sizeof(v->path), "%s", pool->path);
        if (pool->job) {
                job_get_status(pool->job, &st);
                have = true;
        } else if (pool->have_last) {
                st = pool->last;
                have = true;
        }
        if (r->state == POOL_READY)
                done = r->size_bytes;
        else if (r->state == POOL_WARMING && pool->job)
                done = pool->job_offset + st.bytes_done;
        else if (r->state == POOL_WARMING && have)
                done = st.bytes_done;
        v->bytes_done = done < r->size_bytes ? done : r->size_bytes;
        if (have) {
                uint64_t end = st.finished_ns ? st.finished_ns : now_mono_ns();
                v->elapsed_seconds = end > st.started_ns ? (double)(end - st.started_ns) / 1e9 : 0;
                v->threads = st.threads;
                v->placement_verified = st.verified;
                v->pages_off_node = st.pages_off_node;
        } else if (r->started_at) {
                /* Restored from the journal: whole seconds are all we know. */
                int64_t end = r->finished_at ? r->finished_at : pools_now_unix();
                v->elapsed_seconds = end > r->started_at ? (double)(end - r->started_at) : 0;
        }
        if (v->elapsed_seconds > 0 && r->state != POOL_FAILED)
                v->rate_bytes_per_second = (double)v->bytes_done / v->elapsed_seconds;
        /* Shown in wall time: now plus what is left on the boot clock, so
         * a wall clock jump moves the shown time, never the expiry. */
        uint64_t exp = pools_rec_expires_boot_ns(r);
        if (exp) {
                uint64_t boot = now_boot_ns(), real = now_real_ns();
                uint64_t left = exp > boot ? exp - boot : 0;
                v->expires_at = real ? (int64_t)((real + left) / NS_PER_SEC) : 0;
        }
        v->owner_pid = r->owner_pid;
        v->unmapped_since = pool->unmapped_since;
        v->from_stock = r->from_stock;
        snprintf(v->label, sizeof(v->label), "%s", r->label);
        v->file_owned = r->file_owned;
        v->file_uid = r->file_uid;
        v->file_gid = r->file_gid;
}

/* What the journal should hold for row O now: its latest record, or a
 * copy of it in *BUF with a running job's progress; NULL when it should
 * hold none (a row on its way out).  No copy for the rest: a save looks
 * at every row.  reg.lock held. */
static const struct pool_record *journal_row(struct pool *o, struct pool_record *buf)
{
        if (o->hold == POOL_REMOVING || o->hold == POOL_RELEASING)
                return NULL;
        const struct pool_record *r = pools_latest(o);
        if ((r->state == POOL_WARMING || r->state == POOL_STOCK_WARMING) && o->job) {
                struct job_status st;
                *buf = *r;
                job_get_status(o->job, &st);
                buf->bytes_done = st.bytes_done;
                return buf;
        }
        return r;
}

/* The journal's head (boot id, reservations, stock targets, policies),
 * copied into J (which owns the copies).  reg.lock held. */
static int copy_head(struct pools *p, struct journal *j)
{
        snprintf(j->boot_id, sizeof(j->boot_id), "%s", p->boot_id);
        j->reservations = calloc(p->admit.n_resv ? p->admit.n_resv : 1, sizeof(*j->reservations));
        if (!j->reservations)
                return -ENOMEM;
        if (p->admit.n_resv)
                memcpy(j->reservations, p->admit.resv, p->admit.n_resv * sizeof(*p->admit.resv));
        j->n_reservations = p->admit.n_resv;
        if (p->stock.n_targets) {
                j->stock_targets = calloc(p->stock.n_targets, sizeof(*j->stock_targets));
                if (!j->stock_targets)
                        return -ENOMEM;
                memcpy(j->stock_targets, p->stock.targets, p->stock.n_targets * sizeof(*p->stock.targets));
                j->n_stock_targets = p->stock.n_targets;
        }
        if (p->elastic.n_rows) {
                j->elastic = calloc(p->elastic.n_rows, sizeof(*j->elastic));
                if (!j->elastic)
                        return -ENOMEM;
                for (size_t i = 0; i < p->elastic.n_rows; i++)
                        j->elastic[i] = p->elastic.rows[i].shown.policy;
                j->n_elastic = p->elastic.n_rows;
        }
        return 0;
}

#ifdef HPW_SAVE_CHECKS
/* Debug builds: a row the save did not look at is written in the journal
 * as it is now (a change that did not call pools_mark_changed would be
 * lost at the next start). */
static void check_unchanged(struct pools *p)
{
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                struct pool_record buf;
                const struct pool_record *row = journal_row(o, &buf);

                if (o->save_due)
                        continue;
                if ((row != NULL) != o->in_journal || (row && !record_pool_equal(&o->durable, row))) {
                        log_err("pools: pool %s changed without pools_mark_changed", o->rec.name);
                        abort();
                }
        }
}
#else
static void check_unchanged(struct pools *p) { (void)p; }
#endif

/* collect_changes ran out of memory at changed row AT, having kept KEEP
 * rows before it: that row and those after it stay on the list, once each
 * (the save fails, and the next one writes everything).  -ENOMEM. */
static int keep_unseen(struct pools *p, size_t at, size_t keep)
{
        struct pool *o = p->reg.changed_rows[at];

        if (!o->save_due) {
                o->save_due = true;
                p->reg.changed_rows[keep++] = o;
        }
        for (size_t k = at + 1; k < p->reg.n_changed; k++)
                p->reg.changed_rows[keep++] = p->reg.changed_rows[k];
        p->reg.n_changed = keep;
        return -ENOMEM;
}

/* Changed row O, seen by a save that keeps KEEP rows on the list so far:
 * a row whose job runs stays on it (its progress is saved at every save
 * while it runs), any other leaves it.  Returns the new KEEP.  reg.lock
 * held. */
static size_t keep_if_running(struct pools *p, struct pool *o, size_t keep)
{
        if (o->job)
                p->reg.changed_rows[keep++] = o;
        else
                o->save_due = false;
        return keep;
}

/* The changes since the last save: rows new or changed into PUT, names
 * the journal holds that are gone or renamed into DROP; each row's
 * `durable` becomes what the record will hold.  One walk of the rows, a
 * comparison each, nothing copied but the changes.  reg.lock and
 * save.lock held. */
static int collect_changes(struct pools *p, struct pool_record **put, size_t *n_put,
                           char (**drop)[POOL_NAME_MAX + 1], size_t *n_drop)
{
        size_t cap_put = 0, cap_drop = p->reg.n_gone + 4;
        struct pool_record buf;

        *put = NULL;
        *n_put = 0;
        *drop = malloc(cap_drop * sizeof(**drop));
        if (!*drop)
                return -ENOMEM;
        if (p->reg.n_gone)
                memcpy(*drop, p->reg.gone, p->reg.n_gone * sizeof(**drop));
        *n_drop = p->reg.n_gone;
        size_t keep = 0;
        for (size_t i = 0; i < p->reg.n_changed; i++) {
                struct pool *o = p->reg.changed_rows[i];
                keep = keep_if_running(p, o, keep);
                const struct pool_record *row = journal_row(o, &buf);
                bool want = row != NULL;
                bool renamed = o->in_journal && want && strcmp(o->durable.name, row->name) != 0;

                if (o->in_journal && (!want || renamed)) {
                        if (*n_drop == cap_drop) {
                                cap_drop *= 2;
                                void *n = realloc(*drop, cap_drop * sizeof(**drop));
                                if (!n)
                                        return keep_unseen(p, i, keep);
                                *drop = n;
                        }
                        memcpy((*drop)[(*n_drop)++], o->durable.name, sizeof(**drop));
                        o->in_journal = false;
                }
                if (!want || (o->in_journal && record_pool_equal(&o->durable, row)))
                        continue;
                if (*n_put == cap_put) {
                        cap_put = cap_put ? cap_put * 2 : 4;
                        void *n = realloc(*put, cap_put * sizeof(**put));
                        if (!n)
                                return keep_unseen(p, i, keep);
                        *put = n;
                }
                (*put)[(*n_put)++] = *row;
                o->durable = *row;
                o->in_journal = true;
        }
        p->reg.n_changed = keep;
        p->reg.n_gone = 0;
        check_unchanged(p);
        return 0;
}

/* The whole state into J, each row's `durable` set to what J holds.
 * reg.lock and save.lock held. */
static int collect_all(struct pools *p, struct journal *j)
{
        j->pools = calloc(p->reg.n_pools ? p->reg.n_pools : 1, sizeof(*j->pools));
        if (!j->pools)
                return -ENOMEM;
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                struct pool_record buf;
                const struct pool_record *row = journal_row(o, &buf);
                o->in_journal = row != NULL;
                if (row)
                        o->durable = j->pools[j->n_pools++] = *row;
        }
        size_t keep = 0;
        for (size_t i = 0; i < p->reg.n_changed; i++)
                keep = keep_if_running(p, p->reg.changed_rows[i], keep);
        p->reg.n_changed = keep;
        p->reg.n_gone = 0;
        return 0;
}

int pools_save(struct pools *p)
{
        struct journal j = {0};
        struct pool_record *put = NULL;
        char (*drop)[POOL_NAME_MAX + 1] = NULL;
        size_t n_put = 0, n_drop = 0;
        bool whole = false, tell;
        int r;

        /* By hand: save.lock is dropped before the observer is told. */
        pools_lock(&p->save.lock);
        /* By hand: reg.lock is dropped before the journal is written. */
        pools_lock(&p->reg.lock);
        r = copy_head(p, &j);
        if (r == 0 && !p->reg.resync && p->save.jsync.base)
                r = collect_changes(p, &put, &n_put, &drop, &n_drop);
        else if (r == 0)
                whole = true;
        pools_unlock(&p->reg.lock);
        if (r == 0 && !whole) {
                r = journal_append_rows(&j, put, n_put, (const char(*)[JOURNAL_NAME_MAX + 1])drop, n_drop,
                                        &p->save.jsync);
                if (r == -EAGAIN) {
                        /* Compaction: the whole state, as the rows are now. */
                        whole = true;
                        r = 0;
                }
        }
        if (r == 0 && whole) {
                /* By hand: reg.lock is dropped before the journal is written. */
                pools_lock(&p->reg.lock);
                r = collect_all(p, &j);
                pools_unlock(&p->reg.lock);
                unsigned long full = p->save.jsync.full_saves;
                if (r == 0)
                        r = journal_save_sync(p->state_dir, &j, &p->save.jsync);
                if (r == 0 && p->save.jsync.full_saves == full)
                        whole = false;  /* nothing changed, or appended */
        }
        /* By hand: reg.lock is dropped before the observer is told. */
        pools_lock(&p->reg.lock);
        if (r == 0) {
                p->reg.resync = false;
                if (whole)
                        p->reg.stats.journal_saves_full++;
                else
                        p->reg.stats.journal_saves_light++;
        } else {
                /* What each row's `durable` says may not be on disk: the
                 * next save writes everything. */
                p->reg.resync = true;
        }
        /* Every change is saved (or shown and told, as warming -> ready):
         * a generation that moved since the last tell is told here, so a
         * change of the stock that names no pool (a target set, a row
         * dropped) wakes the stock's long-polls too. */
        tell = p->reg.generation != p->reg.generation_told;
        p->reg.generation_told = p->reg.generation;
        pools_unlock(&p->reg.lock);
        pools_unlock(&p->save.lock);
        if (tell)
                pools_notify(p, NULL);
        free(put);
        free(drop);
        free(j.reservations);
        free(j.pools);
        free(j.stock_targets);
        free(j.elastic);
        return r;
}

int pools_save_record(struct pools *p, struct pool *pool, const struct pool_record *next, bool apply_on_failure)
{
        int r;

        /* By hand: reg.lock is dropped before the save, which takes it. */
        pools_lock(&p->reg.lock);
        pool->pending = next;
        pools_mark_changed(pool);
        pools_unlock(&p->reg.lock);
        r = pools_save(p);
        POOLS_LOCKED(&p->reg.lock);
        if (r == 0 || apply_on_failure)
                pools_apply_rec(p, pool, next);
        pool->pending = NULL;
        pthread_cond_broadcast(&p->reg.changed);
        return r;
}

int pools_commit(struct pools *p, struct pool *pool, const struct pool_record *next)
{
        int r = pools_save_record(p, pool, next, true);

        pools_notify(p, next->name);
        return r;
}

int pools_not_found(const char *name, struct problem *err)
{
        problem_raise(err, PROBLEM_POOL_NOT_FOUND, "there is no pool \"%s\"", name);
        return -ENOENT;
}

struct pool *pools_grab(struct pools *p, const char *name)
{
        pools_assert_held(&p->reg.lock);
        for (;;) {
                struct pool *pool = pools_find(p, name);
                if (!pool || pool->hold == POOL_CREATING || pools_is_stock(pool))
                        return NULL;
                if (pool->hold == POOL_FREE) {
                        pools_set_hold(pool, POOL_BUSY);
                        return pool;
                }
                pools_cond_wait(&p->reg.changed, &p->reg.lock);
        }
}

void pools_release(struct pools *p, struct pool *pool)
{
        bool due;

        /* By hand: reg.lock is dropped before upkeep is kicked. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_FREE);
        /* Marked for release while held (its owner exited during a claim):
         * upkeep skipped it, so tell it the pool is free now. */
        due = pool->release_due != RELEASE_NONE;
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        if (due)
                pools_kick(p);
}

void pools_count_release(struct pools *p, enum pool_release why)
{
        pools_assert_held(&p->reg.lock);
        switch (why) {
        case RELEASE_DELETE: p->reg.stats.released_delete++; break;
        case RELEASE_TTL: p->reg.stats.pools_expired++; break;
        case RELEASE_OWNER_EXITED: p->reg.stats.released_owner_exited++; break;
        case RELEASE_UNMAPPED: p->reg.stats.released_unmapped++; break;
        case RELEASE_NONE: break;
        }
}

void pools_set_observer(struct pools *p, void (*fn)(void *arg, const char *name), void *arg)
{
        POOLS_LOCKED(&p->obs.lock);
        p->obs.fn = fn;
        p->obs.arg = fn ? arg : NULL;
}

void pools_notify(struct pools *p, const char *name)
{
        POOLS_LOCKED(&p->obs.lock);
        if (p->obs.fn)
                p->obs.fn(p->obs.arg, name);
}

uint64_t pools_generation(struct pools *p)
{
        POOLS_LOCKED(&p->reg.lock);
        return p->reg.generation;
}

void pools_kick(struct pools *p)
{
        POOLS_LOCKED(&p->wake.lock);
        p->wake.kicked = true;
        pthread_cond_signal(&p->wake.kick);
}

bool pools_is_stock(const struct pool *pool)
{
        pools_assert_held(&pool->owner->reg.lock);
        return pool_state_is_stock(pools_latest(pool)->state);
}

