/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TLS pieces without a socket: the first-byte rule, the settings (config keys and the
 * tls.config.file), reload, and a server session (tls_session.c) driven against an OpenSSL
 * client through memory, as the loop drives it: handshake, data both ways in pieces,
 * close_notify either way, garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "nsrv/tls.h"
#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/config.h"
#include "nsrv/fileio.h"
#include "testlib.h"
#include "testlib_tls_client.h"

NSRV_TEST_DIR_FIXTURE("tls-session")

/* Defaults with nothing of the machine (no /etc/rocketmq/tls.properties). */
static void config(nsrv_config_t *cfg) {
    nsrv_config_init_defaults(cfg);
    nsrv_free(cfg->tls_config_file);
    cfg->tls_config_file = nsrv_strdup("");
}

static void set(char **field, const char *v) {
    nsrv_free(*field);
    *field = nsrv_strdup(v);
}

static void test_first_byte(void **state) {
    (void)state;
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_PERMISSIVE, 0x16), NSRV_FIRST_TLS);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_PERMISSIVE, 0x00), NSRV_FIRST_PLAIN);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_ENFORCING, 0x16), NSRV_FIRST_TLS);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_ENFORCING, 0x00), NSRV_FIRST_REFUSE_PLAIN);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_ENFORCING, 0x15), NSRV_FIRST_REFUSE_PLAIN);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_DISABLED, 0x16), NSRV_FIRST_REFUSE_TLS);
    assert_int_equal(nsrv_tls_classify(NSRV_TLS_DISABLED, 0x00), NSRV_FIRST_PLAIN);
}

static const char *write_file(const char *name, const char *text) {
    const char *path = nsrv_test_dir_join(&tmp, name);
    assert_int_equal(nsrv_file_write_atomic(path, text, strlen(text), false), 0);
    return path;
}

static void test_settings(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char err[512] = "";
    config(&cfg);
    set(&cfg.tls_server_mode, "disabled");
    nsrv_tls_ctx_t *t = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(nsrv_tls_ctx_mode(t), NSRV_TLS_DISABLED);
    assert_null(nsrv_tls_ctx_ssl(t));
    nsrv_tls_ctx_destroy(t);
    set(&cfg.tls_server_mode, "permissive");

    /* A missing tls.config.file is ignored, as in Java. */
    set(&cfg.tls_config_file, nsrv_test_dir_join(&tmp, "absent.properties"));
    t = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    assert_non_null(t);
    nsrv_tls_ctx_destroy(t);

    /* Its tls.* keys override the properties; other keys are not TLS settings. */
    set(&cfg.tls_config_file,
        write_file("tls.properties", "tls.server.mode=ENFORCING\nlistenPort=1\n"));
    t = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    assert_non_null(t);
    assert_int_equal(nsrv_tls_ctx_mode(t), NSRV_TLS_ENFORCING);
    assert_non_null(nsrv_tls_ctx_ssl(t));
    assert_non_null(strstr(nsrv_tls_ctx_describe(t), "self-signed"));
    nsrv_tls_ctx_destroy(t);

    /* A bad value there stops the start, naming the file, line and key. */
    set(&cfg.tls_config_file,
        write_file("bad.properties", "# x\ntls.server.need.client.auth=always\n"));
    assert_null(nsrv_tls_ctx_create(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "line 2"));
    assert_non_null(strstr(err, "tls.server.need.client.auth"));

    /* Test mode off needs a certificate; a certificate needs its key. */
    set(&cfg.tls_config_file, "");
    cfg.tls_test_mode_enable = false;
    assert_null(nsrv_tls_ctx_create(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "tls.test.mode.enable=false needs"));
    set(&cfg.tls_server_cert_path, "/nonexistent.pem");
    assert_null(nsrv_tls_ctx_create(&cfg, err, sizeof err));
    assert_non_null(strstr(err, "go together"));
    nsrv_config_free(&cfg);
}

static void test_reload_keeps_context_on_error(void **state) {
    (void)state;
    nsrv_config_t cfg, fresh;
    char err[512] = "";
    config(&cfg);
    nsrv_tls_ctx_t *t = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    assert_non_null(t);
    nsrv_ssl_ctx_t *before = nsrv_tls_ctx_ssl(t);
    config(&fresh);
    set(&fresh.tls_server_cert_path, "/nonexistent.pem");
    set(&fresh.tls_server_key_path, "/nonexistent.key");
    assert_int_equal(nsrv_tls_ctx_reload(t, &fresh, err, sizeof err), -1);
    assert_non_null(strstr(err, "tls.server.certPath"));
    assert_ptr_equal(nsrv_tls_ctx_ssl(t), before);
    /* A good reload builds a new context (new connections get it). */
    set(&fresh.tls_server_cert_path, "");
    set(&fresh.tls_server_key_path, "");
    assert_int_equal(nsrv_tls_ctx_reload(t, &fresh, err, sizeof err), 0);
    assert_ptr_not_equal(nsrv_tls_ctx_ssl(t), before);
    nsrv_config_free(&fresh);
    nsrv_config_free(&cfg);
    nsrv_tls_ctx_destroy(t);
}

