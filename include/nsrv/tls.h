/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS on the NameServer port (docs/design/tls-and-access.md "TLS"), in three parts with no libuv in
 * the first two (src/crypto, reached through nsrv/crypto.h's table; the third in src/server):
 *  - tls_ctx.c: the settings (config keys, then the tls.config.file), the
 *    self-signed certificate of test mode, and the OpenSSL context built from
 *    them (at start and on SIGHUP);
 *  - tls_session.c: one connection's TLS engine driven through memory BIOs:
 *    ciphertext in, plaintext out and the reverse, never a blocking call;
 *  - server/conn_tls.c: the glue between a session and a connection (server_int.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/buf.h"
#include "nsrv/tls_names.h"

struct nsrv_config;
typedef struct ssl_ctx_st nsrv_ssl_ctx_t; /* OpenSSL's SSL_CTX */

/* ---- first byte of a connection (Java's HandshakeHandler) ---- */

/* The first byte of a TLS handshake record. */
#define NSRV_TLS_HANDSHAKE_BYTE 0x16

typedef enum {
    NSRV_FIRST_PLAIN,        /* serve as RocketMQ remoting frames */
    NSRV_FIRST_TLS,          /* run a TLS handshake */
    NSRV_FIRST_REFUSE_TLS,   /* TLS while tls.server.mode=disabled: close */
    NSRV_FIRST_REFUSE_PLAIN, /* plaintext while tls.server.mode=enforcing: close */
} nsrv_first_byte_t;

/* Inline: nsrvd decides without loading OpenSSL (nsrv/crypto.h). */
static inline nsrv_first_byte_t nsrv_tls_classify(nsrv_tls_mode_t mode, uint8_t first_byte) {
    if (first_byte == NSRV_TLS_HANDSHAKE_BYTE)
        return mode == NSRV_TLS_DISABLED ? NSRV_FIRST_REFUSE_TLS : NSRV_FIRST_TLS;
    return mode == NSRV_TLS_ENFORCING ? NSRV_FIRST_REFUSE_PLAIN : NSRV_FIRST_PLAIN;
}

/* ---- settings and context (tls_ctx.c) ---- */

typedef struct nsrv_tls_ctx nsrv_tls_ctx_t;

/**
 * Builds the TLS state from cfg and, when it exists, the file named by
 * tls.config.file (its tls.* keys override cfg's, as Java's tls.properties
 * does). With tls.server.mode=disabled no context is built. Without
 * tls.server.certPath in test mode a self-signed certificate is made.
 * @return the state, or NULL with a message in err.
 */
nsrv_tls_ctx_t *nsrv_tls_ctx_create(const struct nsrv_config *cfg, char *err, size_t errlen);

/**
 * SIGHUP: rebuilds the OpenSSL context from fresh (certificate, key, password,
 * client-auth settings and trust certificates re-read); new connections use
 * it, open ones keep theirs. The mode stays the one of the start. On error t
 * is unchanged.
 * @return 0, or -1 with a message in err.
 */
int nsrv_tls_ctx_reload(nsrv_tls_ctx_t *t, const struct nsrv_config *fresh, char *err,
                        size_t errlen);

void nsrv_tls_ctx_destroy(nsrv_tls_ctx_t *t);

nsrv_tls_mode_t nsrv_tls_ctx_mode(const nsrv_tls_ctx_t *t);
/* The context new connections get; NULL when disabled. */
nsrv_ssl_ctx_t *nsrv_tls_ctx_ssl(const nsrv_tls_ctx_t *t);
/* One line for the log: mode, certificate source, client auth. */
const char *nsrv_tls_ctx_describe(const nsrv_tls_ctx_t *t);

/* ---- one connection's engine (tls_session.c) ---- */

typedef struct nsrv_tls_session nsrv_tls_session_t;

nsrv_tls_session_t *nsrv_tls_session_new(nsrv_ssl_ctx_t *ctx);
void nsrv_tls_session_free(nsrv_tls_session_t *s);

typedef enum {
    NSRV_TLS_OK = 0,
    NSRV_TLS_CLOSED = 1, /* the peer sent close_notify */
    NSRV_TLS_FAILED = 2, /* handshake or record error: close the connection */
} nsrv_tls_status_t;

/**
 * Feeds received ciphertext; appends every plaintext byte it completes to
 * plain. Afterwards nsrv_tls_session_output holds what must be sent (handshake
 * messages, alerts). On FAILED, why describes the error (static or owned by
 * the session until the next call).
 */
nsrv_tls_status_t nsrv_tls_session_feed(nsrv_tls_session_t *s, const void *data, size_t len,
                                        nsrv_buf_t *plain, const char **why);

/* Encrypts plaintext into the output. Returns false if the session can no longer send. */
bool nsrv_tls_session_write(nsrv_tls_session_t *s, const void *data, size_t len);

/* Queues close_notify in the output (once the handshake is done). */
void nsrv_tls_session_shutdown(nsrv_tls_session_t *s);

/* Ciphertext waiting to be sent: *p valid until nsrv_tls_session_output_clear. */
size_t nsrv_tls_session_output(nsrv_tls_session_t *s, const char **p);
void nsrv_tls_session_output_clear(nsrv_tls_session_t *s);

/* True once the handshake completed. */
bool nsrv_tls_session_established(const nsrv_tls_session_t *s);
/* True if the completed handshake resumed a session (a ticket). */
bool nsrv_tls_session_resumed(const nsrv_tls_session_t *s);
/* Received bytes of an incomplete record wait (a request in flight, for graceful shutdown). */
bool nsrv_tls_session_input_pending(const nsrv_tls_session_t *s);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384" for the log. */
void nsrv_tls_session_describe(const nsrv_tls_session_t *s, char *out, size_t len);
