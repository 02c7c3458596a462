/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session ticket keys (tls_tickets.c): a key seals tickets for one lifetime, opens them
 * (asking for a renewal) for one more, and is forgotten after that; a ring never holds a key
 * older than two lifetimes, however long it sat idle. And what the setup asks of OpenSSL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "testlib.h"
#include "tls_tickets.h"

#define L_S 60u
#define L_MS (L_S * 1000u)
#define T0 1000000u

static void test_rotation(void **state) {
    (void)state;
    nsrv_ticket_ring_t *r = nsrv__ticket_ring_new(L_S, T0);
    assert_non_null(r);
    nsrv_ticket_key_t a, b, c, got;
    bool renew = true;
    nsrv__ticket_ring_issue(r, T0, &a);
    assert_true(nsrv__ticket_ring_find(r, a.name, T0 + L_MS - 1, &got, &renew));
    assert_false(renew);
    assert_memory_equal(got.aes, a.aes, sizeof a.aes);
    assert_memory_equal(got.hmac, a.hmac, sizeof a.hmac);

    /* One lifetime on: new tickets get a new key; the old one still opens, asking for renewal. */
    nsrv__ticket_ring_issue(r, T0 + L_MS, &b);
    assert_memory_not_equal(b.name, a.name, sizeof a.name);
    assert_memory_not_equal(b.aes, a.aes, sizeof a.aes);
    assert_true(nsrv__ticket_ring_find(r, a.name, T0 + L_MS + 1, &got, &renew));
    assert_true(renew);
    assert_memory_equal(got.aes, a.aes, sizeof a.aes);
    assert_true(nsrv__ticket_ring_find(r, b.name, T0 + L_MS + 1, &got, &renew));
    assert_false(renew);

    /* Two lifetimes after the first key was made, every ticket it sealed has expired. */
    nsrv__ticket_ring_issue(r, T0 + 2 * L_MS, &c);
    assert_memory_not_equal(c.name, b.name, sizeof b.name);
    assert_false(nsrv__ticket_ring_find(r, a.name, T0 + 2 * L_MS, &got, &renew));
    assert_true(nsrv__ticket_ring_find(r, b.name, T0 + 2 * L_MS, &got, &renew));
    assert_true(renew);

    /* A name the ring never made opens nothing. */
    unsigned char stranger[NSRV_TICKET_NAME_LEN];
    memset(stranger, 0xA5, sizeof stranger);
    assert_false(nsrv__ticket_ring_find(r, stranger, T0 + 2 * L_MS, &got, &renew));
    nsrv__ticket_ring_free(r);
}

static void test_idle_ring_forgets_both_keys(void **state) {
    (void)state;
    nsrv_ticket_ring_t *r = nsrv__ticket_ring_new(L_S, T0);
    nsrv_ticket_key_t a, got;
    bool renew;
    nsrv__ticket_ring_issue(r, T0, &a);
    /* Nothing happened for two lifetimes: the first look finds a new current key and no
     * previous one, so a's tickets (all expired) are refused rather than renewed. */
    assert_false(nsrv__ticket_ring_find(r, a.name, T0 + 2 * L_MS, &got, &renew));
    nsrv__ticket_ring_free(r);

    /* Just under two lifetimes idle, a's last tickets may still be live: kept as previous. */
    r = nsrv__ticket_ring_new(L_S, T0);
    nsrv__ticket_ring_issue(r, T0, &a);
    assert_true(nsrv__ticket_ring_find(r, a.name, T0 + 2 * L_MS - 1, &got, &renew));
    assert_true(renew);
    nsrv__ticket_ring_free(r);
}

static void test_each_ring_has_its_own_keys(void **state) {
    (void)state;
    /* A reload builds a new context and so a new ring: the old ring's tickets mean nothing. */
    nsrv_ticket_ring_t *r1 = nsrv__ticket_ring_new(L_S, T0), *r2 = nsrv__ticket_ring_new(L_S, T0);
    nsrv_ticket_key_t a, got;
    bool renew;
    nsrv__ticket_ring_issue(r1, T0, &a);
    assert_false(nsrv__ticket_ring_find(r2, a.name, T0, &got, &renew));
    nsrv__ticket_ring_free(r1);
    nsrv__ticket_ring_free(r2);
}

static void test_setup(void **state) {
    (void)state;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    assert_int_equal(nsrv__tickets_setup(ctx, 0), 0);
    assert_true(SSL_CTX_get_options(ctx) & SSL_OP_NO_TICKET);
    assert_int_equal(SSL_CTX_get_num_tickets(ctx), 0);
    assert_int_equal(SSL_CTX_get_session_cache_mode(ctx), SSL_SESS_CACHE_OFF);
    SSL_CTX_free(ctx);

    ctx = SSL_CTX_new(TLS_server_method());
    assert_int_equal(nsrv__tickets_setup(ctx, 3600), 0);
    assert_false(SSL_CTX_get_options(ctx) & SSL_OP_NO_TICKET);
    assert_int_equal(SSL_CTX_get_num_tickets(ctx), 1);
    assert_int_equal(SSL_CTX_get_timeout(ctx), 3600);
    assert_int_equal(SSL_CTX_get_session_cache_mode(ctx), SSL_SESS_CACHE_OFF);
    SSL_CTX_free(ctx); /* frees the ring with it (LeakSanitizer checks) */
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_rotation),
               cmocka_unit_test(test_idle_ring_forgets_both_keys),
               cmocka_unit_test(test_each_ring_has_its_own_keys), cmocka_unit_test(test_setup))
