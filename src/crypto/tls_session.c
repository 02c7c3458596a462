/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One connection's TLS engine through two BIOs: received ciphertext is
 * written into the memory BIO `in` and decrypted with SSL_read; replies are
 * encrypted with SSL_write into `out`, the session's own buffer, which the
 * caller sends. OpenSSL never touches the socket, so nothing blocks and the
 * libuv loop keeps the I/O.
 */
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
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
    /* What OpenSSL wrote through `out` and the caller has not yet cleared. Not a memory BIO:
     * that zeroes every byte it grows by before copying it in and its whole allocation at
     * each reset (OpenSSL 3.0: ~5,000 instructions per 2 KB reply, a sixth of a route query
     * over TLS); this buffer is only appended to and rewound. */
    nsrv_buf_t sent;
    /* Bytes written into `in` since it was last found empty: a memory BIO grows to at most
     * 4/3 of what it held, so below KEEP_BYTES * 3/4 it cannot have grown past KEEP_BYTES and
     * nothing is asked of OpenSSL (each BIO_ctrl costs ~100 instructions). */
    size_t in_since_empty;
    bool failed;
    char why[160];
};

/* The output BIO: appends to its session's `sent`. */
static int out_write(BIO *b, const char *data, int len) {
    nsrv_tls_session_t *s = BIO_get_data(b);
    if (len <= 0)
        return 0;
    nsrv_buf_append(&s->sent, data, (size_t)len);
    return len;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH: /* the handshake flushes its flights: they are in `sent` already */
        return 1;
    case BIO_CTRL_WPENDING:
    case BIO_CTRL_PENDING: {
        nsrv_tls_session_t *s = BIO_get_data(b);
        return s ? (long)s->sent.len : 0;
    }
    default:
        return 0;
    }
}

static int out_create(BIO *b) {
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *out_method;
static pthread_once_t out_method_once = PTHREAD_ONCE_INIT;

static void out_method_make(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "nsrv TLS output");
    if (m && (!BIO_meth_set_write(m, out_write) || !BIO_meth_set_ctrl(m, out_ctrl) ||
              !BIO_meth_set_create(m, out_create))) {
        BIO_meth_free(m);
        m = NULL;
    }
    out_method = m;
}

static BIO *out_bio_new(void) {
    pthread_once(&out_method_once, out_method_make);
    return out_method ? BIO_new(out_method) : NULL;
}

nsrv_tls_session_t *nsrv_tls_session_new(nsrv_ssl_ctx_t *ctx) {
    ERR_clear_error();
    SSL *ssl = SSL_new(ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = out_bio_new();
    if (!ssl || !in || !out) {
        SSL_free(ssl);
        BIO_free(in);
        BIO_free(out);
        ERR_clear_error();
        return NULL;
    }
    /* An empty memory BIO reports "retry" instead of end of file. */
    BIO_set_mem_eof_return(in, -1);
    SSL_set_bio(ssl, in, out);
    SSL_set_accept_state(ssl);
    nsrv_tls_session_t *s = nsrv_calloc(1, sizeof *s);
    nsrv_buf_init(&s->sent);
    BIO_set_data(out, s);
    s->ssl = ssl;
    s->in = in;
    s->out = out;
    return s;
}

void nsrv_tls_session_free(nsrv_tls_session_t *s) {
    if (!s)
        return;
    SSL_free(s->ssl);
    nsrv_buf_deinit(&s->sent);
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
    *p = s->sent.data;
    return s->sent.len;
}

void nsrv_tls_session_output_clear(nsrv_tls_session_t *s) {
    /* After a large reply, start over with a small buffer: an idle connection keeps little. */
    if (s->sent.cap > KEEP_BYTES)
        nsrv_buf_deinit(&s->sent);
    else
        nsrv_buf_reset(&s->sent);
}

bool nsrv_tls_session_established(const nsrv_tls_session_t *s) {
    return SSL_is_init_finished(s->ssl);
}

bool nsrv_tls_session_resumed(const nsrv_tls_session_t *s) {
    return SSL_session_reused(s->ssl) == 1;
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
