/* offer.c: what a host's stock and pools count as per node and page size
 * (offer_of_node), and what a publisher writes given what consumers hold
 * (offer_want: capacity ready + min(in use, used), never below used,
 * reserved warming, clamped to the target's integers).  The cases are
 * Placement's, whose sync publishes through these two. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "offer.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
/* Placement's integers (32-bit signed): the limit its publisher passes. */
#define INT32_LIMIT 2147483647u

static struct hpw_stock_target tgt(int node, uint64_t ps, uint64_t size, uint64_t ready, uint64_t warming,
                                   uint64_t recycling)
{
        return (struct hpw_stock_target){ .size = sizeof(struct hpw_stock_target), .node = node,
                                          .page_size_bytes = ps, .size_bytes = size, .ready = ready,
                                          .warming = warming, .recycling = recycling };
}

/* A node with the hugepage sizes given (0 ends the list). */
struct node_fixture {
        struct hpw_hugepages hp[4];
        struct hpw_hugepages *hpp[4];
        struct hpw_node n;
};

static void node_init(struct node_fixture *f, int id, uint64_t s0, uint64_t s1, uint64_t s2)
{
        const uint64_t sizes[] = { s0, s1, s2 };

        memset(f, 0, sizeof(*f));
        f->n.id = id;
        f->n.hugepages = f->hpp;
        for (size_t i = 0; i < 3 && sizes[i]; i++) {
                f->hp[i].page_size_bytes = sizes[i];
                f->hpp[f->n.n_hugepages++] = &f->hp[i];
        }
}

TEST(counts_take_stock_by_node_and_page_size)
{
        struct hpw_stock_target t[] = { tgt(0, 2 * MiB, 4 * MiB, 3, 1, 1), tgt(0, 1 * GiB, 2 * GiB, 1, 0, 0),
                                        tgt(1, 2 * MiB, 8 * MiB, 2, 0, 0), tgt(0, 64 * 1024, 1 * MiB, 9, 9, 9) };
        struct hpw_stock_target *tp[] = { &t[0], &t[1], &t[2], &t[3] };
        struct hpw_stock st = { .n = 4, .targets = tp };
        struct node_fixture n0, n1;
        struct offer o;

        node_init(&n0, 0, 2 * MiB, 1 * GiB, 0);
        node_init(&n1, 1, 2 * MiB, 1 * GiB, 0);
        offer_of_node(&n0.n, &st, NULL, &o);
        CHECK_INT(o.node, ==, 0);
        CHECK_U64(o.n, ==, 2);            /* the node's sizes: a 64K target is none of them */
        CHECK_U64(o.size[0].page_size, ==, 2 * MiB);
        CHECK_U64(o.size[0].ready, ==, 6);     /* 3 files of 2 pages */
        CHECK_U64(o.size[0].warming, ==, 4);   /* warming + recycling */
        CHECK_U64(o.size[0].in_use, ==, 0);
        CHECK_U64(o.size[1].ready, ==, 2);     /* one 2 GiB file of 1 GiB pages */
        offer_of_node(&n1.n, &st, NULL, &o);
        CHECK_U64(o.size[0].ready, ==, 8);
        CHECK_U64(o.size[1].ready, ==, 0);
        offer_of_node(&n0.n, NULL, NULL, &o);
        CHECK_U64(o.size[0].ready + o.size[0].warming + o.size[1].ready, ==, 0);
}

/* Any page size the node has is counted, in ascending order, each once. */
TEST(counts_every_page_size_the_node_has)
{
        struct hpw_stock_target t[] = { tgt(0, 64 * KiB, 1 * MiB, 9, 1, 0), tgt(0, 16 * GiB, 16 * GiB, 1, 0, 0),
                                        tgt(0, 512 * MiB, 1 * GiB, 1, 1, 0) };
        struct hpw_stock_target *tp[] = { &t[0], &t[1], &t[2] };
        struct hpw_stock st = { .n = 3, .targets = tp };
        struct node_fixture n;
        struct offer o;

        node_init(&n, 0, 16 * GiB, 64 * KiB, 512 * MiB);
        n.hp[3].page_size_bytes = 64 * KiB;   /* a size listed twice counts once */
        n.hpp[n.n.n_hugepages++] = &n.hp[3];
        offer_of_node(&n.n, &st, NULL, &o);
        CHECK_U64(o.n, ==, 3);
        CHECK_U64(o.size[0].page_size, ==, 64 * KiB);
        CHECK_U64(o.size[0].ready, ==, 9 * 16);
        CHECK_U64(o.size[0].warming, ==, 16);
        CHECK_U64(o.size[1].page_size, ==, 512 * MiB);
        CHECK_U64(o.size[1].ready, ==, 2);
        CHECK_U64(o.size[1].warming, ==, 2);
        CHECK_U64(o.size[2].page_size, ==, 16 * GiB);
        CHECK_U64(o.size[2].ready, ==, 1);
        CHECK(offer_find(&o, 512 * MiB) == &o.size[1]);
        CHECK(offer_find(&o, 2 * MiB) == NULL);
        node_init(&n, 0, 0, 0, 0);             /* no hugepages: nothing to offer */
        offer_of_node(&n.n, &st, NULL, &o);
        CHECK_U64(o.n, ==, 0);
}

