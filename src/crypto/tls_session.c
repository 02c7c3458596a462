/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection's TLS engine through two memory BIOs: received ciphertext is
 * written into `in` and decrypted with SSL_read; replies are encrypted with
 * SSL_write into `out`, which the caller sends. OpenSSL never touches the
 * socket, so nothing blocks and the libuv loop keeps the I/O.
 */
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/tls.h"

/* Plaintext decrypted per SSL_read call: one TLS record at most. */
#define PLAIN_CHUNK (16 * 1024 + 256)
/* Buffers grown past this are replaced once empty (an idle connection keeps little). */
#define KEEP_BYTES (32 * 1024)

struct nsrv_tls_session {
    SSL *ssl;
    BIO *in, *out; /* owned by ssl */
    /* Bytes written into `in` since it was last found empty, and the length of `out` at the
     * last nsrv_tls_session_output: a memory BIO grows to at most 4/3 of what it held, so
     * below KEEP_BYTES * 3/4 neither can have grown past KEEP_BYTES and nothing is asked of
     * OpenSSL (each BIO_ctrl costs ~100 instructions, a request makes several). */
    size_t in_since_empty, out_last;
    bool failed;
    char why[160];
};

nsrv_tls_session_t *nsrv_tls_session_new(nsrv_ssl_ctx_t *ctx) {
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    if (!ssl || !in || !out) {
        SSL_free(ssl);
        BIO_free(in);
        BIO_free(out);
        ERR_clear_error();
        return NULL;
    }
    /* An empty memory BIO reports "retry" instead of end of file. */
    BIO_set_mem_eof_return(in, -1);
    BIO_set_mem_eof_return(out, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
    nsrv_tls_session_t *s = nsrv_calloc(1, sizeof *s);
    s->ssl = ssl;
    s->in = in;
    s->out = out;
    return s;
}

void nsrv_tls_session_free(nsrv_tls_session_t *s) {
    if (!s)
        return;
    SSL_free(s->ssl);
    nsrv_free(s);
}

static nsrv_tls_status_t fail(nsrv_tls_session_t *s, const char *what, const char **why) {
    char reason[128] = "";
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    snprintf(s->why, sizeof s->why, "%s%s%s", what, reason[0] ? ": " : "", reason);
    s->failed = true;
    *why = s->why;
    return NSRV_TLS_FAILED;
}

/* A memory BIO keeps its largest allocation: once a large read is consumed, an idle
 * connection should not hold it, so an empty input buffer that grew is replaced. */
static void shrink_input(nsrv_tls_session_t *s) {
    if (s->in_since_empty <= KEEP_BYTES / 4 * 3)
        return;
    BUF_MEM *mem = NULL;
    if (BIO_ctrl_pending(s->in) > 0)
        return;
    s->in_since_empty = 0;
    if ((BIO_get_mem_ptr(s->in, &mem), !mem) || mem->max <= KEEP_BYTES)
        return;
    BIO *fresh = BIO_new(BIO_s_mem());
    if (!fresh)
        return;
    BIO_set_mem_eof_return(fresh, -1);
    SSL_set0_rbio(s->ssl, fresh); /* frees the old one */
    s->in = fresh;
}

nsrv_tls_status_t nsrv_tls_session_feed(nsrv_tls_session_t *s, const void *data, size_t len,
                                        nsrv_buf_t *plain, const char **why) {
    *why = NULL;
    if (s->failed)
        return fail(s, "TLS session already failed", why);
    /* SSL_get_error reads the thread's error queue, so it must hold nothing stale; emptying
     * it costs OpenSSL 3 ~800 instructions even when empty, looking costs far less. */
    if (ERR_peek_error() != 0)
        ERR_clear_error();
    if (len > 0 && BIO_write(s->in, data, (int)len) != (int)len)
        return fail(s, "TLS input buffer", why);
    s->in_since_empty += len;
    /* Decrypt everything complete: a connection stopped by back-pressure is not read again
     * until it drains, so nothing may stay behind in the engine. */
    for (;;) {
        nsrv_buf_reserve(plain, PLAIN_CHUNK);
        int n = SSL_read(s->ssl, plain->data + plain->len, PLAIN_CHUNK);
        if (n > 0) {
            plain->len += (size_t)n;
            continue;
        }
        switch (SSL_get_error(s->ssl, n)) {
        case SSL_ERROR_WANT_READ:
            shrink_input(s);
            return NSRV_TLS_OK;
        case SSL_ERROR_ZERO_RETURN:
            return NSRV_TLS_CLOSED;
        default:
            return fail(
                s, SSL_is_init_finished(s->ssl) ? "TLS record error" : "TLS handshake failed", why);
        }
    }
}

bool nsrv_tls_session_write(nsrv_tls_session_t *s, const void *data, size_t len) {
    if (s->failed)
        return false;
    /* The memory BIO grows as needed, so SSL_write takes all of it at once; the error queue
     * is not consulted (no SSL_get_error), so it is emptied only after a failure. */
    while (len > 0) {
        int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
        int n = SSL_write(s->ssl, data, chunk);
        if (n <= 0) {
            ERR_clear_error();
            s->failed = true;
            return false;
        }
        data = (const char *)data + n;
        len -= (size_t)n;
    }
    return true;
}

void nsrv_tls_session_shutdown(nsrv_tls_session_t *s) {
    if (s->failed || !SSL_is_init_finished(s->ssl))
        return;
    ERR_clear_error();
    SSL_shutdown(s->ssl);
    ERR_clear_error();
}

size_t nsrv_tls_session_output(nsrv_tls_session_t *s, const char **p) {
    char *data = NULL;
    long n = BIO_get_mem_data(s->out, &data);
    *p = data;
    s->out_last = n > 0 ? (size_t)n : 0;
    return s->out_last;
}

void nsrv_tls_session_output_clear(nsrv_tls_session_t *s) {
    /* A reset clears the whole allocation, however little was written: after a large
     * reply, start over with a small buffer instead. */
    BUF_MEM *mem = NULL;
    if (s->out_last > KEEP_BYTES / 4 * 3)
        BIO_get_mem_ptr(s->out, &mem);
    BIO *fresh = mem && mem->max > KEEP_BYTES ? BIO_new(BIO_s_mem()) : NULL;
    if (!fresh) {
        (void)BIO_reset(s->out);
        return;
    }
    BIO_set_mem_eof_return(fresh, -1);
    SSL_set0_wbio(s->ssl, fresh); /* frees the old one */
    s->out = fresh;
}

bool nsrv_tls_session_established(const nsrv_tls_session_t *s) {
    return SSL_is_init_finished(s->ssl);
}

bool nsrv_tls_session_input_pending(const nsrv_tls_session_t *s) {
    /* The engine reads what it can of a record into its own buffer: check both. */
    return SSL_has_pending(s->ssl) || BIO_ctrl_pending(s->in) > 0;
}

void nsrv_tls_session_describe(const nsrv_tls_session_t *s, char *out, size_t len) {
    const char *cn = NULL;
    char subject[128] = "";
    X509 *peer = SSL_get1_peer_certificate(s->ssl);
    if (peer) {
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, subject,
                                  sizeof subject);
        cn = subject;
        X509_free(peer);
    }
    snprintf(out, len, "%s %s%s%s", SSL_get_version(s->ssl), SSL_get_cipher_name(s->ssl),
             cn ? ", client certificate CN=" : "", cn ? cn : "");
}
