/* placement.c's pure parts and placement_json.c's bodies: what a host's
 * stock and pools count as (pl_counts), the inventory that makes true
 * given Placement's usage (pl_want, the "never below usage" rule), and
 * Placement's and Keystone's answers, good and hostile. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "placement.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static struct hpw_stock_target tgt(int node, uint64_t ps, uint64_t size, uint64_t ready, uint64_t warming,
                                   uint64_t recycling)
{
        return (struct hpw_stock_target){ .size = sizeof(struct hpw_stock_target), .node = node,
                                          .page_size_bytes = ps, .size_bytes = size, .ready = ready,
                                          .warming = warming, .recycling = recycling };
}

TEST(counts_take_stock_by_node_and_page_size)
{
        struct hpw_stock_target t[] = { tgt(0, 2 * MiB, 4 * MiB, 3, 1, 1), tgt(0, 1 * GiB, 2 * GiB, 1, 0, 0),
                                        tgt(1, 2 * MiB, 8 * MiB, 2, 0, 0), tgt(0, 64 * 1024, 1 * MiB, 9, 9, 9) };
        struct hpw_stock_target *tp[] = { &t[0], &t[1], &t[2], &t[3] };
        struct hpw_stock st = { .n = 4, .targets = tp };
        struct pl_count c[HPW_PL_CLASSES];

        pl_counts(&st, NULL, 0, c);
        CHECK_U64(c[0].ready, ==, 6);     /* 3 files of 2 pages */
        CHECK_U64(c[0].warming, ==, 4);   /* warming + recycling */
        CHECK_U64(c[0].in_use, ==, 0);
        CHECK_U64(c[1].ready, ==, 2);     /* one 2 GiB file of 1 GiB pages */
        pl_counts(&st, NULL, 1, c);
        CHECK_U64(c[0].ready, ==, 8);
        CHECK_U64(c[1].ready, ==, 0);
        pl_counts(NULL, NULL, 0, c);
        CHECK_U64(c[0].ready + c[0].warming + c[1].ready, ==, 0);
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
        struct pl_count c[HPW_PL_CLASSES];

        pl_counts(NULL, &pl, 0, c);
        CHECK_U64(c[0].in_use, ==, 7);    /* 4 + 3 pages; cold, unknown and failed pools not */
        pl_counts(NULL, &pl, 1, c);
        CHECK_U64(c[0].in_use, ==, 1);
}

TEST(want_is_capacity_plus_reserved_warming)
{
        struct pl_count c = { .ready = 10, .in_use = 4, .warming = 3 };
        struct hpw_pl_inv inv;

        CHECK_INT(pl_want(&c, 5, &inv), ==, 0);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 17);    /* 10 ready + the 4 in use (5 allocated) + 3 warming */
        CHECK_U64(inv.reserved, ==, 3);
}

/* Pools from stock count only as far as allocations hold pages: a plain
 * hugepage VM that took a stock file holds no allocation, and counting its
 * pages would offer warm pages no file backs. */
TEST(want_counts_pools_from_stock_only_under_allocations)
{
        struct pl_count c = { .ready = 64, .in_use = 128, .warming = 0 };
        struct hpw_pl_inv inv;

        CHECK_INT(pl_want(&c, 0, &inv), ==, 0);       /* nobody's: the ready file only */
        CHECK_U64(inv.total, ==, 64);
        CHECK_INT(pl_want(&c, 64, &inv), ==, 0);      /* one VM of two holds its pages */
        CHECK_U64(inv.total, ==, 128);
        CHECK_INT(pl_want(&c, 128, &inv), ==, 0);     /* both */
        CHECK_U64(inv.total, ==, 192);
        CHECK_INT(pl_want(&c, 192, &inv), ==, 0);     /* and one scheduled, its file still ready */
        CHECK_U64(inv.total, ==, 192);
}

TEST(want_never_puts_capacity_below_usage)
{
        struct pl_count c = { .ready = 0, .in_use = 2, .warming = 4 };
        struct hpw_pl_inv inv;

        CHECK_INT(pl_want(&c, 6, &inv), ==, 1);     /* kept */
        CHECK_U64(inv.total - inv.reserved, ==, 6);
        CHECK_U64(inv.reserved, ==, 4);
        /* Nothing warm and nothing warming, but allocations: the class stays. */
        c = (struct pl_count){ 0 };
        CHECK_INT(pl_want(&c, 3, &inv), ==, 1);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 3);
        CHECK_U64(inv.reserved, ==, 0);
}

TEST(want_drops_an_empty_class_and_keeps_all_warming)
{
        struct pl_count c = { 0 };
        struct hpw_pl_inv inv;

        CHECK_INT(pl_want(&c, 0, &inv), ==, 0);
        CHECK_INT(inv.present, ==, 0);
        c.warming = 5;   /* everything still warming: reserved == total (microversion 1.26) */
        pl_want(&c, 0, &inv);
        CHECK_INT(inv.present, ==, 1);
        CHECK_U64(inv.total, ==, 5);
        CHECK_U64(inv.reserved, ==, 5);
}

