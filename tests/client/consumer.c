/* A scheduler outside the tree, built against the installed libhpwarm with
 * only <hpwarm.h> and `pkg-config --cflags --libs libhpwarm`: it places a
 * pool by the nodes' available pages, warms it, waits with a progress
 * callback that could stop it, and claims it, branching on problem slugs
 * and never on strings.
 *
 *   consumer                 no daemon: the calls link, errors are fresh
 *   consumer URL NAME SIZE   place NAME (SIZE bytes of 2M pages) on URL's
 *                            node with the most available pages, warm,
 *                            wait, claim, release; exit 0 when all worked
 *   consumer --exact URL NAME
 *                            against a real daemon: one page more than the
 *                            best node's `available` is refused (409
 *                            insufficient-hugepages), exactly `available` is
 *                            admitted; a permanent 503 (no hugetlbfs for 1G)
 *                            comes back at once; the error state after each
 *                            refusal is gone at the next call; a wait the
 *                            progress callback stops is HPW_E_CANCELLED and
 *                            the handle's next call works.  The caller
 *                            counts the requests the daemon saw. */
#include <hpwarm.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int on_progress(const struct hpw_pool *p, void *userdata)
{
        (void)userdata;
        fprintf(stderr, "%s: %s %llu/%llu\n", p->name, p->state_name, (unsigned long long)p->bytes_done,
                (unsigned long long)p->size_bytes);
        return 0;     /* a scheduler whose own request was cancelled returns 1 */
}

static int offline(void)
{
        struct hpw *h = NULL;
        struct hpw_health *x = NULL;
        struct hpw_stock *st = NULL;
        struct hpw_stock_target t = HPW_STOCK_TARGET_INIT;
        const struct hpw_stock_target *tp[] = { &t };

        if (hpw_version_num() < HPW_VERSION_NUM)
                return 1;
        if (hpw_new("127.0.0.1:1", &h) != HPW_OK)
                return 1;
        hpw_set_timeouts(h, 200, 300);
        enum hpw_error e = hpw_health(h, &x);
        printf("%s %s: %s\n", hpw_version(), hpw_strerror(e), hpw_last_message(h));
        hpw_health_free(x);
        t.node = 0;
        t.page_size_bytes = 2u << 20;
        t.size_bytes = 4u << 20;  /* count 0: refused before anything is sent */
        enum hpw_error es = hpw_stock_set(h, tp, 1, &st);
        int fresh = hpw_last_status(h) == 0 && hpw_last_problem(h) == NULL;
        hpw_free(h);
        return e == HPW_E_UNREACHABLE && es == HPW_E_INVALID && fresh &&
                       hpw_slug_from_name("no-hugetlbfs") == HPW_SLUG_NO_HUGETLBFS &&
                       !hpw_slug_retryable(HPW_SLUG_NO_HUGETLBFS) && hpw_slug_retryable(HPW_SLUG_BUSY)
               ? 0 : 1;
}

static int stop_at_once(const struct hpw_pool *p, void *userdata)
{
        (void)p;
        ++*(int *)userdata;
        return 1;
}

#define EXPECT(cond)                                                                                   \
        do {                                                                                           \
                if (!(cond)) {                                                                         \
                        fprintf(stderr, "consumer: %s failed (HTTP %d, slug '%s': %s)\n", #cond,       \
                                hpw_last_status(h), hpw_slug_name(hpw_last_slug(h)), hpw_last_message(h)); \
                        goto out;                                                                      \
                }                                                                                      \
        } while (0)

