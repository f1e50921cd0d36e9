/* journal_codec: the journal's documents as JSON text — the snapshot
 * (journal_parse, journal_format), and the arrays of rows, reservations,
 * stock targets and policies that a snapshot and a log record both hold —
 * and the checks across rows (unique names and keys).  Each record inside
 * them is written and read by record.c, the same encoder the handlers use;
 * this file knows only how the journal gathers them (journal_log.c's
 * opening comment has the whole layout).  No files here: the
 * change log (journal_log.c) and the state directory (journal_files.c) are
 * above and beside it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "journal_internal.h"
#include "json.h"
#include "record.h"
#include "util.h"

void journal_free(struct journal *j)
{
        if (!j)
                return;
        free(j->reservations);
        free(j->pools);
        free(j->stock_targets);
        free(j->elastic);
        free(j);
}

/* Copy string member KEY into BUF[SIZE]; too long is -EINVAL. */
int journal_get_strbuf(const struct json *o, const char *key, char *buf, size_t size)
{
        const char *s;
        size_t n;

        if (json_get_str(o, key, &s) < 0)
                return -EINVAL;
        n = strlen(s);
        if (n >= size)
                return -EINVAL;
        memcpy(buf, s, n + 1);
        return 0;
}

static int cmp_pool_names(const void *a, const void *b)
{
        return strcmp(((const struct pool_record *)a)->name,
                      ((const struct pool_record *)b)->name);
}

static int cmp_reservations(const void *a, const void *b)
{
        const struct reservation_record *x = a, *y = b;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        if (x->page_size != y->page_size)
                return x->page_size < y->page_size ? -1 : 1;
        return 0;
}

/* Uniqueness checks on sorted copies, so the journal keeps its order. */
int journal_check_unique(const struct journal *j)
{
        _cleanup_free_ struct pool_record *pools = NULL;
        _cleanup_free_ struct reservation_record *res = NULL;

        if (j->n_pools > 1) {
                pools = malloc(j->n_pools * sizeof(*pools));
                if (!pools)
                        return -ENOMEM;
                memcpy(pools, j->pools, j->n_pools * sizeof(*pools));
                qsort(pools, j->n_pools, sizeof(*pools), cmp_pool_names);
                for (size_t i = 1; i < j->n_pools; i++)
                        if (cmp_pool_names(&pools[i - 1], &pools[i]) == 0)
                                return -EINVAL;
        }
        for (size_t i = 0; i < j->n_stock_targets; i++)
                for (size_t k = i + 1; k < j->n_stock_targets; k++) {
                        const struct stock_target_record *a = &j->stock_targets[i], *b = &j->stock_targets[k];
                        if (a->node == b->node && a->page_size == b->page_size && a->size_bytes == b->size_bytes)
                                return -EINVAL;
                }
        if (j->n_reservations > 1) {
                res = malloc(j->n_reservations * sizeof(*res));
                if (!res)
                        return -ENOMEM;
                memcpy(res, j->reservations, j->n_reservations * sizeof(*res));
                qsort(res, j->n_reservations, sizeof(*res), cmp_reservations);
                for (size_t i = 1; i < j->n_reservations; i++)
                        if (cmp_reservations(&res[i - 1], &res[i]) == 0)
                                return -EINVAL;
        }
        return 0;
}

/* Adapters from record.c's typed decoders to parse_array's one shape. */
static int one_reservation(const struct json *o, void *at)
{
        return record_parse_reservation(o, at);
}

static int one_pool(const struct json *o, void *at)
{
        return record_parse_pool(o, at);
}

static int one_stock_target(const struct json *o, void *at)
{
        return record_parse_stock_target(o, at);
}

static int one_policy(const struct json *o, void *at)
{
        return record_parse_elastic_policy(o, at);
}

/* ARR's items, each SIZE bytes decoded by ONE, into a new array *RET
 * (NULL when empty; the caller's), *RET_N long; -EINVAL when ARR is not an
 * array or an item does not decode. */
