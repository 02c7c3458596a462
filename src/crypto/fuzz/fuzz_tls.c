/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for what a TLS client controls (docs/design/tls-and-access.md "TLS"): the first-byte
 * rule of every tls.server.mode, and the bytes that follow through a server session (tls_session.c)
 * with the test-mode certificate, fed in pieces. Input: one byte giving the piece size (0: all at
 * once), then the bytes of the connection.
 */
#include <stdint.h>
#include <stdlib.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/tls.h"

static nsrv_tls_ctx_t *server_ctx(void) {
    static nsrv_tls_ctx_t *ctx;
    if (!ctx) {
        nsrv_config_t cfg;
        nsrv_config_init_defaults(&cfg);
        nsrv_free(cfg.tls_config_file);
        cfg.tls_config_file = nsrv_strdup(""); /* nothing of the machine */
        char err[256];
        ctx = nsrv_tls_ctx_create(&cfg, err, sizeof err);
        nsrv_config_free(&cfg);
        if (!ctx)
            abort();
    }
    return ctx;
}

static void check_first_byte(uint8_t b) {
    for (int mode = NSRV_TLS_DISABLED; mode <= NSRV_TLS_ENFORCING; mode++) {
        nsrv_first_byte_t r = nsrv_tls_classify((nsrv_tls_mode_t)mode, b);
        bool tls = b == NSRV_TLS_HANDSHAKE_BYTE;
        bool want_served = tls ? mode != NSRV_TLS_DISABLED : mode != NSRV_TLS_ENFORCING;
        bool served = r == NSRV_FIRST_PLAIN || r == NSRV_FIRST_TLS;
        if (served != want_served || (served && (r == NSRV_FIRST_TLS) != tls))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    size_t step = data[0] ? data[0] : size;
    data++;
    size--;
    check_first_byte(data[0]);
    if (data[0] != NSRV_TLS_HANDSHAKE_BYTE)
        return 0;
    nsrv_tls_session_t *s = nsrv_tls_session_new(nsrv_tls_ctx_ssl(server_ctx()));
    if (!s)
        abort();
    nsrv_buf_t plain;
    nsrv_buf_init(&plain);
    for (size_t off = 0; off < size;) {
        size_t n = size - off < step ? size - off : step;
        const char *why = NULL;
        nsrv_tls_status_t st = nsrv_tls_session_feed(s, data + off, n, &plain, &why);
        off += n;
        const char *out = NULL;
        (void)nsrv_tls_session_output(s, &out);
        nsrv_tls_session_output_clear(s);
        if (st == NSRV_TLS_FAILED && !why)
            abort();
        if (st != NSRV_TLS_OK)
            break;
    }
    /* Plaintext only ever comes out of an established session. */
    if (plain.len > 0 && !nsrv_tls_session_established(s))
        abort();
    if (nsrv_tls_session_established(s))
        (void)nsrv_tls_session_write(s, "reply", 5);
    nsrv_tls_session_shutdown(s);
    nsrv_tls_session_output_clear(s);
    nsrv_buf_deinit(&plain);
    nsrv_tls_session_free(s);
    return 0;
}
