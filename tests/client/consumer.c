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
        hpw_free(h);
        return e == HPW_E_UNREACHABLE ? 0 : 1;
}
