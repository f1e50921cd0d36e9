/* tls: PEM loading, SHA-256 and the client-certificate check (see tls.h).
 *
 * The verification uses the credentials libmicrohttpd attached to the
 * session (its trust list comes from MHD_OPTION_HTTPS_MEM_TRUST), so the CA
 * set is loaded exactly once, by libmicrohttpd, and cannot disagree with the
 * one the handshake advertised. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "tls.h"
#include "util.h"

int tls_read_pem(const char *path, char **ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((uint64_t)st.st_size > TLS_PEM_MAX)
                return -EFBIG;
        size_t cap = (size_t)st.st_size + 1, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 == cap) {
                        /* The file grew under us: one retry-free read is enough
                         * to notice; refuse rather than chase it. */
                        char c;
                        ssize_t n = read(fd, &c, 1);
                        if (n == 0)
                                break;
                        tls_free_secret(buf);
                        return n < 0 ? -errno : -EAGAIN;
                }
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        tls_free_secret(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        if (!strstr(buf, "-----BEGIN ")) {
                tls_free_secret(buf);
                return -EINVAL;
        }
        *ret = buf;
        return 0;
}

void tls_free_secret(char *s)
{
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

int tls_sha256(const void *data, size_t len, uint8_t out[TLS_SHA256_LEN])
{
        if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, out) < 0)
                return -EIO;
        return 0;
}

static const gnutls_datum_t *peer_cert(gnutls_session_t s)
{
        unsigned n = 0;
        const gnutls_datum_t *chain = gnutls_certificate_get_peers(s, &n);
        return chain && n ? chain : NULL;
}

int tls_verify_client(void *session)
{
        gnutls_session_t s = session;
        if (!s)
                return -ENOTCONN;
        if (!peer_cert(s))
                return -ENOKEY;
        /* Ask for the client-auth purpose: a server certificate from the same
         * CA must not log in as a client.  No extended key usage at all
         * means "any purpose" to GnuTLS, as in RFC 5280. */
        gnutls_typed_vdata_st purpose = {
                .type = GNUTLS_DT_KEY_PURPOSE_OID,
                .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT,
        };
        unsigned status = 0;
        if (gnutls_certificate_verify_peers(s, &purpose, 1, &status) < 0)
                return -EPERM;
        return status == 0 ? 0 : -EPERM;
}

int tls_client_subject(void *session, char *buf, size_t len)
{
        gnutls_session_t s = session;
        const gnutls_datum_t *der = s ? peer_cert(s) : NULL;
        if (!der)
                return -ENOKEY;
        gnutls_x509_crt_t crt;
        if (gnutls_x509_crt_init(&crt) < 0)
                return -ENOMEM;
        int r = -EINVAL;
        gnutls_datum_t dn = {0};
        if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) >= 0 &&
            gnutls_x509_crt_get_dn3(crt, &dn, 0) >= 0) {
                snprintf(buf, len, "%.*s", (int)dn.size, (const char *)dn.data);
                gnutls_free(dn.data);
                r = 0;
        }
        gnutls_x509_crt_deinit(crt);
        return r;
}
