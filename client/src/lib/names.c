/* names: the library's fixed words (the version, what an error code means,
 * a pool state's name, a page size as the API writes it, the VMM formats'
 * names from vmm.c's table).
 *
 * A leaf: pure functions over constants that the transport (http.c), the
 * JSON layer and the calls all use, so none of them has to reach up into
 * the handle's file for a string. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *hpw_version(void)
{
        return HPW_VERSION_STRING;
}

unsigned hpw_version_num(void)
{
        return HPW_VERSION_NUM;
}

const char *hpw_strerror(enum hpw_error err)
{
        switch (err) {
        case HPW_OK: return "success";
        case HPW_E_INVALID: return "invalid argument";
        case HPW_E_NOMEM: return "out of memory";
        case HPW_E_IO: return "cannot read local file";
        case HPW_E_UNREACHABLE: return "server unreachable";
        case HPW_E_TIMEOUT: return "timed out";
        case HPW_E_TLS: return "TLS error";
        case HPW_E_PROTOCOL: return "unexpected answer from server";
        case HPW_E_BAD_REQUEST: return "request rejected by server";
        case HPW_E_UNAUTHORIZED: return "unauthorized";
        case HPW_E_FORBIDDEN: return "forbidden";
        case HPW_E_NOT_FOUND: return "not found";
        case HPW_E_CONFLICT: return "conflict";
        case HPW_E_INSUFFICIENT: return "insufficient hugepages";
        case HPW_E_RATE_LIMITED: return "rate limited";
        case HPW_E_UNAVAILABLE: return "service unavailable";
        case HPW_E_SERVER: return "server error";
        case HPW_E_POOL_FAILED: return "pool failed";
        case HPW_E_HTTP: return "unexpected HTTP status";
        case HPW_E_CANCELLED: return "cancelled";
        case HPW_E_NULL_HANDLE: return "no handle (NULL)";
        case HPW_E_NULL_ARGUMENT: return "required argument is NULL";
        case HPW_E_STRUCT_SIZE: return "request struct size not set (use its HPW_*_INIT)";
        }
        return "unknown error";
}

const char *hpw_pool_state_name(enum hpw_pool_state s)
{
        switch (s) {
        case HPW_POOL_WARMING: return "warming";
        case HPW_POOL_READY: return "ready";
        case HPW_POOL_FAILED: return "failed";
        case HPW_POOL_CANCELLED: return "cancelled";
        case HPW_POOL_UNKNOWN: break;
        }
        return "unknown";
}

void hpw_format_page_size(uint64_t bytes, char *buf, size_t len)
{
        if (!buf)
                return;
        if (bytes && bytes % (1ull << 30) == 0)
                snprintf(buf, len, "%lluG", (unsigned long long)(bytes >> 30));
        else if (bytes && bytes % (1ull << 20) == 0)
                snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20));
        else
                snprintf(buf, len, "%llukB", (unsigned long long)(bytes >> 10));
}

const struct hpw_vmm *hpw_vmm_find(const char *name, bool alias_ok)
{
        for (size_t i = 0; name && i < hpw_n_vmms; i++)
                if (strcmp(name, hpw_vmms[i].name) == 0 ||
                    (alias_ok && hpw_vmms[i].alias && strcmp(name, hpw_vmms[i].alias) == 0))
                        return &hpw_vmms[i];
        return NULL;
}

static const char *vmm_name_at(size_t i)
{
        return hpw_vmms[i].name;
}

static const char *vmm_name_if_as(size_t i)
{
        return hpw_vmms[i].as_refused ? NULL : hpw_vmms[i].name;
}

void hpw_vmm_names(char *buf, size_t len, const char *sep, const char *last, bool takes_as)
{
        vmm_join(buf, len, hpw_n_vmms, takes_as ? vmm_name_if_as : vmm_name_at, sep, last);
}