static int exact(const char *url, const char *name)
{
        struct hpw *h = NULL;
        struct hpw_node_list *l = NULL;
        struct hpw_pool *p = NULL;
        struct hpw_warm_request r = HPW_WARM_REQUEST_INIT;
        const uint64_t page = 2u << 20;
        uint64_t avail = 0;
        int node = -1, rc = 1, calls = 0;

        if (hpw_new(url, &h) != HPW_OK)
                return 2;
        EXPECT(hpw_nodes(h, &l) == HPW_OK);
        for (size_t i = 0; i < l->n; i++)
                for (size_t j = 0; j < l->nodes[i]->n_hugepages; j++) {
                        const struct hpw_hugepages *hp = l->nodes[i]->hugepages[j];
                        if (hp->page_size_bytes == page && hp->available_reported && hp->available > avail) {
                                avail = hp->available;
                                node = l->nodes[i]->id;
                        }
                }
        EXPECT(node >= 0 && avail > 0);
        r.node = node;
        r.page_size = page;
        r.size_bytes = (avail + 1) * page;
        EXPECT(hpw_warm(h, name, &r, &p, NULL) == HPW_E_INSUFFICIENT);
        EXPECT(hpw_last_slug(h) == HPW_SLUG_INSUFFICIENT_HUGEPAGES && hpw_last_status(h) == 409);
        hpw_node_list_free(l);
        l = NULL;
        EXPECT(hpw_nodes(h, &l) == HPW_OK);
        EXPECT(hpw_last_status(h) == 200 && hpw_last_problem(h) == NULL && hpw_last_slug(h) == HPW_SLUG_UNKNOWN);

        /* 1 GiB pages are offered, but no hugetlbfs serves them: final. */
        struct hpw_warm_request g = HPW_WARM_REQUEST_INIT;
        g.node = node;
        g.page_size = g.size_bytes = UINT64_C(1) << 30;
        EXPECT(hpw_warm(h, "gig", &g, &p, NULL) == HPW_E_UNAVAILABLE);
        EXPECT(hpw_last_slug(h) == HPW_SLUG_NO_HUGETLBFS && !hpw_slug_retryable(hpw_last_slug(h)));

        r.size_bytes = avail * page;
        EXPECT(hpw_warm(h, name, &r, &p, NULL) == HPW_OK);
        EXPECT(hpw_last_problem(h) == NULL);
        hpw_pool_free(p);
        p = NULL;
        EXPECT(hpw_wait(h, name, 60000, stop_at_once, &calls, &p) == HPW_E_CANCELLED && calls == 1);
        hpw_pool_free(p);
        p = NULL;
        EXPECT(hpw_wait(h, name, 60000, NULL, NULL, &p) == HPW_OK && p->state == HPW_POOL_READY);
        hpw_pool_free(p);
        p = NULL;
        EXPECT(hpw_claim(h, name, &p) == HPW_OK && p->claimed);
        EXPECT(hpw_release(h, name) == HPW_OK);
        printf("%s: %llu available pages on node %d: +1 refused, exact admitted\n", name,
               (unsigned long long)avail, node);
        rc = 0;
out:
        hpw_pool_free(p);
        hpw_node_list_free(l);
        hpw_free(h);
        return rc;
}

int main(int argc, char **argv)
{
        struct hpw *h = NULL;
        struct hpw_node_list *l = NULL;
        struct hpw_pool *p = NULL;
        struct hpw_warm_request r = HPW_WARM_REQUEST_INIT;
        uint64_t best = 0, need;
        int node = -1, rc = 1;
        enum hpw_error e;

        if (argc == 1)
                return offline();
        if (argc == 4 && strcmp(argv[1], "--exact") == 0)
                return exact(argv[2], argv[3]);
        if (argc != 4 || hpw_new(argv[1], &h) != HPW_OK)
                return 2;
        need = strtoull(argv[3], NULL, 0) / (2u << 20);
        if (hpw_nodes(h, &l) != HPW_OK)
                goto out;
        for (size_t i = 0; i < l->n; i++)
                for (size_t j = 0; j < l->nodes[i]->n_hugepages; j++) {
                        const struct hpw_hugepages *hp = l->nodes[i]->hugepages[j];
                        if (hp->page_size_bytes == 2u << 20 && hp->available >= need && hp->available > best) {
                                best = hp->available;
                                node = l->nodes[i]->id;
                        }
                }
        if (node < 0) {
                fprintf(stderr, "no node has %llu available 2M pages\n", (unsigned long long)need);
                goto out;
        }
        r.node = node;
        r.size_bytes = strtoull(argv[3], NULL, 0);
        r.page_size = 2u << 20;
        e = hpw_warm(h, argv[2], &r, &p, NULL);
        if (e == HPW_E_INSUFFICIENT && hpw_last_slug(h) == HPW_SLUG_INSUFFICIENT_HUGEPAGES) {
                fprintf(stderr, "placement raced another pool: %s\n", hpw_last_message(h));
                goto out;
        }
        if (e != HPW_OK)
                goto fail;
        hpw_pool_free(p);
        p = NULL;
        if ((e = hpw_wait(h, argv[2], 60000, on_progress, NULL, &p)) != HPW_OK)
                goto fail;
        hpw_pool_free(p);
        p = NULL;
        if ((e = hpw_claim(h, argv[2], &p)) != HPW_OK || !p->claimed)
                goto fail;
        printf("%s on node %d (%llu available pages), claimed\n", argv[2], node, (unsigned long long)best);
        e = hpw_release(h, argv[2]);
        rc = e == HPW_OK ? 0 : 1;
        if (rc == 0)
                goto out;
fail:
        fprintf(stderr, "%s: %s (HTTP %d, slug '%s')\n", hpw_strerror(e), hpw_last_message(h), hpw_last_status(h),
                hpw_slug_name(hpw_last_slug(h)));
out:
        hpw_pool_free(p);
        hpw_node_list_free(l);
        hpw_free(h);
        return rc;
}
