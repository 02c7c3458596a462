/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS session tickets sealed by keys of our own (tls_tickets.h). OpenSSL's built-in ticket
 * keys are made once per context and never change; a callback lets the keys rotate, so a
 * key that leaks from memory opens only the tickets of its last two lifetimes. Tickets are
 * issued only for TLS 1.3, whose resumption still runs an ECDHE exchange (OpenSSL refuses
 * psk_ke without SSL_OP_ALLOW_NO_DHE_KEX), so a leaked key never decrypts recorded traffic;
 * a TLS 1.2 resumption would reuse the master secret the ticket carries.
 */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "tls_tickets.h"

struct nsrv_ticket_ring {
    pthread_mutex_t lock; /* handshakes could run on more than one thread one day */
    nsrv_ticket_key_t cur, prev;
    bool have_prev;
    uint64_t lifetime_ms;
};

static bool key_make(nsrv_ticket_key_t *k, uint64_t now_ms) {
    k->born_ms = now_ms;
    return RAND_bytes(k->name, sizeof k->name) == 1 && RAND_bytes(k->aes, sizeof k->aes) == 1 &&
           RAND_bytes(k->hmac, sizeof k->hmac) == 1;
}

nsrv_ticket_ring_t *nsrv__ticket_ring_new(uint32_t lifetime_s, uint64_t now_ms) {
    nsrv_ticket_ring_t *r = nsrv_calloc(1, sizeof *r);
    r->lifetime_ms = (uint64_t)lifetime_s * 1000u;
    if (!key_make(&r->cur, now_ms)) {
        nsrv_free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void nsrv__ticket_ring_free(nsrv_ticket_ring_t *r) {
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    OPENSSL_cleanse(r, sizeof *r);
    nsrv_free(r);
}

/* Called with the lock held. A failed random draw keeps the old key: tickets go on working
 * rather than the handshake failing, and the next call tries again. */
static void rotate_if_due(nsrv_ticket_ring_t *r, uint64_t now_ms) {
    if (now_ms < r->cur.born_ms || now_ms - r->cur.born_ms < r->lifetime_ms)
        return;
    nsrv_ticket_key_t fresh;
    if (!key_make(&fresh, now_ms))
        return;
    /* A ring idle for two lifetimes has no live ticket under its current key either. */
    r->have_prev = now_ms - r->cur.born_ms < 2 * r->lifetime_ms;
    r->prev = r->cur;
    r->cur = fresh;
    OPENSSL_cleanse(&fresh, sizeof fresh);
}

void nsrv__ticket_ring_issue(nsrv_ticket_ring_t *r, uint64_t now_ms, nsrv_ticket_key_t *out) {
    pthread_mutex_lock(&r->lock);
    rotate_if_due(r, now_ms);
    *out = r->cur;
    pthread_mutex_unlock(&r->lock);
}

bool nsrv__ticket_ring_find(nsrv_ticket_ring_t *r, const unsigned char *name, uint64_t now_ms,
                            nsrv_ticket_key_t *out, bool *renew) {
    pthread_mutex_lock(&r->lock);
    rotate_if_due(r, now_ms);
    bool found = true;
    *renew = false;
    if (CRYPTO_memcmp(name, r->cur.name, NSRV_TICKET_NAME_LEN) == 0) {
        *out = r->cur;
    } else if (r->have_prev && CRYPTO_memcmp(name, r->prev.name, NSRV_TICKET_NAME_LEN) == 0) {
        *out = r->prev;
        *renew = true;
    } else {
        found = false;
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

static int ring_index = -1;
static pthread_once_t ring_index_once = PTHREAD_ONCE_INIT;

static void ring_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                         void *argp) {
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    nsrv__ticket_ring_free(ptr);
}

static void ring_index_make(void) {
    ring_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ring_ex_free);
}

/* OpenSSL's ticket callback: 1 = sealed or opened with this key, 2 = opened, but issue a
 * fresh ticket, 0 = no ticket (sealing) or a full handshake (opening), -1 = error. */
static int ticket_cb(SSL *s, unsigned char key_name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
                     EVP_MAC_CTX *hctx, int enc) {
    nsrv_ticket_ring_t *r = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(s), ring_index);
    if (!r)
        return 0;
    nsrv_ticket_key_t k;
    bool renew = false;
    const EVP_CIPHER *cipher = EVP_aes_256_cbc();
    int rc;
    if (enc) {
        if (SSL_version(s) != TLS1_3_VERSION)
            return 0;
        nsrv__ticket_ring_issue(r, nsrv_now_mono_ms(), &k);
        memcpy(key_name, k.name, NSRV_TICKET_NAME_LEN);
        rc = RAND_bytes(iv, EVP_CIPHER_get_iv_length(cipher)) == 1 &&
             EVP_EncryptInit_ex(cctx, cipher, NULL, k.aes, iv) == 1;
    } else {
        if (!nsrv__ticket_ring_find(r, key_name, nsrv_now_mono_ms(), &k, &renew))
            return 0;
        rc = EVP_DecryptInit_ex(cctx, cipher, NULL, k.aes, iv) == 1;
    }
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end()};
    rc = rc && EVP_MAC_init(hctx, k.hmac, sizeof k.hmac, params) == 1;
    OPENSSL_cleanse(&k, sizeof k);
    /* Opened: always 2, so the client gets a fresh ticket, sealed under the current key, for
     * its next reconnect: RFC 8446 C.4 (a ticket offered twice links the connections), and
     * without it nsrv-tls-bench (OpenSSL's client) resumed only every other connection. */
    return !rc ? -1 : enc ? 1 : 2;
}

int nsrv__tickets_setup(nsrv_ssl_ctx_t *ctx, uint32_t lifetime_s) {
    /* No server-side session cache either way: with tickets the client holds the state, so
     * 18,000 clients cost the server nothing between their handshakes. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (lifetime_s == 0) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
        return 0;
    }
    pthread_once(&ring_index_once, ring_index_make);
    nsrv_ticket_ring_t *r =
        ring_index >= 0 ? nsrv__ticket_ring_new(lifetime_s, nsrv_now_mono_ms()) : NULL;
    if (!r || SSL_CTX_set_ex_data(ctx, ring_index, r) != 1) {
        nsrv__ticket_ring_free(r);
        return -1;
    }
    /* One ticket: a RocketMQ client reconnects with one connection at a time. */
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_timeout(ctx, (long)lifetime_s);
    /* Resumption with client certificates needs a context id; every ticket is ours anyway. */
    static const unsigned char sid_ctx[] = "nsrvd";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
    return 0;
}