/* ---- a server session against an OpenSSL client, through memory ---- */

typedef struct {
    nsrv_tls_ctx_t *server_ctx;
    nsrv_tls_session_t *server;
    SSL_CTX *client_ctx;
    SSL *client;
    BIO *c_in, *c_out; /* the client's side of the "wire" */
    nsrv_buf_t plain;  /* what the server decrypted */
    nsrv_tls_status_t last;
} pair_t;

/* Moves the client's output to the server in pieces of `step`, and the server's to the client. */
static void pump(pair_t *p, size_t step) {
    char buf[4096];
    for (int round = 0; round < 64; round++) {
        bool moved = false;
        int n;
        while ((n = BIO_read(p->c_out, buf, (int)(step < sizeof buf ? step : sizeof buf))) > 0) {
            const char *why = NULL;
            p->last = nsrv_tls_session_feed(p->server, buf, (size_t)n, &p->plain, &why);
            moved = true;
            if (p->last == NSRV_TLS_FAILED)
                assert_non_null(why);
            if (p->last != NSRV_TLS_OK)
                break;
        }
        const char *out = NULL;
        size_t len = nsrv_tls_session_output(p->server, &out);
        if (len > 0) {
            assert_int_equal(BIO_write(p->c_in, out, (int)len), (int)len);
            nsrv_tls_session_output_clear(p->server);
            moved = true;
        }
        if (!SSL_is_init_finished(p->client)) {
            int rc = SSL_do_handshake(p->client);
            (void)rc;
            ERR_clear_error();
            moved = moved || BIO_ctrl_pending(p->c_out) > 0;
        }
        if (!moved)
            return;
    }
}

static void pair_open(pair_t *p, size_t step) {
    memset(p, 0, sizeof *p);
    nsrv_config_t cfg;
    char err[512] = "";
    config(&cfg);
    p->server_ctx = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    nsrv_config_free(&cfg);
    assert_non_null(p->server_ctx);
    p->server = nsrv_tls_session_new(nsrv_tls_ctx_ssl(p->server_ctx));
    assert_non_null(p->server);
    nsrv_buf_init(&p->plain);
    p->client = nsrv_test_tls_client_start(&p->client_ctx, &p->c_in, &p->c_out);
    pump(p, step);
    assert_true(SSL_is_init_finished(p->client));
    assert_true(nsrv_tls_session_established(p->server));
    assert_int_equal(p->last, NSRV_TLS_OK);
}

static void pair_close(pair_t *p) {
    SSL_free(p->client);
    SSL_CTX_free(p->client_ctx);
    nsrv_tls_session_free(p->server);
    nsrv_tls_ctx_destroy(p->server_ctx);
    nsrv_buf_deinit(&p->plain);
}

static void client_write(pair_t *p, const void *data, size_t len) {
    assert_int_equal(SSL_write(p->client, data, (int)len), (int)len);
}

/* Everything the client can decrypt now; returns its length (-1: close_notify seen). */
static long client_read(pair_t *p, char *out, size_t cap) {
    size_t got = 0;
    for (;;) {
        int n = SSL_read(p->client, out + got, (int)(cap - got));
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        int e = SSL_get_error(p->client, n);
        ERR_clear_error();
        if (e == SSL_ERROR_ZERO_RETURN)
            return -1;
        return (long)got;
    }
}

/* The per-test fixture of the single-pass tests: a pair with its handshake done in one go. */
static int pair_setup(void **state) {
    pair_t *p = nsrv_malloc(sizeof *p);
    pair_open(p, 4096);
    *state = p;
    return 0;
}

static int pair_teardown(void **state) {
    pair_close(*state);
    nsrv_free(*state);
    return 0;
}