static int parse_array(const struct json *arr, size_t size, int (*one)(const struct json *, void *), void **ret,
                       size_t *ret_n)
{
        _cleanup_free_ char *v = NULL;
        size_t n;

        if (!json_is_array(arr))
                return -EINVAL;
        n = json_array_len(arr);
        if (n && !(v = calloc(n, size)))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (one(json_array_at(arr, i), v + i * size) < 0)
                        return -EINVAL;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int journal_parse_reservations(const struct json *arr, struct reservation_record **ret, size_t *ret_n)
{
        return parse_array(arr, sizeof(**ret), one_reservation, (void **)ret, ret_n);
}

int journal_parse_pools(const struct json *arr, struct pool_record **ret, size_t *ret_n)
{
        return parse_array(arr, sizeof(**ret), one_pool, (void **)ret, ret_n);
}

int journal_parse_stock_targets(const struct json *arr, struct stock_target_record **ret, size_t *ret_n)
{
        return parse_array(arr, sizeof(**ret), one_stock_target, (void **)ret, ret_n);
}

/* Unique by (node, page size) within the list. */
int journal_parse_elastic_policies(const struct json *arr, struct elastic_policy_record **ret, size_t *ret_n)
{
        _cleanup_free_ struct elastic_policy_record *e = NULL;
        size_t n;
        int r = parse_array(arr, sizeof(*e), one_policy, (void **)&e, &n);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < i; k++)
                        if (e[k].node == e[i].node && e[k].page_size == e[i].page_size)
                                return -EINVAL;
        *ret = TAKE_PTR(e);
        *ret_n = n;
        return 0;
}

void journal_add_reservations(struct json *doc, const struct reservation_record *res, size_t n)
{
        struct json *arr = json_add_array(doc, "reservations");

        for (size_t i = 0; arr && i < n; i++)
                record_add_reservation(json_append_object(arr), &res[i]);
}

void journal_add_pool_row(struct json *arr, const struct pool_record *p)
{
        record_add_pool(json_append_object(arr), p);
}

/* "stock_targets" even when empty: a log record that empties them must say so. */
void journal_add_stock_targets(struct json *doc, const struct stock_target_record *t, size_t n)
{
        struct json *arr = json_add_array(doc, "stock_targets");

        for (size_t i = 0; arr && i < n; i++)
                record_add_stock_target(json_append_object(arr), &t[i]);
}

/* "elastic_policies" even when empty: a log record that removes the last
 * policy must say so (the snapshot leaves an empty list out). */
void journal_add_elastic_policies(struct json *doc, const struct elastic_policy_record *e, size_t n)
{
        struct json *arr = json_add_array(doc, "elastic_policies");

        for (size_t i = 0; arr && i < n; i++)
                record_add_elastic_policy(json_append_object(arr), &e[i]);
}

char *journal_format(const struct journal *j)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        struct json *arr;

        if (!j)
                return NULL;
        doc = json_new_object();
        json_add_u64(doc, "version", JOURNAL_VERSION);
        json_add_str(doc, "boot_id", j->boot_id);
        if (j->snapshot_id[0])
                json_add_str(doc, "snapshot", j->snapshot_id);
        journal_add_reservations(doc, j->reservations, j->n_reservations);
        arr = json_add_array(doc, "pools");
        for (size_t i = 0; arr && i < j->n_pools; i++)
                journal_add_pool_row(arr, &j->pools[i]);
        if (j->n_stock_targets)
                journal_add_stock_targets(doc, j->stock_targets, j->n_stock_targets);
        if (j->n_elastic)
                journal_add_elastic_policies(doc, j->elastic, j->n_elastic);
        return json_print(doc);
}

/* A snapshot id: 16 lower-case hex digits. */
bool journal_snapshot_id_valid(const char *s)
{
        size_t n = strspn(s, "0123456789abcdef");
        return n == JOURNAL_SNAPSHOT_ID_LEN && s[n] == '\0';
}

