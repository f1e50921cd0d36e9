/* placement.c's pure parts and placement_json.c's bodies: Placement's and
 * Keystone's answers, good and hostile, the token's renewal and the URLs
 * taken.  What the inventory counts is offer.c's (test_offer.c). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "placement.h"

/* The classes of a node with 2 MiB and 1 GiB pages, as a sync names them. */
static const char *const classes[] = { "CUSTOM_HPWARM_2M", "CUSTOM_HPWARM_1G" };
#define N_CLASSES (sizeof(classes) / sizeof(classes[0]))

/* Any page size is a class, named by one rule. */
TEST(class_names_follow_the_page_size)
{
        CHECK_STR(pl_class_name(2ull << 20), "CUSTOM_HPWARM_2M");
        CHECK_STR(pl_class_name(1ull << 30), "CUSTOM_HPWARM_1G");
        CHECK_STR(pl_class_name(64ull << 10), "CUSTOM_HPWARM_64K");
        CHECK_STR(pl_class_name(16ull << 20), "CUSTOM_HPWARM_16M");
        CHECK_STR(pl_class_name(512ull << 20), "CUSTOM_HPWARM_512M");
        CHECK_STR(pl_class_name(16ull << 30), "CUSTOM_HPWARM_16G");
        CHECK_STR(pl_class_name(1ull << 10), "CUSTOM_HPWARM_1K");
        CHECK_STR(pl_class_name(1ull << 63), "CUSTOM_HPWARM_8E");
        CHECK(pl_class_name(2ull << 20) == pl_class_name(2ull << 20));   /* static: one string */
        CHECK(pl_class_name(0) == NULL);
        CHECK(pl_class_name(512) == NULL);
        CHECK(pl_class_name(3ull << 20) == NULL);
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
        struct hpw_pl_inv inv[N_CLASSES];
        uint32_t gen = 0;
        char *others = NULL, *body;

        CHECK_INT(hpw_pj_inventories(b, strlen(b), classes, N_CLASSES, &gen, inv, &others), ==, HPW_OK);
        CHECK_U64(gen, ==, 3);
        CHECK_INT(inv[0].present, ==, 1);
        CHECK_U64(inv[0].total, ==, 10);
        CHECK_U64(inv[0].reserved, ==, 2);
        CHECK_INT(inv[1].present, ==, 0);
        CHECK_STR(others, "{\"CUSTOM_OTHER\":{\"total\":1,\"reserved\":0}}");
        inv[0].total = 12;
        inv[1] = (struct hpw_pl_inv){ .present = true, .total = 1, .reserved = 1 };
        body = hpw_pj_inventories_body(gen, others, classes, N_CLASSES, inv);
        CHECK_STR(body, "{\"inventories\":{\"CUSTOM_OTHER\":{\"total\":1,\"reserved\":0},"
                        "\"CUSTOM_HPWARM_2M\":{\"total\":12,\"reserved\":2,\"min_unit\":1,\"max_unit\":12,"
                        "\"step_size\":1,\"allocation_ratio\":1},"
                        "\"CUSTOM_HPWARM_1G\":{\"total\":1,\"reserved\":1,\"min_unit\":1,\"max_unit\":1,"
                        "\"step_size\":1,\"allocation_ratio\":1}},\"resource_provider_generation\":3}");
        free(body);
        free(others);
        const char *neg = "{\"resource_provider_generation\":3,\"inventories\":{\"CUSTOM_HPWARM_2M\":{\"total\":-1,\"reserved\":0}}}";
        CHECK_INT(hpw_pj_inventories(neg, strlen(neg), classes, N_CLASSES, &gen, inv, &others), ==, HPW_E_PROTOCOL);
        const char *nogen = "{\"inventories\":{}}";
        CHECK_INT(hpw_pj_inventories(nogen, strlen(nogen), classes, N_CLASSES, &gen, inv, &others), ==, HPW_E_PROTOCOL);
}

TEST(usages_and_errors)
{
        const char *u = "{\"resource_provider_generation\":1,\"usages\":{\"CUSTOM_HPWARM_1G\":4,\"VCPU\":2}}";
        const char *e = "{\"errors\":[{\"status\":409,\"code\":\"placement.concurrent_update\","
                        "\"detail\":\"resource provider generation conflict\\n\\n more\"}]}";
        uint32_t used[N_CLASSES] = { 9, 9 };
        char code[64], detail[64];

        CHECK_INT(hpw_pj_usages(u, strlen(u), classes, N_CLASSES, used), ==, HPW_OK);
        CHECK_U64(used[0], ==, 0);
        CHECK_U64(used[1], ==, 4);
        const char *bad = "{\"usages\":{\"CUSTOM_HPWARM_2M\":\"4\"}}";
        CHECK_INT(hpw_pj_usages(bad, strlen(bad), classes, N_CLASSES, used), ==, HPW_E_PROTOCOL);
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
