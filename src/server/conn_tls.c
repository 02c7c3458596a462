/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS on a connection (docs/design/tls-and-access.md "TLS"): the first byte decides, as Java's
 * HandshakeHandler does, whether the connection is TLS, plaintext, or refused
 * by tls.server.mode. A TLS connection's session (tls_session.c) then belongs to
 * its engine (conn_engine.c), which decrypts what is received into the same
 * framing as a plaintext connection and encrypts the replies. A graceful close
 * sends close_notify after the last reply (here: a best-effort write on the socket).
 *
 * OpenSSL is reached through nsrvd-crypto.so (include/nsrv/crypto.h), loaded at
 * start when TLS needs a certificate there, and not before the first TLS
 * handshake in the default set-up (permissive, test mode, no certificate
 * configured), so a node that only ever serves plaintext never maps libssl and
 * libcrypto. The start still fails at once when the module is missing.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "nsrv/crypto.h"
#include "nsrv/buf.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "server_int.h"
#include "nsrv/tls.h"

/* The tls.config.file exists: its tls.* keys (the mode among them) decide, so TLS is made now. */
static bool tls_file_present(const nsrv_config_t *cfg) {
    return cfg->tls_config_file[0] && access(cfg->tls_config_file, F_OK) == 0;
}

/* Permissive with test mode's self-signed certificate and nothing else to check: nothing
 * about the context can fail for the configuration's sake, so it waits for a TLS client. */
static bool tls_on_demand(const nsrv_config_t *cfg) {
    return !tls_file_present(cfg) &&
           nsrv_tls_mode_parse(cfg->tls_server_mode) == NSRV_TLS_PERMISSIVE &&
           cfg->tls_test_mode_enable && !cfg->tls_server_cert_path[0] &&
           nsrv_tls_auth_parse(cfg->tls_server_need_client_auth) == NSRV_TLS_AUTH_NONE;
}

/* Loads the module and builds the context from cfg into srv. */
static int make_ctx(nsrv_server_t *srv, const nsrv_config_t *cfg, char *err, size_t errlen) {
    const nsrv_crypto_api_t *crypto = nsrv_crypto_get(err, errlen);
    nsrv_tls_ctx_t *t = crypto ? crypto->tls_ctx_create(cfg, err, errlen) : NULL;
    if (!t)
        return -1;
    srv->crypto = crypto;
    srv->tls = t;
    return 0;
}

int nsrv__tls_start(nsrv_server_t *srv) {
    char err[512] = "";
    srv->tls_mode = (nsrv_tls_mode_t)nsrv_tls_mode_parse(srv->cfg->tls_server_mode);
    if (!tls_file_present(srv->cfg) && srv->tls_mode == NSRV_TLS_DISABLED) {
        nsrv_log_notice("TLS", "tls.server.mode=disabled");
        return 0;
    }
    if (tls_on_demand(srv->cfg)) {
        char path[PATH_MAX];
        if (nsrv_crypto_locate(path, sizeof path, err, sizeof err) != 0) {
            nsrv_log_error("TLS", "cannot start: %s", err);
            return -1;
        }
        srv->tls_on_demand = true;
        nsrv_log_notice("TLS", "tls.server.mode=permissive, certificate self-signed at the first "
                               "TLS handshake (test mode), client certificate none");
        return 0;
    }
    if (make_ctx(srv, srv->cfg, err, sizeof err) != 0) {
        nsrv_log_error("TLS", "cannot start: %s", err);
        return -1;
    }
    srv->tls_mode = srv->crypto->tls_ctx_mode(srv->tls);
    nsrv_log_notice("TLS", "%s", srv->crypto->tls_ctx_describe(srv->tls));
    return 0;
}

/* The first TLS client of an on-demand node: the module and the certificate, now. A failure
 * is logged once and refuses TLS until the next start; plaintext goes on. */
static bool tls_ready(nsrv_server_t *srv) {
    if (srv->tls)
        return true;
    if (!srv->tls_on_demand)
        return false;
    srv->tls_on_demand = false;
    char err[512] = "";
    if (make_ctx(srv, srv->cfg, err, sizeof err) != 0) {
        nsrv_log_error("TLS",
                       "first TLS handshake: cannot make the context, TLS connections are "
                       "refused until the next start: %s",
                       err);
        return false;
    }
    nsrv_log_notice("TLS", "first TLS handshake: %s", srv->crypto->tls_ctx_describe(srv->tls));
    return true;
}

