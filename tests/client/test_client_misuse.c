/* The misuse table of libhpwarm: every exported entry (every symbol of
 * client/libhpwarm.map) against each way a caller can break its stated
 * preconditions (hpwarm.h, "Misuse"): a NULL handle, a NULL out-parameter,
 * request, name or list item, a request without its HPW_*_INIT size, a
 * value the call does not take.  Each row expects its documented error, no
 * out-parameter written, nothing sent (status 0, no problem) and, on a
 * call with a handle, a message naming the call; destructors and the
 * handle-less readers take NULL.  The table must name every symbol of the
 * map, so a new entry cannot ship without its rows.  The handle points at
 * a port nobody listens on: a row whose precondition did not hold back the
 * call would come back HPW_E_UNREACHABLE, not the error it expects. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hpwarm.h"

/* What every out-parameter holds before a row: a call that writes one on a
 * refusal is caught. */
static char sentinel;
#define SENT ((void *)&sentinel)

static struct hpw *h;
static struct hpw_health *o_health;
static struct hpw_node_list *o_nodes;
static struct hpw_node *o_node;
static struct hpw_reserve_result *o_reserve;
static struct hpw_elastic *o_elastic;
static struct hpw_pool_list *o_pools;
static struct hpw_pool *o_pool;
static struct hpw_stock *o_stock;
static struct hpw_handoff *o_handoff;
static struct hpw_fleet *o_fleet;
static struct hpw_prom_placement *o_prom;
static struct hpw_placement *o_placement;
static struct hpw_placement_sync *o_sync;
static struct hpw *o_handle;
static bool o_created;

static void reset_outs(void)
{
        o_health = SENT;
        o_nodes = SENT;
        o_node = SENT;
        o_reserve = SENT;
        o_elastic = SENT;
        o_pools = SENT;
        o_pool = SENT;
        o_stock = SENT;
        o_handoff = SENT;
        o_fleet = SENT;
        o_prom = SENT;
        o_placement = SENT;
        o_sync = SENT;
        o_handle = SENT;
        o_created = true;
}

static void check_outs(void)
{
        CHECK(o_health == SENT);
        CHECK(o_nodes == SENT);
        CHECK(o_node == SENT);
        CHECK(o_reserve == SENT);
        CHECK(o_elastic == SENT);
        CHECK(o_pools == SENT);
        CHECK(o_pool == SENT);
        CHECK(o_stock == SENT);
        CHECK(o_handoff == SENT);
        CHECK(o_fleet == SENT);
        CHECK(o_prom == SENT);
        CHECK(o_placement == SENT);
        CHECK(o_sync == SENT);
        CHECK(o_handle == SENT);
        CHECK(o_created);
}

/* The exported entries the table covers, by name. */
static const char *covered[128];
static size_t n_covered;

static void cover(const char *fn)
{
        for (size_t i = 0; i < n_covered; i++)
                if (strcmp(covered[i], fn) == 0)
                        return;
        CHECK(n_covered < sizeof(covered) / sizeof(covered[0]));
        covered[n_covered++] = fn;
}

static size_t rows;

/* FN ARGS must answer WANT, write no out-parameter and send nothing; with
 * a handle (WANT not HPW_E_NULL_HANDLE), its message names FN. */
