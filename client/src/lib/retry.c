/* retry: when to try a request again and how long to wait first.
 *
 * Pure policy, no clock and no randomness of its own: the caller passes the
 * time left and a random number, so the rules are table-tested exactly.
 * Only idempotent requests (GET, PUT, DELETE and the claim in this API) are
 * retried, and only for failures that say "try later": no connection, or an
 * answer whose problem slug the catalog marks retryable (problems.c); an
 * answer without a known slug by its status (502/503/504, 429).
 * Retry-After is honoured as a lower bound, up to HPW_RETRY_AFTER_MAX_S; a wait that would end past the
 * caller's deadline means giving up now rather than sleeping in vain. */
#include <string.h>

#include "internal.h"

/* An attempt needs some time to be worth starting at all. */
#define HPW_MIN_ATTEMPT_MS 20

static uint64_t sat_add(uint64_t a, uint64_t b)
{
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t hpw_backoff_ms(const struct hpw_retry_policy *p, unsigned attempt, uint64_t rnd)
{
        uint64_t step = p->base_ms;

        if (attempt == 0)
                attempt = 1;
        for (unsigned i = 1; i < attempt && step < p->cap_ms; i++)
                step = step > UINT64_MAX / 2 ? UINT64_MAX : step * 2;
        if (step > p->cap_ms)
                step = p->cap_ms;
        uint64_t half = step / 2;
        return step - half + rnd % (half + 1);
}

static bool status_retryable(long status)
{
        return status == 429 || status == 502 || status == 503 || status == 504;
}

int64_t hpw_retry_delay(const struct hpw_retry_policy *p, unsigned attempts_done, bool idempotent,
                        enum hpw_error transport, long status, int64_t retry_after_s,
                        uint64_t remaining_ms, uint64_t rnd)
{
        return hpw_retry_delay_slug(p, attempts_done, idempotent, transport, status, HPW_SLUG_UNKNOWN,
                                    retry_after_s, remaining_ms, rnd);
}

int64_t hpw_retry_delay_slug(const struct hpw_retry_policy *p, unsigned attempts_done, bool idempotent,
                             enum hpw_error transport, long status, enum hpw_slug slug,
                             int64_t retry_after_s, uint64_t remaining_ms, uint64_t rnd)
{
        if (!idempotent || attempts_done >= p->max_attempts)
                return -1;
        if (transport != HPW_OK) {
                if (transport != HPW_E_UNREACHABLE)
                        return -1;
        } else if (slug != HPW_SLUG_UNKNOWN ? !hpw_slug_retryable(slug) : !status_retryable(status)) {
                return -1;
        }

        uint64_t delay = hpw_backoff_ms(p, attempts_done, rnd);
        if (transport == HPW_OK && retry_after_s >= 0) {
                /* Clamped before it is multiplied: a hostile or confused
                 * server must not overflow the product or park us for days. */
                uint64_t ra = (uint64_t)(retry_after_s < HPW_RETRY_AFTER_MAX_S ? retry_after_s
                                                                               : HPW_RETRY_AFTER_MAX_S);
                ra *= 1000;
                if (ra > delay)
                        delay = ra;
        }
        if (delay > INT64_MAX)
                delay = INT64_MAX;
        if (remaining_ms != UINT64_MAX && sat_add(delay, HPW_MIN_ATTEMPT_MS) > remaining_ms)
                return -1;
        return (int64_t)delay;
}

enum hpw_error hpw_status_error(long status, const char *slug)
{
        if (status >= 200 && status < 300)
                return HPW_OK;
        switch (status) {
        case 400: case 405: case 413: case 415: case 422:
                return HPW_E_BAD_REQUEST;
        case 401:
                return HPW_E_UNAUTHORIZED;
        case 403:
                return HPW_E_FORBIDDEN;
        case 404:
                return HPW_E_NOT_FOUND;
        case 409:
                if (slug && (strcmp(slug, "insufficient-hugepages") == 0 ||
                             strcmp(slug, "insufficient-memory") == 0 ||
                             strcmp(slug, "reserve-shortfall") == 0))
                        return HPW_E_INSUFFICIENT;
                return HPW_E_CONFLICT;
        case 429:
                return HPW_E_RATE_LIMITED;
        case 502: case 503: case 504:
                return HPW_E_UNAVAILABLE;
        }
        if (status >= 500 && status < 600)
                return HPW_E_SERVER;
        if (status >= 400 && status < 500)
                return HPW_E_BAD_REQUEST;
        return HPW_E_HTTP;
}

bool hpw_name_valid(const char *name)
{
        size_t n;

        if (!name || !name[0])
                return false;
        n = strlen(name);
        if (n > 64)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
                        return false;
        }
        return true;
}
