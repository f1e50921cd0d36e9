/* units: the daemon's names for the shared size grammar (common/size.c),
 * which the client compiles too, so the API and the CLI accept the same
 * strings.  The grammar and why it is strict are in common/size.h. */
#include "size.h"
#include "units.h"

int parse_page_size(const char *s, uint64_t *ret)
{
        return hpw_page_size_parse(s, ret);
}

int parse_size(const char *s, uint64_t *ret)
{
        return hpw_size_parse(s, ret);
}

void format_size(uint64_t bytes, char *buf, size_t len)
{
        hpw_size_format(bytes, buf, len);
}
