/* A program outside the tree that uses the installed libhpwarm through
 * pkg-config: it must compile with only <hpwarm.h> and link with -lhpwarm. */
#include <hpwarm.h>
#include <stdio.h>
int main(void)
{
        struct hpw *h = NULL;
        if (hpw_new("http://127.0.0.1:1", &h) != HPW_OK)
                return 1;
        hpw_set_timeouts(h, 200, 300);
        struct hpw_health *x = NULL;
        enum hpw_error e = hpw_health(h, &x);
        printf("%s %s: %s\n", hpw_version(), hpw_strerror(e), hpw_last_message(h));
        hpw_health_free(x);
        /* The stock calls link too: a target is checked before sending. */
        struct hpw_stock *st = NULL;
        struct hpw_stock_target t = { .node = 0, .page_size_bytes = 2u << 20, .size_bytes = 4u << 20, .count = 0 };
        enum hpw_error es = hpw_stock_set(h, &t, 1, &st);
        enum hpw_error eg = hpw_stock_get(h, &st);
        hpw_stock_free(st);
        hpw_free(h);
        return e == HPW_E_UNREACHABLE && es == HPW_E_INVALID && eg == HPW_E_UNREACHABLE ? 0 : 1;
}