bool nsrv__tls_reload(nsrv_server_t *srv, const nsrv_config_t *fresh) {
    if (srv->tls_mode == NSRV_TLS_DISABLED)
        return true;
    if (strcmp(fresh->tls_server_mode, srv->cfg->tls_server_mode) != 0)
        nsrv_log_notice("TLS", "SIGHUP: tls.server.mode changes at the next start only");
    char err[512] = "";
    if (!srv->tls) {
        /* Still on demand: the first handshake builds from the keys this reload applies, unless
         * they now name a certificate, which is loaded (and checked) now like any reload. */
        if (!srv->tls_on_demand || tls_on_demand(fresh) ||
            nsrv_tls_mode_parse(fresh->tls_server_mode) != NSRV_TLS_PERMISSIVE)
            return true;
        if (make_ctx(srv, fresh, err, sizeof err) != 0) {
            nsrv_log_error("TLS", "SIGHUP: keeping the self-signed certificate on demand: %s", err);
            return false;
        }
        srv->tls_on_demand = false;
    } else if (srv->crypto->tls_ctx_reload(srv->tls, fresh, err, sizeof err) != 0) {
        nsrv_log_error("TLS", "SIGHUP: keeping the running certificate: %s", err);
        return false;
    }
    nsrv_log_notice("TLS", "SIGHUP: new connections use: %s",
                    srv->crypto->tls_ctx_describe(srv->tls));
    return true;
}

void nsrv__tls_stop(nsrv_server_t *srv) {
    if (srv->tls)
        srv->crypto->tls_ctx_destroy(srv->tls);
    srv->tls = NULL;
    nsrv_buf_deinit(&srv->conn_host.tls_plain);
    nsrv_buf_deinit(&srv->conn_host.tls_flat);
}

void nsrv__tls_metrics(nsrv_server_t *srv, nsrv_buf_t *out) {
    nsrv_buf_printf(out,
                    "# HELP nsrvd_tls_handshakes_total TLS handshakes on the NameServer port.\n"
                    "# TYPE nsrvd_tls_handshakes_total counter\n"
                    "nsrvd_tls_handshakes_total{result=\"ok\"} %" PRIu64 "\n"
                    "nsrvd_tls_handshakes_total{result=\"failed\"} %" PRIu64 "\n"
                    "# HELP nsrvd_tls_first_byte_refused_total Connections closed at their first "
                    "byte by tls.server.mode.\n"
                    "# TYPE nsrvd_tls_first_byte_refused_total counter\n"
                    "nsrvd_tls_first_byte_refused_total{reason=\"tls_disabled\"} %" PRIu64 "\n"
                    "nsrvd_tls_first_byte_refused_total{reason=\"plaintext_enforcing\"} %" PRIu64
                    "\n",
                    srv->conn_host.tls_handshakes_ok, srv->conn_host.tls_handshakes_failed,
                    srv->tls_refused_total, srv->plain_refused_total);
}

bool nsrv__conn_first_byte(nsrv_conn_t *c, uint8_t first) {
    nsrv_server_t *srv = c->srv;
    switch (nsrv_tls_classify(srv->tls_mode, first)) {
    case NSRV_FIRST_PLAIN:
        return true;
    case NSRV_FIRST_REFUSE_TLS:
        srv->tls_refused_total++;
        nsrv__conn_close(c, "TLS handshake while tls.server.mode=disabled");
        return false;
    case NSRV_FIRST_REFUSE_PLAIN:
        srv->plain_refused_total++;
        nsrv__conn_close(c, "plaintext while tls.server.mode=enforcing");
        return false;
    case NSRV_FIRST_TLS:
        break;
    }
    nsrv_ssl_ctx_t *ssl = tls_ready(srv) ? srv->crypto->tls_ctx_ssl(srv->tls) : NULL;
    nsrv_tls_session_t *session = ssl ? srv->crypto->session_new(ssl) : NULL;
    if (!session) {
        srv->conn_host.tls_handshakes_failed++;
        nsrv__conn_close(c, "cannot create a TLS session");
        return false;
    }
    nsrv__ce_start_tls(&c->eng, srv->crypto, session);
    return true;
}

void nsrv__conn_tls_up(nsrv_conn_t *c) {
    char desc[256];
    c->eng.crypto->session_describe(c->eng.tls, desc, sizeof desc);
    nsrv_log_info("TLS", "connection '%s': %s", c->peer, desc);
}

void nsrv__conn_tls_close_notify(nsrv_conn_t *c) {
    const nsrv_crypto_api_t *cr = c->eng.crypto;
    cr->session_shutdown(c->eng.tls);
    const char *p = NULL;
    size_t n = cr->session_output(c->eng.tls, &p);
    if (n > 0) {
        /* Best effort: nothing else is queued, so the socket takes these few bytes now. */
        uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    cr->session_output_clear(c->eng.tls);
}
