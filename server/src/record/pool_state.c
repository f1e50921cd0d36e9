/* pool_state: the pool name rule and the lifecycle table (see pool_state.h).
 *
 * The table is a list of edges, each with the reason it exists; the debug log
 * of a move quotes it.  Adding a state means adding its name and its edges
 * here, and the table test (tests/unit/test_pool_state.c) says which moves
 * it expects, so an edge added by mistake fails there. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "record.h"
#include "log.h"
#include "pool_state.h"
#include "util.h"

static bool name_char(char c, bool first)
{
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
                return true;
        return !first && (c == '.' || c == '_' || c == '-');
}

bool pool_name_valid(const char *name)
{
        size_t i;

        if (!name)
                return false;
        for (i = 0; name[i]; i++) {
                if (i >= POOL_NAME_MAX || !name_char(name[i], i == 0))
                        return false;
        }
        return i > 0;
}

bool pool_label_valid(const char *label)
{
        size_t i;

        if (!label)
                return false;
        for (i = 0; label[i]; i++)
                if (i >= POOL_LABEL_MAX || !(name_char(label[i], i == 0) || (i > 0 && label[i] == ':')))
                        return false;
        return i > 0;
}

bool pool_stock_name_valid(const char *name)
{
        size_t i;

        if (!name || name[0] != POOL_STOCK_PREFIX)
                return false;
        for (i = 1; name[i]; i++) {
                if (i >= POOL_NAME_MAX || !name_char(name[i], false))
                        return false;
        }
        return i > 1;
}

static const struct {
        const char *name;
        bool saved;     /* may appear in the journal (and so in pool objects) */
        bool final;     /* file gone; the record only says why */
} states[_POOL_STATE_MAX] = {
        [POOL_NEW] = { "new", false, false },
        [POOL_WARMING] = { "warming", true, false },
        [POOL_READY] = { "ready", true, false },
        [POOL_FAILED] = { "failed", true, true },
        [POOL_CANCELLED] = { "cancelled", true, true },
        [POOL_STOCK_WARMING] = { "stock-warming", true, false },
        [POOL_STOCK] = { "stock", true, false },
        [POOL_DIRTY] = { "dirty", true, false },
        [POOL_RECYCLING] = { "recycling", true, false },
};

bool pool_state_is_stock(int s)
{
        return s == POOL_STOCK_WARMING || s == POOL_STOCK || s == POOL_DIRTY || s == POOL_RECYCLING;
}

static const struct {
        enum pool_state from, to;
        const char *why;
} edges[] = {
        { POOL_NEW, POOL_WARMING, "created, warm job started" },
        { POOL_WARMING, POOL_WARMING, "warm job resumed at start" },
        { POOL_WARMING, POOL_READY, "every page populated" },
        { POOL_WARMING, POOL_FAILED, "warm job failed, or could not be resumed" },
        { POOL_WARMING, POOL_CANCELLED, "warm job cancelled by the engine" },
        { POOL_READY, POOL_WARMING, "its file lost pages while the daemon was down: warm again" },
        { POOL_READY, POOL_FAILED, "its file or its mount was gone at start" },
        { POOL_NEW, POOL_STOCK_WARMING, "stock file created, refill job started" },
        { POOL_STOCK_WARMING, POOL_STOCK_WARMING, "refill job resumed at start" },
        { POOL_STOCK_WARMING, POOL_STOCK, "every page of the stock file populated" },
        { POOL_STOCK, POOL_STOCK_WARMING, "the stock file lost pages while the daemon was down: refill" },
        { POOL_STOCK, POOL_READY, "handed out: renamed into place as a ready pool" },
        { POOL_STOCK, POOL_WARMING, "handed out grown: renamed, enlarged, only the part it gained warms" },
        { POOL_READY, POOL_DIRTY, "released while its stock target was short: renamed, kept for recycling" },
        { POOL_DIRTY, POOL_RECYCLING, "no process maps it and its file is whole: zeroing (saved first)" },
        { POOL_RECYCLING, POOL_RECYCLING, "zeroed again from the start (restart, or a save that failed)" },
        { POOL_RECYCLING, POOL_STOCK, "every byte zeroed and saved: joins the stock" },
};

const char *pool_state_name(enum pool_state s)
{
        if ((unsigned)s >= ARRAY_SIZE(states))
                return NULL;
        return states[s].name;
}

