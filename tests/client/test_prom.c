/* prom.c's pure parts and json.c's reading of Prometheus answers: the
 * placement query, the URL template, query escaping, label names, and
 * vectors hostile or malformed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "check.h"
#include "internal.h"

TEST(label_names_follow_prometheus)
{
        CHECK_INT(hpw_prom_label_valid("instance"), ==, 1);
        CHECK_INT(hpw_prom_label_valid("_x9"), ==, 1);
        CHECK_INT(hpw_prom_label_valid("__name__"), ==, 0);
        CHECK_INT(hpw_prom_label_valid("9x"), ==, 0);
        CHECK_INT(hpw_prom_label_valid("a-b"), ==, 0);
        CHECK_INT(hpw_prom_label_valid("a\"b"), ==, 0);
        CHECK_INT(hpw_prom_label_valid(""), ==, 0);
        CHECK_INT(hpw_prom_label_valid(NULL), ==, 0);
}

TEST(url_template_takes_only_host_names)
{
        char b[64];

        CHECK_INT(hpw_prom_url("http://{instance}", "instance", "h1:9477", b, sizeof(b)), ==, 0);
        CHECK_STR(b, "http://h1:9477");
        CHECK_INT(hpw_prom_url("https://{node}:9477/x", "node", "[::1]", b, sizeof(b)), ==, 0);
        CHECK_STR(b, "https://[::1]:9477/x");
        static const char *const bad[] = { "", "a/b", "a@b", "a?b", "a b", "a#b", "a%2f", "h\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_INT(hpw_prom_url("http://{instance}", "instance", bad[i], b, sizeof(b)), ==, -EINVAL);
        CHECK_INT(hpw_prom_url("http://{host}", "instance", "h1", b, sizeof(b)), ==, -EINVAL);
        CHECK_INT(hpw_prom_url("http://{instance}", "instance", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                               b, sizeof(b)), ==, -ENAMETOOLONG);
}

TEST(escape_keeps_only_unreserved)
{
        char *e = hpw_prom_escape("up == 1 and {a=\"b\"}~._-");
        CHECK_STR(e, "up%20%3D%3D%201%20and%20%7Ba%3D%22b%22%7D~._-");
        free(e);
}

TEST(query_bounds_age_size_and_count)
{
        char *q = hpw_prom_query("instance", 1ull << 30, 2ull << 20, 60, 32);

        CHECK_INT(q != NULL, ==, 1);
        CHECK_INT(strstr(q, "topk(32, ") != NULL, ==, 1);
        CHECK_INT(strstr(q, "size_bytes=\"1073741824\"") != NULL, ==, 1);
        CHECK_INT(strstr(q, ">= 1073741824") != NULL, ==, 1);
        CHECK_INT(strstr(q, "up == 1 and time() - timestamp(up) <= 60") != NULL, ==, 1);
        CHECK_INT(strstr(q, "state=\"available\"") != NULL, ==, 1);
        free(q);
        CHECK_INT(hpw_prom_query("bad-label", 1, 1, 1, 1) == NULL, ==, 1);
}

static enum hpw_error vec(const char *body, size_t *n, size_t *skipped, char *why, struct hpw_prom_sample **s)
{
        return hpw_json_prom_vector(body, strlen(body), "instance", s, n, skipped, why, 256);
}

TEST(vector_samples_and_skips)
{
        struct hpw_prom_sample *s = NULL;
        size_t n = 0, skipped = 0;
        char why[256];
        const char *body =
                "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                "{\"metric\":{\"instance\":\"h1:1\",\"hpw_kind\":\"free\",\"numa_node\":\"1\",\"page_size_bytes\":"
                "\"2097152\"},\"value\":[1.5,\"4194304\"]},"
                "{\"metric\":{\"instance\":\"h2:1\",\"hpw_kind\":\"free\",\"numa_node\":\"-1\",\"page_size_bytes\":"
                "\"2097152\"},\"value\":[1.5,\"1\"]},"
                "{\"metric\":{\"instance\":\"h3:1\",\"hpw_kind\":\"free\",\"numa_node\":\"0\",\"page_size_bytes\":"
                "\"2097152\"},\"value\":[1.5,\"+Inf\"]},"
                "{\"metric\":{\"hpw_kind\":\"free\",\"numa_node\":\"0\",\"page_size_bytes\":\"2097152\"},"
                "\"value\":[1.5,\"1\"]},"
                "{\"metric\":{\"instance\":\"h4:1\",\"hpw_kind\":\"free\",\"numa_node\":\"0\",\"page_size_bytes\":"
                "\"2097152\"},\"value\":[1.5,7]}]}}";

        CHECK_INT(vec(body, &n, &skipped, why, &s), ==, HPW_OK);
        CHECK_INT(n, ==, 1);
        CHECK_INT(skipped, ==, 4);
        CHECK_STR(s[0].host, "h1:1");
        CHECK_STR(s[0].kind, "free");
        CHECK_INT(s[0].node, ==, 1);
        CHECK_INT(s[0].page_size, ==, 2097152);
        CHECK_INT(s[0].value, ==, 4194304);
        hpw_prom_samples_free(s, n);
}

TEST(vector_refusals)
{
        static const struct {
                const char *body;
                enum hpw_error err;
                const char *why;
        } cases[] = {
                { "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error\"}", HPW_E_BAD_REQUEST,
                  "Prometheus refused the query: bad_data: parse error" },
                { "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", HPW_E_PROTOCOL,
                  "answer is not an instant vector" },
                { "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}", HPW_E_PROTOCOL,
                  "answer is not an instant vector" },
                { "[1]", HPW_E_PROTOCOL, "answer is not a JSON object" },
                { "{\"status\":1}", HPW_E_PROTOCOL, "answer has no \"status\": not the Prometheus HTTP API" },
                { "{\"status\":\"success\"} trailing", HPW_E_PROTOCOL, "answer is not a JSON object" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct hpw_prom_sample *s = (void *)1;
                size_t n = 99, skipped = 99;
                char why[256];

                CHECK_INT(vec(cases[i].body, &n, &skipped, why, &s), ==, cases[i].err);
                CHECK_STR(why, cases[i].why);
                CHECK_INT(n, ==, 99);   /* untouched on failure */
        }
}

