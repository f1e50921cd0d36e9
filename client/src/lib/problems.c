/* problems: hpwarmd's problem catalog as the library knows it.
 *
 * The table is generated at build time from api/problems.json (the catalog
 * the daemon's server/src/problem.c is checked against), so a slug, its
 * status and whether it is worth retrying are written down once.  retry.c
 * asks hpw_slug_retryable() before it retries a refusal. */
#include <string.h>

#include "internal.h"
#include "problems_table.h"

enum hpw_slug hpw_slug_from_name(const char *name)
{
        if (!name)
                return HPW_SLUG_UNKNOWN;
        for (int i = 1; i <= HPW_SLUG_COUNT; i++)
                if (hpw_slug_table[i].slug && strcmp(hpw_slug_table[i].slug, name) == 0)
                        return (enum hpw_slug)i;
        return HPW_SLUG_UNKNOWN;
}

static bool known(enum hpw_slug s)
{
        return (int)s > 0 && (int)s <= HPW_SLUG_COUNT && hpw_slug_table[s].slug;
}

const char *hpw_slug_name(enum hpw_slug s)
{
        return known(s) ? hpw_slug_table[s].slug : "";
}

int hpw_slug_status(enum hpw_slug s)
{
        return known(s) ? hpw_slug_table[s].status : 0;
}

bool hpw_slug_retryable(enum hpw_slug s)
{
        return known(s) && hpw_slug_table[s].retryable;
}