int journal_parse(const char *buf, size_t len, struct journal **ret)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        _cleanup_(journal_freep) struct journal *j = NULL;
        const struct json *targets;
        uint64_t version;
        int r;

        assert_return(buf || len == 0, -EINVAL);
        assert_return(ret, -EINVAL);
        r = json_parse(buf, len, &doc);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        if (!json_is_object(doc))
                return -EINVAL;
        if (json_get_u64(doc, "version", &version) < 0 || version == 0)
                return -EINVAL;
        /* A newer daemon wrote it: refuse it whole, never guess at it. */
        if (version > JOURNAL_VERSION)
                return -EPROTONOSUPPORT;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        if (journal_get_strbuf(doc, "boot_id", j->boot_id, sizeof(j->boot_id)) < 0)
                return -EINVAL;
        /* Version 1 has no log, hence no snapshot id; version 2 has one
         * whenever a log may extend it (journal_format writes it when set). */
        if (version >= 2 && json_get(doc, "snapshot") &&
            (journal_get_strbuf(doc, "snapshot", j->snapshot_id, sizeof(j->snapshot_id)) < 0 ||
             !journal_snapshot_id_valid(j->snapshot_id)))
                return -EINVAL;

        r = journal_parse_reservations(json_get(doc, "reservations"), &j->reservations, &j->n_reservations);
        if (r < 0)
                return r;
        r = journal_parse_pools(json_get(doc, "pools"), &j->pools, &j->n_pools);
        if (r < 0)
                return r;
        targets = json_get(doc, "stock_targets");
        if (targets) {
                r = journal_parse_stock_targets(targets, &j->stock_targets, &j->n_stock_targets);
                if (r < 0)
                        return r;
        }

        if (json_get(doc, "elastic_policies")) {
                r = journal_parse_elastic_policies(json_get(doc, "elastic_policies"), &j->elastic, &j->n_elastic);
                if (r < 0)
                        return r;
        }
        r = journal_check_unique(j);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

struct journal *journal_dup(const struct journal *j)
{
        _cleanup_(journal_freep) struct journal *d = calloc(1, sizeof(*d));

        if (!d)
                return NULL;
        memcpy(d->boot_id, j->boot_id, sizeof(d->boot_id));
        memcpy(d->snapshot_id, j->snapshot_id, sizeof(d->snapshot_id));
        if (j->n_reservations &&
            !(d->reservations = malloc(j->n_reservations * sizeof(*d->reservations))))
                return NULL;
        if (j->n_pools && !(d->pools = malloc(j->n_pools * sizeof(*d->pools))))
                return NULL;
        if (j->n_stock_targets &&
            !(d->stock_targets = malloc(j->n_stock_targets * sizeof(*d->stock_targets))))
                return NULL;
        if (j->n_reservations)
                memcpy(d->reservations, j->reservations, j->n_reservations * sizeof(*d->reservations));
        if (j->n_pools)
                memcpy(d->pools, j->pools, j->n_pools * sizeof(*d->pools));
        if (j->n_stock_targets)
                memcpy(d->stock_targets, j->stock_targets, j->n_stock_targets * sizeof(*d->stock_targets));
        if (j->n_elastic && !(d->elastic = malloc(j->n_elastic * sizeof(*d->elastic))))
                return NULL;
        if (j->n_elastic)
                memcpy(d->elastic, j->elastic, j->n_elastic * sizeof(*d->elastic));
        d->n_reservations = j->n_reservations;
        d->n_pools = j->n_pools;
        d->n_stock_targets = j->n_stock_targets;
        d->n_elastic = j->n_elastic;
        return TAKE_PTR(d);
}

/* Field by field: the structs have padding. */
bool journal_reservations_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_reservations != b->n_reservations)
                return false;
        for (size_t i = 0; i < a->n_reservations; i++) {
                const struct reservation_record *x = &a->reservations[i], *y = &b->reservations[i];
                if (x->node != y->node || x->page_size != y->page_size || x->count != y->count)
                        return false;
        }
        return true;
}

bool journal_targets_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_stock_targets != b->n_stock_targets)
                return false;
        for (size_t i = 0; i < a->n_stock_targets; i++) {
                const struct stock_target_record *x = &a->stock_targets[i], *y = &b->stock_targets[i];
                if (x->node != y->node || x->page_size != y->page_size || x->size_bytes != y->size_bytes ||
                    x->count != y->count)
                        return false;
        }
        return true;
}

bool journal_policies_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_elastic != b->n_elastic)
                return false;
        for (size_t i = 0; i < a->n_elastic; i++) {
                const struct elastic_policy_record *x = &a->elastic[i], *y = &b->elastic[i];
                if (x->node != y->node || x->page_size != y->page_size || x->min != y->min || x->max != y->max ||
                    x->headroom != y->headroom || x->idle_seconds != y->idle_seconds ||
                    x->allow_best_effort != y->allow_best_effort)
                        return false;
        }
        return true;
}