TEST(place_refuses_bad_options_before_sending)
{
        struct hpw *h = NULL;
        struct hpw_prom_placement *p = NULL;
        struct hpw_prom_place_opts o = HPW_PROM_PLACE_OPTS_INIT;

        o.prometheus_url = "http://127.0.0.1:1";
        o.size_bytes = 3u << 20;

        CHECK_INT(hpw_new("http://127.0.0.1:1", &h), ==, HPW_OK);
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_INVALID);          /* 3M in 2M pages */
        o.size_bytes = 4u << 20;
        o.size = 8;
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_STRUCT_SIZE);      /* size below the first version */
        o.size = sizeof(o);
        o.host_label = "__name__";
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_INVALID);
        o.host_label = NULL;
        o.url_template = "http://{node}";
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_INVALID);          /* template lacks {instance} */
        o.url_template = NULL;
        o.warm_name = "bad/name";
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_INVALID);
        o.warm_name = NULL;
        o.prometheus_url = "unix:///run/p.sock";
        CHECK_INT(hpw_prom_place(h, &o, &p), ==, HPW_E_INVALID);
        CHECK_INT(p == NULL, ==, 1);
        hpw_free(h);
}

struct canceller {
        struct hpw *h;
        atomic_bool done;
};

/* Cancel again and again until the call returns: whenever the cancel
 * lands, inside the query, the call must end cancelled. */
static void *cancel_loop(void *arg)
{
        struct canceller *c = arg;

        while (!atomic_load(&c->done)) {
                hpw_cancel(c->h);
                nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
        }
        return NULL;
}

TEST(cancel_stops_a_query_prometheus_never_answers)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        char url[64];
        struct hpw *h = NULL;
        struct hpw_prom_placement *p = NULL;
        struct hpw_prom_place_opts o = HPW_PROM_PLACE_OPTS_INIT;
        struct canceller c = { 0 };
        pthread_t t;

        /* Listening, never accepting: connections complete, nobody answers. */
        CHECK_INT(fd >= 0, ==, 1);
        CHECK_INT(bind(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
        CHECK_INT(listen(fd, 4), ==, 0);
        CHECK_INT(getsockname(fd, (struct sockaddr *)&a, &alen), ==, 0);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
        CHECK_INT(hpw_new("http://127.0.0.1:1", &h), ==, HPW_OK);
        CHECK_INT(hpw_set_timeouts(h, 0, 0), ==, HPW_OK);   /* no deadline: only the cancel ends it */
        o.prometheus_url = url;
        o.size_bytes = 2u << 20;
        c.h = h;
        CHECK_INT(pthread_create(&t, NULL, cancel_loop, &c), ==, 0);
        enum hpw_error err = hpw_prom_place(h, &o, &p);
        atomic_store(&c.done, true);
        pthread_join(t, NULL);
        CHECK_INT(err, ==, HPW_E_CANCELLED);
        CHECK_INT(p == NULL, ==, 1);
        hpw_free(h);
        close(fd);
}

TEST_MAIN()