static void test_session_both_ways(void **state) {
    (void)state;
    static const size_t steps[] = {1, 7, 4096};
    for (size_t k = 0; k < NSRV_ARRAY_LEN(steps); k++) {
        pair_t p;
        pair_open(&p, steps[k]); /* the handshake, fed in pieces of 1, 7, 4096 bytes */
        assert_int_equal(p.plain.len, 0);
        /* A request larger than a record, in pieces. */
        static char big[100000];
        for (size_t i = 0; i < sizeof big; i++)
            big[i] = (char)('a' + i % 26);
        client_write(&p, big, sizeof big);
        pump(&p, steps[k] == 1 ? 997 : steps[k]);
        assert_int_equal(p.last, NSRV_TLS_OK);
        assert_int_equal(p.plain.len, sizeof big);
        assert_memory_equal(p.plain.data, big, sizeof big);
        assert_false(nsrv_tls_session_input_pending(p.server));
        /* A reply. */
        assert_true(nsrv_tls_session_write(p.server, "pong", 4));
        pump(&p, 4096);
        char got[16];
        assert_int_equal(client_read(&p, got, sizeof got), 4);
        assert_memory_equal(got, "pong", 4);
        /* The server's close_notify reaches the client as a clean end. */
        nsrv_tls_session_shutdown(p.server);
        pump(&p, 4096);
        assert_int_equal(client_read(&p, got, sizeof got), -1);
        pair_close(&p);
    }
}

static void test_session_partial_record_pending(void **state) {
    pair_t *p = *state;
    client_write(p, "hello", 5);
    char rec[256];
    int n = BIO_read(p->c_out, rec, sizeof rec);
    assert_true(n > 10);
    const char *why = NULL;
    /* Part of a record: nothing decrypted, the bytes are a request in flight. */
    assert_int_equal(nsrv_tls_session_feed(p->server, rec, 10, &p->plain, &why), NSRV_TLS_OK);
    assert_int_equal(p->plain.len, 0);
    assert_true(nsrv_tls_session_input_pending(p->server));
    assert_int_equal(nsrv_tls_session_feed(p->server, rec + 10, (size_t)n - 10, &p->plain, &why),
                     NSRV_TLS_OK);
    assert_int_equal(p->plain.len, 5);
    assert_false(nsrv_tls_session_input_pending(p->server));
}

static void test_session_peer_close_notify(void **state) {
    pair_t *p = *state;
    client_write(p, "last", 4);
    SSL_shutdown(p->client);
    pump(p, 4096);
    assert_int_equal(p->last, NSRV_TLS_CLOSED);
    assert_int_equal(p->plain.len, 4); /* the data before it is delivered */
}

static void test_session_garbage_fails(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char err[512] = "";
    config(&cfg);
    nsrv_tls_ctx_t *t = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    nsrv_config_free(&cfg);
    assert_non_null(t);
    static const unsigned char bad_record[] = {0x16, 0x03, 0x01, 0x00, 0x04,
                                               0xff, 0xff, 0xff, 0xff};
    static const unsigned char plaintext[] = {0x00, 0x00, 0x00, 0x1a, 0x00, 0x00, 0x00, 0x16};
    const unsigned char *inputs[] = {bad_record, plaintext};
    size_t lens[] = {sizeof bad_record, sizeof plaintext};
    for (size_t i = 0; i < 2; i++) {
        nsrv_tls_session_t *s = nsrv_tls_session_new(nsrv_tls_ctx_ssl(t));
        nsrv_buf_t plain;
        nsrv_buf_init(&plain);
        const char *why = NULL;
        assert_int_equal(nsrv_tls_session_feed(s, inputs[i], lens[i], &plain, &why),
                         NSRV_TLS_FAILED);
        assert_non_null(strstr(why, "TLS handshake failed"));
        assert_int_equal(plain.len, 0);
        assert_false(nsrv_tls_session_established(s));
        /* Once failed, it stays failed and sends nothing more. */
        assert_false(nsrv_tls_session_write(s, "x", 1));
        assert_int_equal(nsrv_tls_session_feed(s, "x", 1, &plain, &why), NSRV_TLS_FAILED);
        nsrv_buf_deinit(&plain);
        nsrv_tls_session_free(s);
    }
    nsrv_tls_ctx_destroy(t);
}

NSRV_TEST_MAIN(
    setup, teardown, cmocka_unit_test(test_first_byte), cmocka_unit_test(test_settings),
    cmocka_unit_test(test_reload_keeps_context_on_error), cmocka_unit_test(test_session_both_ways),
    cmocka_unit_test_setup_teardown(test_session_partial_record_pending, pair_setup, pair_teardown),
    cmocka_unit_test_setup_teardown(test_session_peer_close_notify, pair_setup, pair_teardown),
    cmocka_unit_test(test_session_garbage_fails))
