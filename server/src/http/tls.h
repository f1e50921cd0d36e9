/* tls: the only module that includes the GnuTLS headers.
 *
 * libmicrohttpd does the TLS handshake with the PEM blobs http.c hands it.
 * When a client CA is configured it only *requests* a client certificate, so
 * checking that one was sent and that it verifies is ours, per request, on
 * the session libmicrohttpd exposes.  SHA-256 lives here too, because it is
 * GnuTLS that provides it (auth.c hashes tokens with it). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define TLS_SHA256_LEN 32
/* PEM files larger than this are refused (a CA bundle is a few hundred KiB). */
#define TLS_PEM_MAX (4u * 1024 * 1024)

/* Read the PEM file PATH into a NUL-terminated malloc'd buffer (caller frees,
 * ideally with tls_free_secret() for keys).  -EFBIG past TLS_PEM_MAX, -EINVAL
 * when it holds no "-----BEGIN " block. */
int tls_read_pem(const char *path, char **ret);
/* Wipe and free a buffer that held a secret.  Accepts NULL. */
void tls_free_secret(char *s);

/* SHA-256 of [DATA, DATA+LEN) into OUT. */
int tls_sha256(const void *data, size_t len, uint8_t out[TLS_SHA256_LEN]);

/* SESSION is the gnutls_session_t libmicrohttpd reports for a connection.
 * 0 when the peer sent a certificate that verifies against the daemon's
 * trust list (chain, dates, signature, client-auth purpose); -ENOKEY when it
 * sent none; -EPERM when it does not verify; -ENOTCONN without a session. */
int tls_verify_client(void *session);
/* The RFC 4514 subject of the peer's certificate into BUF (truncated to
 * LEN); -ENOKEY when there is none. */
int tls_client_subject(void *session, char *buf, size_t len);