int pool_state_parse(const char *s, enum pool_state *ret)
{
        assert_return(ret, -EINVAL);
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ARRAY_SIZE(states); i++)
                if (states[i].saved && strcmp(s, states[i].name) == 0) {
                        *ret = (enum pool_state)i;
                        return 0;
                }
        return -EINVAL;
}

static const char *edge_why(enum pool_state from, enum pool_state to)
{
        for (size_t i = 0; i < ARRAY_SIZE(edges); i++)
                if (edges[i].from == from && edges[i].to == to)
                        return edges[i].why;
        return NULL;
}

bool pool_transition_allowed(enum pool_state from, enum pool_state to)
{
        return edge_why(from, to) != NULL;
}

int pool_transition(struct pool_record *rec, enum pool_state to, const char *cause, const char *fmt, ...)
{
        enum pool_state from;
        const char *why;
        va_list ap;

        assert_return(rec, -EINVAL);
        from = rec->state;
        why = edge_why(from, to);
        if (!why || (states[to].final != (cause != NULL))) {
                log_err("pools: pool %s: refused state change %s -> %s%s", rec->name,
                        pool_state_name(from) ? pool_state_name(from) : "?",
                        pool_state_name(to) ? pool_state_name(to) : "?",
                        why ? (cause ? " (a cause given for a state that takes none)"
                                     : " (no cause given for a final state)")
                            : "");
                return -EPERM;
        }
        if (states[to].final) {
                if (!rec->finished_at)
                        rec->finished_at = (int64_t)(now_real_ns() / UINT64_C(1000000000));
                snprintf(rec->error_slug, sizeof(rec->error_slug), "%s", cause);
                rec->error_detail[0] = '\0';
                if (fmt) {
                        va_start(ap, fmt);
                        vsnprintf(rec->error_detail, sizeof(rec->error_detail), fmt, ap);
                        va_end(ap);
                }
        } else if (to == POOL_READY || to == POOL_STOCK) {
                rec->finished_at = (int64_t)(now_real_ns() / UINT64_C(1000000000));
                rec->ready_boot_ns = now_boot_ns();
        } else if (to == POOL_WARMING || to == POOL_STOCK_WARMING || to == POOL_DIRTY || to == POOL_RECYCLING) {
                rec->finished_at = 0;
                rec->ready_boot_ns = 0;
        }
        rec->state = to;
        log_debug("pools: pool %s: %s -> %s (%s)%s%s", rec->name, pool_state_name(from), pool_state_name(to),
                  why, cause ? ": " : "", cause ? cause : "");
        return 0;
}

static const char *const from_stock_names[_POOL_FROM_STOCK_MAX] = {
        [POOL_FROM_STOCK_NONE] = "none",
        [POOL_FROM_STOCK_FULL] = "full",
        [POOL_FROM_STOCK_PARTIAL] = "partial",
};

const char *pool_from_stock_name(enum pool_from_stock f)
{
        if ((unsigned)f >= ARRAY_SIZE(from_stock_names))
                return NULL;
        return from_stock_names[f];
}

int pool_from_stock_parse(const char *s, enum pool_from_stock *ret)
{
        assert_return(ret, -EINVAL);
        for (size_t i = 0; s && i < ARRAY_SIZE(from_stock_names); i++)
                if (strcmp(s, from_stock_names[i]) == 0) {
                        *ret = (enum pool_from_stock)i;
                        return 0;
                }
        return -EINVAL;
}

static const char *const hold_names[_POOL_HOLD_MAX] = {
        [POOL_FREE] = "free",
        [POOL_CREATING] = "creating",
        [POOL_BUSY] = "busy",
        [POOL_REMOVING] = "removing",
        [POOL_RELEASING] = "releasing",
};

const char *pool_hold_name(enum pool_hold h)
{
        if ((unsigned)h >= ARRAY_SIZE(hold_names))
                return NULL;
        return hold_names[h];
}

bool pool_hold_allowed(enum pool_hold from, enum pool_hold to)
{
        switch (from) {
        case POOL_FREE:
                /* Taken by one thread, or a new pool that pools_create adds. */
                return to == POOL_BUSY || to == POOL_CREATING;
        case POOL_CREATING:
                return to == POOL_FREE;          /* created */
        case POOL_BUSY:
                return to == POOL_FREE || to == POOL_RELEASING;
        case POOL_RELEASING:
                /* Saved and unlinked; or the save or the unlink failed. */
                return to == POOL_REMOVING || to == POOL_BUSY;
        case POOL_REMOVING:
        case _POOL_HOLD_MAX:
                break;
        }
        return false;   /* removing: the record leaves, nothing follows */
}