#define MISUSE(want, fn, args)                                                                 \
        do {                                                                                   \
                reset_outs();                                                                  \
                enum hpw_error got_ = fn args;                                                 \
                if (got_ != (want))                                                            \
                        fprintf(stderr, "row %s%s: %s, want %s\n", #fn, #args, hpw_strerror(got_), \
                                hpw_strerror(want));                                           \
                CHECK_INT(got_, ==, (want));                                                   \
                check_outs();                                                                  \
                CHECK_INT(hpw_last_status(h), ==, 0);                                          \
                CHECK(hpw_last_problem(h) == NULL);                                            \
                if ((want) != HPW_E_NULL_HANDLE)                                               \
                        CHECK(strncmp(hpw_last_message(h), #fn ": ", strlen(#fn ": ")) == 0);  \
                cover(#fn);                                                                    \
                rows++;                                                                        \
        } while (0)

/* A call that takes NULL without complaint (destructors, readers). */
#define TAKES_NULL(fn, args)          \
        do {                          \
                fn args;              \
                cover(#fn);           \
                rows++;               \
        } while (0)

static void handle_up(void)
{
        CHECK_INT(hpw_new("http://127.0.0.1:1", &h), ==, HPW_OK);
        CHECK_INT(hpw_set_retry(h, 1, 1, 1), ==, HPW_OK);
        CHECK_INT(hpw_set_timeouts(h, 200, 500), ==, HPW_OK);
}

static void rows_handle(void)
{
        /* hpw_new: no handle to name, so no message either. */
        reset_outs();
        CHECK_INT(hpw_new(NULL, NULL), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_new("ftp://nope", &o_handle), ==, HPW_E_INVALID);
        CHECK_INT(hpw_new("", &o_handle), ==, HPW_E_INVALID);
        check_outs();
        cover("hpw_new");
        rows += 3;

        MISUSE(HPW_E_NULL_HANDLE, hpw_set_timeouts, (NULL, 1, 1));
        MISUSE(HPW_E_NULL_HANDLE, hpw_set_token, (NULL, "t"));
        MISUSE(HPW_E_INVALID, hpw_set_token, (h, ""));
        MISUSE(HPW_E_INVALID, hpw_set_token, (h, "a\nb"));
        MISUSE(HPW_E_INVALID, hpw_set_token, (h, "a\rb"));
        MISUSE(HPW_E_NULL_HANDLE, hpw_set_token_file, (NULL, "/nonexistent"));
        MISUSE(HPW_E_NULL_HANDLE, hpw_set_tls, (NULL, NULL, NULL, NULL));
        MISUSE(HPW_E_NULL_HANDLE, hpw_set_retry, (NULL, 1, 1, 1));
        MISUSE(HPW_E_INVALID, hpw_set_retry, (h, 0, 1, 1));
        MISUSE(HPW_E_INVALID, hpw_set_retry, (h, 1, 0, 1));
        MISUSE(HPW_E_INVALID, hpw_set_retry, (h, 1, 10, 9));
        TAKES_NULL(hpw_set_log, (NULL, NULL, NULL));
        TAKES_NULL(hpw_cancel, (NULL));
        TAKES_NULL(hpw_free, (NULL));

        /* The readers of the last answer take NULL and say "nothing". */
        CHECK(hpw_last_problem(NULL) == NULL);
        CHECK_STR(hpw_last_message(NULL), "");
        CHECK_INT(hpw_last_status(NULL), ==, 0);
        CHECK_INT(hpw_last_slug(NULL), ==, HPW_SLUG_UNKNOWN);
        CHECK_STR(hpw_last_body(NULL), "");
        cover("hpw_last_problem");
        cover("hpw_last_message");
        cover("hpw_last_status");
        cover("hpw_last_slug");
        cover("hpw_last_body");
}

static void rows_nodes(void)
{
        struct hpw_elastic_policy pol = { .min = 0, .max = 4 };

        MISUSE(HPW_E_NULL_HANDLE, hpw_health, (NULL, &o_health));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_health, (h, NULL));
        MISUSE(HPW_E_NULL_HANDLE, hpw_nodes, (NULL, &o_nodes));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_nodes, (h, NULL));
        MISUSE(HPW_E_NULL_HANDLE, hpw_node, (NULL, 0, &o_node));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_node, (h, 0, NULL));
        MISUSE(HPW_E_INVALID, hpw_node, (h, -1, &o_node));
        MISUSE(HPW_E_NULL_HANDLE, hpw_reserve, (NULL, 0, 2u << 20, 1, false, &o_reserve));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_reserve, (h, 0, 2u << 20, 1, false, NULL));
        MISUSE(HPW_E_INVALID, hpw_reserve, (h, -1, 2u << 20, 1, false, &o_reserve));
        MISUSE(HPW_E_INVALID, hpw_reserve, (h, 0, 0, 1, false, &o_reserve));
        MISUSE(HPW_E_NULL_HANDLE, hpw_set_elastic, (NULL, 0, 2u << 20, &pol, &o_elastic));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_set_elastic, (h, 0, 2u << 20, &pol, NULL));
        MISUSE(HPW_E_INVALID, hpw_set_elastic, (h, -1, 2u << 20, &pol, &o_elastic));
        MISUSE(HPW_E_INVALID, hpw_set_elastic, (h, 0, 0, &pol, &o_elastic));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_set_elastic, (h, 0, 2u << 20, NULL, &o_elastic));
}

