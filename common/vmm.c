/* vmm: the one way the daemon and the client list VMM names in a message
 * (see vmm.h). */
#include <stdio.h>

#include "vmm.h"

void vmm_join(char *buf, size_t len, size_t n, const char *(*name_at)(size_t i), const char *sep,
              const char *last)
{
        size_t used = 0, left = 0;

        if (len == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < n; i++)
                left += name_at(i) != NULL;
        for (size_t i = 0; i < n; i++) {
                const char *name = name_at(i);
                if (!name)
                        continue;
                int w = snprintf(buf + used, len - used, "%s%s", used ? (left == 1 ? last : sep) : "", name);
                left--;
                if (w < 0 || (size_t)w >= len - used)
                        return;
                used += (size_t)w;
        }
}