TEST(counts_pools_handed_out_from_stock_only)
{
        struct hpw_pool p[] = {
                { .node = 0, .page_size_bytes = 2 * MiB, .size_bytes = 8 * MiB, .state = HPW_POOL_READY, .from_stock = "full" },
                { .node = 0, .page_size_bytes = 2 * MiB, .size_bytes = 6 * MiB, .state = HPW_POOL_WARMING, .from_stock = "partial" },
                { .node = 0, .page_size_bytes = 2 * MiB, .size_bytes = 64 * MiB, .state = HPW_POOL_READY, .from_stock = "none" },
                { .node = 0, .page_size_bytes = 2 * MiB, .size_bytes = 64 * MiB, .state = HPW_POOL_READY, .from_stock = "" },
                { .node = 0, .page_size_bytes = 2 * MiB, .size_bytes = 64 * MiB, .state = HPW_POOL_FAILED, .from_stock = "full" },
                { .node = 1, .page_size_bytes = 2 * MiB, .size_bytes = 2 * MiB, .state = HPW_POOL_READY, .from_stock = "full" },
        };
        struct hpw_pool *pp[] = { &p[0], &p[1], &p[2], &p[3], &p[4], &p[5] };
        struct hpw_pool_list pl = { .n = 6, .pools = pp };
        struct node_fixture n0, n1;
        struct offer o;

        node_init(&n0, 0, 2 * MiB, 1 * GiB, 0);
        node_init(&n1, 1, 2 * MiB, 1 * GiB, 0);
        offer_of_node(&n0.n, NULL, &pl, &o);
        CHECK_U64(o.size[0].in_use, ==, 7);    /* 4 + 3 pages; cold, unknown and failed pools not */
        offer_of_node(&n1.n, NULL, &pl, &o);
        CHECK_U64(o.size[0].in_use, ==, 1);
}

TEST(want_is_capacity_plus_reserved_warming)
{
        struct offer_count c = { .ready = 10, .in_use = 4, .warming = 3 };
        struct offer_publish inv;

        CHECK_INT(offer_want(&c, 5, INT32_LIMIT, &inv), ==, 0);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 17);    /* 10 ready + the 4 in use (5 allocated) + 3 warming */
        CHECK_U64(inv.reserved, ==, 3);
}

/* Pools from stock count only as far as allocations hold pages: a plain
 * hugepage VM that took a stock file holds no allocation, and counting its
 * pages would offer warm pages no file backs. */
TEST(want_counts_pools_from_stock_only_under_allocations)
{
        struct offer_count c = { .ready = 64, .in_use = 128, .warming = 0 };
        struct offer_publish inv;

        CHECK_INT(offer_want(&c, 0, INT32_LIMIT, &inv), ==, 0);       /* nobody's: the ready file only */
        CHECK_U64(inv.total, ==, 64);
        CHECK_INT(offer_want(&c, 64, INT32_LIMIT, &inv), ==, 0);      /* one VM of two holds its pages */
        CHECK_U64(inv.total, ==, 128);
        CHECK_INT(offer_want(&c, 128, INT32_LIMIT, &inv), ==, 0);     /* both */
        CHECK_U64(inv.total, ==, 192);
        CHECK_INT(offer_want(&c, 192, INT32_LIMIT, &inv), ==, 0);     /* and one scheduled, its file still ready */
        CHECK_U64(inv.total, ==, 192);
}

TEST(want_never_puts_capacity_below_usage)
{
        struct offer_count c = { .ready = 0, .in_use = 2, .warming = 4 };
        struct offer_publish inv;

        CHECK_INT(offer_want(&c, 6, INT32_LIMIT, &inv), ==, 1);     /* kept */
        CHECK_U64(inv.total - inv.reserved, ==, 6);
        CHECK_U64(inv.reserved, ==, 4);
        /* Nothing warm and nothing warming, but allocations: the class stays. */
        c = (struct offer_count){ 0 };
        CHECK_INT(offer_want(&c, 3, INT32_LIMIT, &inv), ==, 1);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 3);
        CHECK_U64(inv.reserved, ==, 0);
}

TEST(want_drops_an_empty_class_and_keeps_all_warming)
{
        struct offer_count c = { 0 };
        struct offer_publish inv;

        CHECK_INT(offer_want(&c, 0, INT32_LIMIT, &inv), ==, 0);
        CHECK_INT(inv.present, ==, 0);
        c.warming = 5;   /* everything still warming: reserved == total (microversion 1.26) */
        offer_want(&c, 0, INT32_LIMIT, &inv);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 5);
        CHECK_U64(inv.reserved, ==, 5);
}

TEST(want_clamps_to_placements_32_bit_integers)
{
        struct offer_count c = { .ready = UINT64_MAX - 1, .in_use = 5, .warming = 1ull << 40 };
        struct offer_publish inv;

        offer_want(&c, 0, INT32_LIMIT, &inv);
        CHECK_U64(inv.total, ==, INT32_LIMIT);
        CHECK_U64(inv.reserved, ==, INT32_LIMIT);
}

/* Another target's integers: the limit is the caller's, not Placement's. */
TEST(want_clamps_to_the_limit_given)
{
        struct offer_count c = { .ready = 1ull << 40, .warming = 1ull << 33 };
        struct offer_publish inv;

        offer_want(&c, 0, UINT64_MAX, &inv);
        CHECK_U64(inv.total, ==, (1ull << 40) + (1ull << 33));
        CHECK_U64(inv.reserved, ==, 1ull << 33);
        offer_want(&c, 0, 1000, &inv);
        CHECK_U64(inv.total, ==, 1000);
        CHECK_U64(inv.reserved, ==, 1000);
}

TEST_MAIN()
