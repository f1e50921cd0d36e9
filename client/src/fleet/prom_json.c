/* prom_json: Prometheus's /api/v1/query answers (for prom.c's placement).
 *
 * Only an instant vector is an answer; a sample that lacks what placement
 * needs (the host label, hpw_kind, a numeric numa_node and page_size_bytes,
 * a whole non-negative value) is skipped and counted, not an error, since
 * the query may match series of other exporters.  Label values arrive as
 * strings and are read as whole numbers with a bound. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"

void hpw_prom_samples_free(struct hpw_prom_sample *s, size_t n)
{
        for (size_t i = 0; s && i < n; i++) {
                free(s[i].host);
                free(s[i].kind);
        }
        free(s);
}

/* A label value that is a whole number in [0, MAX]; false otherwise. */
static bool label_u64(const cJSON *metric, const char *key, uint64_t max, uint64_t *ret)
{
        const cJSON *v = hpw_jget(metric, key);
        char *end;
        unsigned long long x;

        if (!cJSON_IsString(v) || !isdigit((unsigned char)v->valuestring[0]))
                return false;
        errno = 0;
        x = strtoull(v->valuestring, &end, 10);
        if (errno || *end || x > max)
                return false;
        *ret = x;
        return true;
}

enum hpw_error hpw_json_prom_vector(const char *body, size_t len, const char *host_label,
                                    struct hpw_prom_sample **ret, size_t *ret_n, size_t *ret_skipped,
                                    char *errbuf, size_t errlen)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *status, *data, *type, *result, *it;
        struct hpw_prom_sample *s = NULL;
        size_t n = 0, skipped = 0, cap;
        enum hpw_error err = HPW_E_PROTOCOL;

        errbuf[0] = '\0';
        if (!root) {
                snprintf(errbuf, errlen, "answer is not a JSON object");
                return HPW_E_PROTOCOL;
        }
        status = hpw_jget(root, "status");
        if (!cJSON_IsString(status)) {
                snprintf(errbuf, errlen, "answer has no \"status\": not the Prometheus HTTP API");
                goto out;
        }
        if (strcmp(status->valuestring, "success") != 0) {
                const cJSON *e = hpw_jget(root, "error"), *t = hpw_jget(root, "errorType");
                snprintf(errbuf, errlen, "Prometheus refused the query: %s%s%s",
                         cJSON_IsString(t) ? t->valuestring : "error", cJSON_IsString(e) ? ": " : "",
                         cJSON_IsString(e) ? e->valuestring : "");
                err = HPW_E_BAD_REQUEST;
                goto out;
        }
        data = hpw_jget(root, "data");
        type = hpw_jget(data, "resultType");
        result = hpw_jget(data, "result");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "vector") != 0 || !cJSON_IsArray(result)) {
                snprintf(errbuf, errlen, "answer is not an instant vector");
                goto out;
        }
        cap = (size_t)cJSON_GetArraySize(result);
        if (cap > HPW_MAX_ITEMS) {
                snprintf(errbuf, errlen, "answer has %zu samples (at most %d taken)", cap, HPW_MAX_ITEMS);
                goto out;
        }
        if (!(s = calloc(cap ? cap : 1, sizeof(*s)))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        cJSON_ArrayForEach(it, result) {
                const cJSON *metric = hpw_jget(it, "metric"), *value = hpw_jget(it, "value"), *host, *kind, *v;
                uint64_t node = 0, ps = 0;
                double d;
                char *end;

                host = hpw_jget(metric, host_label);
                kind = hpw_jget(metric, "hpw_kind");
                v = cJSON_IsArray(value) && cJSON_GetArraySize(value) == 2 ? cJSON_GetArrayItem(value, 1) : NULL;
                /* A sample without what placement needs is skipped, not an
                 * error: the query may match series of other exporters. */
                if (!cJSON_IsString(host) || !host->valuestring[0] || !cJSON_IsString(kind) ||
                    !label_u64(metric, "numa_node", INT32_MAX, &node) ||
                    !label_u64(metric, "page_size_bytes", UINT64_MAX, &ps) || !cJSON_IsString(v)) {
                        skipped++;
                        continue;
                }
                d = strtod(v->valuestring, &end);
                if (*end || !(d >= 0) || d > HPW_JSON_MAX_EXACT) {
                        skipped++;
                        continue;
                }
                s[n].host = strdup(host->valuestring);
                s[n].kind = strdup(kind->valuestring);
                if (!s[n].host || !s[n].kind) {
                        n++;
                        err = HPW_E_NOMEM;
                        goto out;
                }
                s[n].node = (int)node;
                s[n].page_size = ps;
                s[n].value = (uint64_t)d;
                n++;
        }
        err = HPW_OK;
out:
        cJSON_Delete(root);
        if (err != HPW_OK) {
                hpw_prom_samples_free(s, n);
                return err;
        }
        *ret = s;
        *ret_n = n;
        *ret_skipped = skipped;
        return HPW_OK;
}
