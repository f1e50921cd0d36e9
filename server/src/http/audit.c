/* audit: format and write mutation audit lines (see audit.h). */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "log.h"

/* The log line is 1 KiB; keep each field well under it. */
#define AUDIT_FIELD_MAX 300

bool audit_is_mutation(const char *method)
{
        return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 && strcmp(method, "OPTIONS") != 0;
}

/* SPACE_OK: WHO is quoted and may keep its spaces; PATH and METHOD are not. */
static void escape(char *out, size_t len, const char *in, bool space_ok)
{
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < len; p++) {
                if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' || (*p == ' ' && !space_ok))
                        o += (size_t)snprintf(out + o, len - o, "\\x%02x", *p);
                else
                        out[o++] = (char)*p;
        }
        out[o] = '\0';
}

char *audit_format(char *buf, size_t len, const char *who, const char *method, const char *path, int status)
{
        char w[AUDIT_FIELD_MAX], m[32], p[AUDIT_FIELD_MAX];
        escape(w, sizeof(w), who && *who ? who : "unknown", true);
        escape(m, sizeof(m), method ? method : "", false);
        escape(p, sizeof(p), path ? path : "", false);
        snprintf(buf, len, "audit: who=\"%s\" method=%s path=%s status=%d", w, m, p, status);
        return buf;
}

void audit_log(const char *who, const char *method, const char *path, int status)
{
        char line[1024];
        log_notice("%s", audit_format(line, sizeof(line), who, method, path, status));
}