static void rows_stock(void)
{
        struct hpw_stock_target t = HPW_STOCK_TARGET_INIT;
        const struct hpw_stock_target *one[] = { &t }, *null_item[] = { NULL };

        t.node = 0;
        t.page_size_bytes = 2u << 20;
        t.size_bytes = 4u << 20;
        t.count = 1;
        MISUSE(HPW_E_NULL_HANDLE, hpw_stock_get, (NULL, &o_stock));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_stock_get, (h, NULL));
        MISUSE(HPW_E_NULL_HANDLE, hpw_stock_wait_change, (NULL, 0, 1, &o_stock));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_stock_wait_change, (h, 0, 1, NULL));
        MISUSE(HPW_E_INVALID, hpw_stock_wait_change, (h, 0, HPW_STOCK_WAIT_MAX_S + 1, &o_stock));
        MISUSE(HPW_E_NULL_HANDLE, hpw_stock_set, (NULL, one, 1, &o_stock));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_stock_set, (h, one, 1, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_stock_set, (h, NULL, 1, &o_stock));
        MISUSE(HPW_E_INVALID, hpw_stock_set, (h, one, HPW_STOCK_MAX_TARGETS + 1, &o_stock));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_stock_set, (h, null_item, 1, &o_stock));
        t.size = 0;
        MISUSE(HPW_E_STRUCT_SIZE, hpw_stock_set, (h, one, 1, &o_stock));
        t.size = sizeof(size_t);
        MISUSE(HPW_E_STRUCT_SIZE, hpw_stock_set, (h, one, 1, &o_stock));
        t.size = sizeof(t);
        t.node = -1;
        MISUSE(HPW_E_INVALID, hpw_stock_set, (h, one, 1, &o_stock));
        t.node = 0;
        t.page_size_bytes = 0;
        MISUSE(HPW_E_INVALID, hpw_stock_set, (h, one, 1, &o_stock));
        t.page_size_bytes = 2u << 20;
        t.size_bytes = 0;
        MISUSE(HPW_E_INVALID, hpw_stock_set, (h, one, 1, &o_stock));
        t.size_bytes = 4u << 20;
        t.count = 0;
        MISUSE(HPW_E_INVALID, hpw_stock_set, (h, one, 1, &o_stock));
}

static void rows_fleet(void)
{
        const char *urls[] = { "http://127.0.0.1:1" };
        struct hpw_prom_place_opts o = HPW_PROM_PLACE_OPTS_INIT;

        MISUSE(HPW_E_NULL_HANDLE, hpw_fleet_get, (NULL, urls, 1, HPW_FLEET_NODES, &o_fleet));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_fleet_get, (h, urls, 1, HPW_FLEET_NODES, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_fleet_get, (h, NULL, 1, HPW_FLEET_NODES, &o_fleet));
        MISUSE(HPW_E_INVALID, hpw_fleet_get, (h, urls, 1, (enum hpw_fleet_what)3, &o_fleet));
        MISUSE(HPW_E_INVALID, hpw_fleet_get, (h, urls, 1, (enum hpw_fleet_what)-1, &o_fleet));

        o.prometheus_url = "http://127.0.0.1:1";
        o.size_bytes = 4u << 20;
        MISUSE(HPW_E_NULL_HANDLE, hpw_prom_place, (NULL, &o, &o_prom));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_prom_place, (h, &o, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_prom_place, (h, NULL, &o_prom));
        o.size = 0;
        MISUSE(HPW_E_STRUCT_SIZE, hpw_prom_place, (h, &o, &o_prom));
        o.size = sizeof(o);
        o.prometheus_url = NULL;
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_prom_place, (h, &o, &o_prom));
        o.prometheus_url = "http://127.0.0.1:1";
        o.size_bytes = 0;
        MISUSE(HPW_E_INVALID, hpw_prom_place, (h, &o, &o_prom));
        o.size_bytes = 3u << 20;   /* not whole 2 MiB pages */
        MISUSE(HPW_E_INVALID, hpw_prom_place, (h, &o, &o_prom));
        o.size_bytes = 4u << 20;
        o.host_label = "__name__";
        MISUSE(HPW_E_INVALID, hpw_prom_place, (h, &o, &o_prom));
        o.host_label = NULL;
        o.warm_name = "";
        MISUSE(HPW_E_INVALID, hpw_prom_place, (h, &o, &o_prom));
        o.warm_name = NULL;
        o.url_template = "http://{node}";
        MISUSE(HPW_E_INVALID, hpw_prom_place, (h, &o, &o_prom));
}

