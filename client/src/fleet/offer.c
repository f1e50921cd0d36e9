/* offer: a host's warm hugepages as a fleet scheduler sees them.
 *
 * A scheduler (OpenStack Placement, a Kubernetes scheduler through node
 * resources) places VMs by counts per NUMA node and page size, and keeps
 * what it placed as the consumer's until the VM goes.  So the offer has
 * three counts per node and page size, read from hpwarmd's stock and pool
 * list: ready (ready stock files), in use (pools handed out from stock,
 * warming or ready: a consumer may hold them) and warming (stock files
 * still warming or recycling).  offer_want then says what to publish given
 * what consumers hold; docs/OPENSTACK.md says why each count counts.
 *
 * Pure and table-tested (tests/client/test_offer.c); the reading and the
 * writing are each publisher's. */
#include <string.h>

#include "offer.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
        return a + b < a ? UINT64_MAX : a + b;
}

static struct offer_count *find(struct offer *o, uint64_t page_size)
{
        for (size_t i = 0; i < o->n; i++)
                if (o->size[i].page_size == page_size)
                        return &o->size[i];
        return NULL;
}

const struct offer_count *offer_find(const struct offer *o, uint64_t page_size)
{
        return find((struct offer *)o, page_size);
}

/* Page size PS into O's sorted list (once; none past OFFER_MAX_SIZES). */
static void add_size(struct offer *o, uint64_t ps)
{
        size_t i;

        if (ps == 0 || find(o, ps) || o->n == OFFER_MAX_SIZES)
                return;
        for (i = o->n; i > 0 && o->size[i - 1].page_size > ps; i--)
                o->size[i] = o->size[i - 1];
        o->size[i] = (struct offer_count){ .page_size = ps };
        o->n++;
}

void offer_of_node(const struct hpw_node *n, const struct hpw_stock *st, const struct hpw_pool_list *pl,
                   struct offer *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->node = n->id;
        for (size_t i = 0; i < n->n_hugepages; i++)
                add_size(ret, n->hugepages[i]->page_size_bytes);
        for (size_t i = 0; st && i < st->n; i++) {
                const struct hpw_stock_target *t = st->targets[i];
                struct offer_count *c = find(ret, t->page_size_bytes);
                uint64_t pages;
                if (t->node != n->id || !c)
                        continue;
                pages = t->size_bytes / t->page_size_bytes;
                c->ready = add_sat(c->ready, t->ready * pages);
                c->warming = add_sat(c->warming, (t->warming + t->recycling) * pages);
        }
        for (size_t i = 0; pl && i < pl->n; i++) {
                const struct hpw_pool *p = pl->pools[i];
                struct offer_count *c = find(ret, p->page_size_bytes);
                if (p->node != n->id || !c || !p->from_stock ||
                    (strcmp(p->from_stock, "full") != 0 && strcmp(p->from_stock, "partial") != 0) ||
                    (p->state != HPW_POOL_READY && p->state != HPW_POOL_WARMING))
                        continue;
                c->in_use = add_sat(c->in_use, p->size_bytes / p->page_size_bytes);
        }
}

bool offer_want(const struct offer_count *c, uint64_t used, uint64_t limit, struct offer_publish *ret)
{
        /* A pool handed out from stock stays counted while a consumer
         * holds its pages; one taken by a VM that holds none (a plain
         * hugepage guest the libvirt hook gave a stock file of its size)
         * is no warm page anybody can allocate. */
        uint64_t cap = add_sat(c->ready, c->in_use < used ? c->in_use : used);
        bool kept = false;

        if (cap < used) {
                cap = used;   /* never a capacity below what consumers hold */
                kept = true;
        }
        ret->total = add_sat(cap, c->warming);
        if (ret->total > limit)
                ret->total = limit;
        ret->reserved = c->warming > limit ? limit : c->warming;
        if (ret->reserved > ret->total)
                ret->reserved = ret->total;
        ret->present = ret->total > 0;
        if (!ret->present)
                ret->reserved = 0;
        return kept;
}