TEST(want_clamps_to_placements_32_bit_integers)
{
        struct pl_count c = { .ready = UINT64_MAX - 1, .in_use = 5, .warming = 1ull << 40 };
        struct hpw_pl_inv inv;

        pl_want(&c, 0, &inv);
        CHECK_U64(inv.total, ==, PL_INT32_MAX);
        CHECK_U64(inv.reserved, ==, PL_INT32_MAX);
}

TEST(provider_list_first_or_none)
{
        const char *one = "{\"resource_providers\":[{\"uuid\":\"u-1\",\"generation\":7,\"name\":\"cn\"}]}";
        const char *none = "{\"resource_providers\":[]}";
        char *uuid = NULL;
        uint32_t gen = 0;
        bool found = true;

        CHECK_INT(hpw_pj_provider(one, strlen(one), &found, &uuid, &gen), ==, HPW_OK);
        CHECK_INT(found, ==, 1);
        CHECK_STR(uuid, "u-1");
        CHECK_U64(gen, ==, 7);
        free(uuid);
        CHECK_INT(hpw_pj_provider(none, strlen(none), &found, &uuid, &gen), ==, HPW_OK);
        CHECK_INT(found, ==, 0);
        static const char *const bad[] = {
                "", "[]", "{}", "{\"resource_providers\":{}}",
                "{\"resource_providers\":[{\"uuid\":1,\"generation\":1}]}",
                "{\"resource_providers\":[{\"uuid\":\"u\",\"generation\":-1}]}",
                "{\"resource_providers\":[{\"uuid\":\"u\",\"generation\":1.5}]}",
                "{\"resource_providers\":[{\"uuid\":\"u\",\"generation\":4294967296}]}",
                "{\"resource_providers\":[]} x",
                "{\"Resource_providers\":[]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_INT(hpw_pj_provider(bad[i], strlen(bad[i]), &found, &uuid, &gen), ==, HPW_E_PROTOCOL);
}

TEST(inventories_keep_other_classes)
{
        const char *b = "{\"resource_provider_generation\":3,\"inventories\":{"
                        "\"CUSTOM_HPWARM_2M\":{\"total\":10,\"reserved\":2,\"max_unit\":10},"
                        "\"CUSTOM_OTHER\":{\"total\":1,\"reserved\":0}}}";
        struct hpw_pl_inv inv[HPW_PL_CLASSES];
        uint32_t gen = 0;
        char *others = NULL, *body;

        CHECK_INT(hpw_pj_inventories(b, strlen(b), &gen, inv, &others), ==, HPW_OK);
        CHECK_U64(gen, ==, 3);
        CHECK_INT(inv[0].present, ==, 1);
        CHECK_U64(inv[0].total, ==, 10);
        CHECK_U64(inv[0].reserved, ==, 2);
        CHECK_INT(inv[1].present, ==, 0);
        CHECK_STR(others, "{\"CUSTOM_OTHER\":{\"total\":1,\"reserved\":0}}");
        inv[0].total = 12;
        inv[1] = (struct hpw_pl_inv){ .present = true, .total = 1, .reserved = 1 };
        body = hpw_pj_inventories_body(gen, others, inv);
        CHECK_STR(body, "{\"inventories\":{\"CUSTOM_OTHER\":{\"total\":1,\"reserved\":0},"
                        "\"CUSTOM_HPWARM_2M\":{\"total\":12,\"reserved\":2,\"min_unit\":1,\"max_unit\":12,"
                        "\"step_size\":1,\"allocation_ratio\":1},"
                        "\"CUSTOM_HPWARM_1G\":{\"total\":1,\"reserved\":1,\"min_unit\":1,\"max_unit\":1,"
                        "\"step_size\":1,\"allocation_ratio\":1}},\"resource_provider_generation\":3}");
        free(body);
        free(others);
        const char *neg = "{\"resource_provider_generation\":3,\"inventories\":{\"CUSTOM_HPWARM_2M\":{\"total\":-1,\"reserved\":0}}}";
        CHECK_INT(hpw_pj_inventories(neg, strlen(neg), &gen, inv, &others), ==, HPW_E_PROTOCOL);
        const char *nogen = "{\"inventories\":{}}";
        CHECK_INT(hpw_pj_inventories(nogen, strlen(nogen), &gen, inv, &others), ==, HPW_E_PROTOCOL);
}

TEST(usages_and_errors)
{
        const char *u = "{\"resource_provider_generation\":1,\"usages\":{\"CUSTOM_HPWARM_1G\":4,\"VCPU\":2}}";
        const char *e = "{\"errors\":[{\"status\":409,\"code\":\"placement.concurrent_update\","
                        "\"detail\":\"resource provider generation conflict\\n\\n more\"}]}";
        uint32_t used[HPW_PL_CLASSES] = { 9, 9 };
        char code[64], detail[64];

        CHECK_INT(hpw_pj_usages(u, strlen(u), used), ==, HPW_OK);
        CHECK_U64(used[0], ==, 0);
        CHECK_U64(used[1], ==, 4);
        const char *bad = "{\"usages\":{\"CUSTOM_HPWARM_2M\":\"4\"}}";
        CHECK_INT(hpw_pj_usages(bad, strlen(bad), used), ==, HPW_E_PROTOCOL);
        hpw_pj_error(e, strlen(e), code, sizeof(code), detail, sizeof(detail));
        CHECK_STR(code, "placement.concurrent_update");
        CHECK_STR(detail, "resource provider generation conflict   more");
        hpw_pj_error("<html>", 6, code, sizeof(code), detail, sizeof(detail));
        CHECK_STR(code, "");
        CHECK_STR(detail, "");
}

TEST(keystone_body_password_scoped_or_application_credential)
{
        struct hpw_openstack_auth a = { .auth_url = "http://k", .username = "u", .password = "p\"w",
                                        .project_name = "pr" };
        char *b = hpw_pj_keystone_body(&a);

        CHECK_STR(b, "{\"auth\":{\"identity\":{\"methods\":[\"password\"],\"password\":{\"user\":{\"name\":\"u\","
                     "\"domain\":{\"name\":\"Default\"},\"password\":\"p\\\"w\"}}},\"scope\":{\"project\":"
                     "{\"name\":\"pr\",\"domain\":{\"name\":\"Default\"}}}}}");
        free(b);
        a = (struct hpw_openstack_auth){ .auth_url = "http://k", .app_cred_id = "id1", .app_cred_secret = "s" };
        b = hpw_pj_keystone_body(&a);
        CHECK_STR(b, "{\"auth\":{\"identity\":{\"methods\":[\"application_credential\"],"
                     "\"application_credential\":{\"id\":\"id1\",\"secret\":\"s\"}}}}");
        free(b);
}

TEST(keystone_token_expiry_and_catalog)
{
        const char *t = "{\"token\":{\"expires_at\":\"2026-12-01T21:09:00.000000Z\",\"catalog\":["
                        "{\"type\":\"identity\",\"endpoints\":[{\"interface\":\"public\",\"url\":\"http://k\"}]},"
                        "{\"type\":\"placement\",\"endpoints\":["
                        "{\"interface\":\"internal\",\"region_id\":\"R1\",\"url\":\"http://int\"},"
                        "{\"interface\":\"public\",\"region_id\":\"R2\",\"url\":\"http://pub2\"},"
                        "{\"interface\":\"public\",\"region_id\":\"R1\",\"url\":\"http://pub1\"}]}]}}";
        int64_t exp = 0;
        char *url = NULL;

        CHECK_INT(hpw_pj_keystone_token(t, strlen(t), "placement", "public", NULL, &exp, &url), ==, HPW_OK);
        CHECK_INT(exp, ==, 1796159340);
        CHECK_STR(url, "http://pub2");
        free(url);
        CHECK_INT(hpw_pj_keystone_token(t, strlen(t), "placement", "public", "R1", &exp, &url), ==, HPW_OK);
        CHECK_STR(url, "http://pub1");
        free(url);
        CHECK_INT(hpw_pj_keystone_token(t, strlen(t), "placement", "admin", NULL, &exp, &url), ==, HPW_OK);
        CHECK(url == NULL);
        CHECK_INT(hpw_pj_keystone_token("{}", 2, "placement", "public", NULL, &exp, &url), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_pj_time("2026-12-01T21:09:00Z"), ==, 1796159340);
        CHECK_INT(hpw_pj_time("2026-12-01T21:09:00+02:00"), ==, -1);
        CHECK_INT(hpw_pj_time("yesterday"), ==, -1);
}

TEST(token_renewed_before_it_expires)
{
        CHECK_INT(pl_renew_at(1000, 1000 + 3600), ==, 1000 + 3600 - PL_RENEW_BEFORE_S);
        CHECK_INT(pl_renew_at(1000, 1000 + 120), ==, 1000 + 60);   /* short-lived: at half its life */
        CHECK_INT(pl_renew_at(1000, 1001), ==, 1001);
        CHECK_INT(pl_renew_at(1000, 1000), ==, 0);
        CHECK_INT(pl_renew_at(1000, 0), ==, 0);
}

TEST(urls_must_be_http)
{
        CHECK_INT(pl_url_ok("http://127.0.0.1:8778"), ==, 1);
        CHECK_INT(pl_url_ok("https://placement.example/placement"), ==, 1);
        CHECK_INT(pl_url_ok("ftp://x"), ==, 0);
        CHECK_INT(pl_url_ok("http://x/?a=b"), ==, 0);
        CHECK_INT(pl_url_ok("http://x y"), ==, 0);
        CHECK_INT(pl_url_ok(NULL), ==, 0);
}

TEST_MAIN()