static void rows_pools(void)
{
        static char long_name[66];
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;

        memset(long_name, 'a', 65);   /* one over the 64 a name may have */
        w.size_bytes = 2u << 20;
        MISUSE(HPW_E_NULL_HANDLE, hpw_pools, (NULL, &o_pools));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_pools, (h, NULL));

        MISUSE(HPW_E_NULL_HANDLE, hpw_pool, (NULL, "p", &o_pool));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_pool, (h, "p", NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_pool, (h, NULL, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_pool, (h, "", &o_pool));
        MISUSE(HPW_E_INVALID, hpw_pool, (h, long_name, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_pool, (h, "../etc", &o_pool));
        MISUSE(HPW_E_INVALID, hpw_pool, (h, "-p", &o_pool));

        MISUSE(HPW_E_NULL_HANDLE, hpw_warm, (NULL, "p", &w, &o_pool, &o_created));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_warm, (h, "p", &w, NULL, &o_created));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_warm, (h, NULL, &w, &o_pool, &o_created));
        MISUSE(HPW_E_INVALID, hpw_warm, (h, "", &w, &o_pool, &o_created));
        MISUSE(HPW_E_INVALID, hpw_warm, (h, long_name, &w, &o_pool, &o_created));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_warm, (h, "p", NULL, &o_pool, &o_created));
        w.size = 0;
        MISUSE(HPW_E_STRUCT_SIZE, hpw_warm, (h, "p", &w, &o_pool, &o_created));
        w.size = sizeof(size_t) + sizeof(int);   /* size and node only */
        MISUSE(HPW_E_STRUCT_SIZE, hpw_warm, (h, "p", &w, &o_pool, &o_created));
        w.size = sizeof(w);
        w.node = -1;
        MISUSE(HPW_E_INVALID, hpw_warm, (h, "p", &w, &o_pool, &o_created));
        w.node = 0;
        w.size_bytes = 0;
        MISUSE(HPW_E_INVALID, hpw_warm, (h, "p", &w, &o_pool, &o_created));

        MISUSE(HPW_E_NULL_HANDLE, hpw_wait, (NULL, "p", 0, NULL, NULL, &o_pool));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_wait, (h, "p", 0, NULL, NULL, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_wait, (h, NULL, 0, NULL, NULL, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_wait, (h, "", 0, NULL, NULL, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_wait, (h, long_name, 0, NULL, NULL, &o_pool));

        MISUSE(HPW_E_NULL_HANDLE, hpw_claim, (NULL, "p", &o_pool));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_claim, (h, "p", NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_claim, (h, NULL, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_claim, (h, "a b", &o_pool));

        MISUSE(HPW_E_NULL_HANDLE, hpw_claim_pid, (NULL, "p", 1, &o_pool));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_claim_pid, (h, "p", 1, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_claim_pid, (h, NULL, 1, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_claim_pid, (h, "", 1, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_claim_pid, (h, "p", 0, &o_pool));
        MISUSE(HPW_E_INVALID, hpw_claim_pid, (h, "p", -1, &o_pool));

        MISUSE(HPW_E_NULL_HANDLE, hpw_release, (NULL, "p"));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_release, (h, NULL));
        MISUSE(HPW_E_INVALID, hpw_release, (h, ""));
        MISUSE(HPW_E_INVALID, hpw_release, (h, long_name));
}

static void rows_handoff(void)
{
        const char *one[] = { "p" }, *two[] = { "p", "q" }, *null_item[] = { NULL }, *bad[] = { "a/b" };
        static const char *many[HPW_HANDOFF_MAX_POOLS + 1];

        for (size_t i = 0; i <= HPW_HANDOFF_MAX_POOLS; i++)
                many[i] = "p";
        MISUSE(HPW_E_NULL_HANDLE, hpw_handoff, (NULL, "qemu", one, 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff, (h, "qemu", one, 1, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff, (h, NULL, one, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff, (h, "xen", one, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff, (h, "", one, 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff, (h, "qemu", NULL, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff, (h, "qemu", one, 0, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff, (h, "qemu", many, HPW_HANDOFF_MAX_POOLS + 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff, (h, "qemu", null_item, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff, (h, "qemu", bad, 1, &o_handoff));

        MISUSE(HPW_E_NULL_HANDLE, hpw_handoff_as, (NULL, "qemu", one, one, 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff_as, (h, "qemu", one, one, 1, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff_as, (h, NULL, one, one, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff_as, (h, "bochs", one, one, 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff_as, (h, "qemu", NULL, one, 1, &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff_as, (h, "qemu", one, one, 0, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff_as, (h, "qemu", one, NULL, 1, &o_handoff));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_handoff_as, (h, "qemu", two, (const char *const[]){ "p", NULL }, 2,
                                                     &o_handoff));
        MISUSE(HPW_E_INVALID, hpw_handoff_as, (h, "qemu", one, bad, 1, &o_handoff));
}

/* OpenStack Placement (client/src/fleet/placement.c). */
static void rows_placement(void)
{
        struct hpw_placement_opts o = HPW_PLACEMENT_OPTS_INIT;

        o.placement_url = "http://127.0.0.1:1";
        o.compute_node = "cn1";
        MISUSE(HPW_E_NULL_HANDLE, hpw_placement_new, (NULL, &o, &o_placement));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_placement_new, (h, &o, NULL));
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_placement_new, (h, NULL, &o_placement));
        o.size = 0;
        MISUSE(HPW_E_STRUCT_SIZE, hpw_placement_new, (h, &o, &o_placement));
        o.size = sizeof(o);
        o.compute_node = NULL;
        MISUSE(HPW_E_NULL_ARGUMENT, hpw_placement_new, (h, &o, &o_placement));
        /* A bad compute node name or URL is HPW_E_INVALID with the message
         * the CLI prints as its usage error (placement.keystone). */
        MISUSE(HPW_E_NULL_HANDLE, hpw_placement_sync, (NULL, false, &o_sync));
        TAKES_NULL(hpw_placement_free, (NULL));
        TAKES_NULL(hpw_placement_sync_free, (NULL));
}

/* Destructors take NULL; so do the words and the catalog's readers, which
 * answer "nothing" for NULL or an unknown value. */
static void rows_takes_null(void)
{
        char buf[16] = "x";

        TAKES_NULL(hpw_health_free, (NULL));
        TAKES_NULL(hpw_node_free, (NULL));
        TAKES_NULL(hpw_node_list_free, (NULL));
        TAKES_NULL(hpw_reserve_result_free, (NULL));
        TAKES_NULL(hpw_elastic_free, (NULL));
        TAKES_NULL(hpw_pool_free, (NULL));
        TAKES_NULL(hpw_pool_list_free, (NULL));
        TAKES_NULL(hpw_stock_free, (NULL));
        TAKES_NULL(hpw_handoff_free, (NULL));
        TAKES_NULL(hpw_fleet_free, (NULL));
        TAKES_NULL(hpw_prom_placement_free, (NULL));

        CHECK(hpw_pool_handoff(NULL, "qemu") == NULL);
        CHECK(hpw_pool_handoff(NULL, NULL) == NULL);
        cover("hpw_pool_handoff");
        /* A NULL buffer: nothing written; a zero length leaves BUF alone. */
        TAKES_NULL(hpw_format_page_size, (2u << 20, NULL, 16));
        hpw_format_page_size(2u << 20, buf, 0);
        CHECK_STR(buf, "x");
        CHECK_INT(hpw_slug_from_name(NULL), ==, HPW_SLUG_UNKNOWN);
        CHECK_INT(hpw_slug_from_name(""), ==, HPW_SLUG_UNKNOWN);
        CHECK_STR(hpw_slug_name((enum hpw_slug)-1), "");
        CHECK_INT(hpw_slug_status((enum hpw_slug)100000), ==, 0);
        CHECK(!hpw_slug_retryable((enum hpw_slug)-1));
        CHECK_STR(hpw_pool_state_name((enum hpw_pool_state)99), "unknown");
        CHECK_STR(hpw_strerror((enum hpw_error)-5), "unknown error");
        CHECK(hpw_version() != NULL);
        CHECK_INT(hpw_version_num(), ==, HPW_VERSION_NUM);
        cover("hpw_slug_from_name");
        cover("hpw_slug_name");
        cover("hpw_slug_status");
        cover("hpw_slug_retryable");
        cover("hpw_pool_state_name");
        cover("hpw_strerror");
        cover("hpw_version");
        cover("hpw_version_num");
}

/* Every symbol of the version script has rows above. */
static void check_every_symbol_covered(void)
{
        FILE *f = fopen(HPW_LIBMAP, "r");
        char line[256];
        size_t symbols = 0;

        CHECK(f != NULL);
        while (fgets(line, sizeof(line), f)) {
                char name[128];
                bool found = false;

                if (sscanf(line, " %127[a-z0-9_];", name) != 1 || strncmp(name, "hpw_", 4) != 0)
                        continue;
                symbols++;
                for (size_t i = 0; i < n_covered && !found; i++)
                        found = strcmp(covered[i], name) == 0;
                if (!found)
                        fprintf(stderr, "%s: exported but has no row in the misuse table\n", name);
                CHECK(found);
        }
        fclose(f);
        CHECK_U64(symbols, >, 50);
        CHECK_U64(symbols, ==, n_covered);
}

TEST(every_exported_entry_refuses_its_misuse)
{
        handle_up();
        rows_handle();
        rows_nodes();
        rows_stock();
        rows_fleet();
        rows_pools();
        rows_handoff();
        rows_placement();
        rows_takes_null();
        check_every_symbol_covered();
        fprintf(stderr, "%zu rows, %zu entries\n", rows, n_covered);
        hpw_free(h);
}

/* A refusal's message names the call and the rule that failed, and the
 * next call on the handle starts clean. */
TEST(refusal_names_the_call_and_the_rule)
{
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;
        struct hpw_pool *p = SENT;

        handle_up();
        w.size_bytes = 2u << 20;
        w.node = -1;
        CHECK_INT(hpw_warm(h, "p", &w, &p, NULL), ==, HPW_E_INVALID);
        CHECK_STR(hpw_last_message(h), "hpw_warm: req->node >= 0 does not hold");
        w.node = 0;
        w.size = 0;
        CHECK_INT(hpw_warm(h, "p", &w, &p, NULL), ==, HPW_E_STRUCT_SIZE);
        CHECK_STR(hpw_last_message(h), "hpw_warm: req->size >= HPW_WARM_REQUEST_V1_SIZE does not hold");
        CHECK_INT(hpw_pool(h, NULL, &p), ==, HPW_E_NULL_ARGUMENT);
        CHECK_STR(hpw_last_message(h), "hpw_pool: (name) != NULL does not hold");
        CHECK(p == SENT);
        CHECK_INT(hpw_set_timeouts(h, 200, 500), ==, HPW_OK);
        CHECK_STR(hpw_last_message(h), "");
        hpw_free(h);
}

/* The new values have words of their own and count as misuse; the errors
 * of a call that ran do not. */
TEST(misuse_errors_have_words_and_a_class)
{
        static const enum hpw_error misuse[] = { HPW_E_INVALID, HPW_E_NULL_HANDLE, HPW_E_NULL_ARGUMENT,
                                                 HPW_E_STRUCT_SIZE };

        CHECK_INT(HPW_E_NULL_HANDLE, ==, 20);
        CHECK_INT(HPW_E_NULL_ARGUMENT, ==, 21);
        CHECK_INT(HPW_E_STRUCT_SIZE, ==, 22);
        for (size_t i = 0; i < sizeof(misuse) / sizeof(misuse[0]); i++) {
                CHECK(hpw_error_is_misuse(misuse[i]));
                CHECK(strcmp(hpw_strerror(misuse[i]), "unknown error") != 0);
                for (size_t j = 0; j < i; j++)
                        CHECK(strcmp(hpw_strerror(misuse[i]), hpw_strerror(misuse[j])) != 0);
        }
        for (int e = HPW_OK; e <= HPW_E_CANCELLED; e++)
                if (e != HPW_E_INVALID)
                        CHECK(!hpw_error_is_misuse((enum hpw_error)e));
}

TEST_MAIN()
