/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS settings and the OpenSSL server context (docs/design/tls-and-access.md "TLS").
 *
 * The settings are Java's TlsSystemConfig keys: first from nsrvd's config,
 * then overridden by the tls.* keys of the file named by tls.config.file when
 * it exists (Java's TlsHelper reads that file the same way; a missing file is
 * not an error). Client certificates follow Java's TlsHelper: the
 * need.client.auth word decides whether one is asked for (optional) or
 * required, and authClient whether it must verify (against trustCertPath, else
 * the system's CAs) or any certificate is accepted.
 *
 * Test mode without a configured certificate serves a P-256 certificate
 * self-signed at start (Java's Netty SelfSignedCertificate): clients in test
 * mode trust any certificate. It is made once and kept across reloads.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/fileio.h"
#include "nsrv/properties.h"
#include "nsrv/tls.h"
#include "tls_tickets.h"

/* A tls.properties file is a few lines; the cap stops a wrong path being slurped. */
#define TLS_FILE_MAX_BYTES (1u << 20)
/* Validity of the test-mode certificate; regenerated at every start. */
#define SELF_SIGNED_DAYS 365

typedef struct {
    nsrv_tls_mode_t mode;
    bool test_mode;
    bool auth_client;
    nsrv_tls_auth_t need_client_auth;
    uint32_t ticket_seconds; /* 0: no session tickets */
    char *cert_path, *key_path, *key_password, *trust_path;
} settings_t;

struct nsrv_tls_ctx {
    nsrv_tls_mode_t mode;
    SSL_CTX *ssl;
    EVP_PKEY *self_key; /* test mode's self-signed pair, once made */
    X509 *self_cert;
    char describe[512];
};

static void settings_free(settings_t *s) {
    nsrv_free(s->cert_path);
    nsrv_free(s->key_path);
    nsrv_free(s->key_password);
    nsrv_free(s->trust_path);
    memset(s, 0, sizeof *s);
}

static void set_str(char **field, const char *v) {
    nsrv_free(*field);
    *field = nsrv_strdup(v);
}

/* The config validated these words at load. */
static void settings_from_config(settings_t *s, const nsrv_config_t *cfg) {
    memset(s, 0, sizeof *s);
    s->mode = (nsrv_tls_mode_t)nsrv_tls_mode_parse(cfg->tls_server_mode);
    s->test_mode = cfg->tls_test_mode_enable;
    s->auth_client = cfg->tls_server_auth_client;
    s->need_client_auth = (nsrv_tls_auth_t)nsrv_tls_auth_parse(cfg->tls_server_need_client_auth);
    s->ticket_seconds = (uint32_t)cfg->tls_session_ticket_seconds;
    set_str(&s->cert_path, cfg->tls_server_cert_path);
    set_str(&s->key_path, cfg->tls_server_key_path);
    set_str(&s->key_password, cfg->tls_server_key_password);
    set_str(&s->trust_path, cfg->tls_server_trust_cert_path);
}

static int parse_bool(const char *v, bool *out) {
    if (strcasecmp(v, "true") == 0)
        *out = true;
    else if (strcasecmp(v, "false") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

/* One tls.* key of the tls.config.file; other keys are not TLS settings and are ignored. */
static int apply_file_key(settings_t *s, const char *k, const char *v) {
    int n;
    if (strcmp(k, "tls.server.mode") == 0) {
        if ((n = nsrv_tls_mode_parse(v)) < 0)
            return -1;
        s->mode = (nsrv_tls_mode_t)n;
    } else if (strcmp(k, "tls.test.mode.enable") == 0) {
        return parse_bool(v, &s->test_mode);
    } else if (strcmp(k, "tls.server.authClient") == 0) {
        return parse_bool(v, &s->auth_client);
    } else if (strcmp(k, "tls.server.need.client.auth") == 0) {
        if ((n = nsrv_tls_auth_parse(v)) < 0)
            return -1;
        s->need_client_auth = (nsrv_tls_auth_t)n;
    } else if (strcmp(k, "tls.server.certPath") == 0) {
        set_str(&s->cert_path, v);
    } else if (strcmp(k, "tls.server.keyPath") == 0) {
        set_str(&s->key_path, v);
    } else if (strcmp(k, "tls.server.keyPassword") == 0) {
        set_str(&s->key_password, v);
    } else if (strcmp(k, "tls.server.trustCertPath") == 0) {
        set_str(&s->trust_path, v);
    }
    return 0;
}

static int settings_load(settings_t *s, const nsrv_config_t *cfg, char *err, size_t errlen) {
    settings_from_config(s, cfg);
    const char *path = cfg->tls_config_file;
    if (!path[0])
        return 0;
    char *text = NULL;
    size_t len = 0;
    int rc = nsrv_file_read_all(path, TLS_FILE_MAX_BYTES, &text, &len);
    if (rc == -ENOENT)
        return 0; /* Java reads it only if it exists */
    if (rc != 0) {
        snprintf(err, errlen, "tls.config.file '%s': %s", path, strerror(-rc));
        return -1;
    }
    nsrv_props_t props;
    nsrv_props_init(&props);
    char perr[256] = "";
    rc = nsrv_props_parse(text, len, &props, perr, sizeof perr);
    nsrv_free(text);
    if (rc != 0)
        snprintf(err, errlen, "tls.config.file '%s': %s", path, perr);
    for (size_t i = 0; rc == 0 && i < props.count; i++) {
        const nsrv_prop_t *p = &props.items[i];
        if (apply_file_key(s, p->key, p->value) != 0) {
            snprintf(err, errlen, "tls.config.file '%s' line %u: bad value '%s' for %s", path,
                     p->line, p->value, p->key);
            rc = -1;
        }
    }
    nsrv_props_free(&props);
    return rc == 0 ? 0 : -1;
}

/* The reason of OpenSSL's last error, and the queue emptied. */
static void ssl_error(char *err, size_t errlen, const char *what, const char *path) {
    char reason[256] = "unknown error";
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    snprintf(err, errlen, "%s '%s': %s", what, path, reason);
}

/* Test mode: a fresh P-256 key and a certificate for "localhost" signed by itself. */
static int make_self_signed(nsrv_tls_ctx_t *t, char *err, size_t errlen) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    bool ok = key && x && RAND_bytes(serial, sizeof serial) == 1;
    serial[0] &= 0x7F; /* a positive serial number */
    ok = ok && (bn = BN_bin2bn(serial, sizeof serial, NULL)) &&
         BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_set_version(x, X509_VERSION_3);
    ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600) &&
         X509_gmtime_adj(X509_getm_notAfter(x), (long)SELF_SIGNED_DAYS * 24 * 3600);
    X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
    ok = ok &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost",
                                    -1, -1, 0) &&
         X509_set_issuer_name(x, name) && X509_set_pubkey(x, key);
    X509_EXTENSION *san =
        ok ? X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, "DNS:localhost") : NULL;
    ok = ok && san && X509_add_ext(x, san, -1) && X509_sign(x, key, EVP_sha256()) > 0;
    X509_EXTENSION_free(san);
    BN_free(bn);
    if (!ok) {
        ssl_error(err, errlen, "cannot make the test-mode certificate", "self-signed");
        EVP_PKEY_free(key);
        X509_free(x);
        return -1;
    }
    t->self_key = key;
    t->self_cert = x;
    return 0;
}

/* OpenSSL asks for the key's password through this; never from the terminal. */
static int password_cb(char *buf, int size, int rwflag, void *u) {
    (void)rwflag;
    const char *pw = u;
    size_t n = strlen(pw);
    if (n == 0 || n > (size_t)size)
        return -1; /* an encrypted key without (or with too long) a password fails to load */
    memcpy(buf, pw, n);
    return (int)n;
}

static EVP_PKEY *load_key(const settings_t *s, char *err, size_t errlen) {
    BIO *b = BIO_new_file(s->key_path, "r");
    EVP_PKEY *key = b ? PEM_read_bio_PrivateKey(b, NULL, password_cb, s->key_password) : NULL;
    BIO_free(b);
    if (!key)
        ssl_error(err, errlen,
                  s->key_password[0]
                      ? "cannot read tls.server.keyPath (with tls.server.keyPassword)"
                      : "cannot read tls.server.keyPath",
                  s->key_path);
    return key;
}

/* Java's InsecureTrustManagerFactory: any client certificate is accepted. */
static int accept_any_cb(int preverify_ok, X509_STORE_CTX *x) {
    (void)preverify_ok;
    (void)x;
    return 1;
}

static int setup_client_auth(SSL_CTX *ssl, const settings_t *s, char *err, size_t errlen) {
    if (s->need_client_auth == NSRV_TLS_AUTH_NONE) {
        SSL_CTX_set_verify(ssl, SSL_VERIFY_NONE, NULL);
        return 0;
    }
    int mode = SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE;
    if (s->need_client_auth == NSRV_TLS_AUTH_REQUIRE)
        mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    if (!s->auth_client) {
        SSL_CTX_set_verify(ssl, mode, accept_any_cb);
        return 0;
    }
    SSL_CTX_set_verify(ssl, mode, NULL);
    if (!s->trust_path[0])
        return SSL_CTX_set_default_verify_paths(ssl) == 1 ? 0 : -1; /* the system's CAs */
    if (SSL_CTX_load_verify_locations(ssl, s->trust_path, NULL) != 1) {
        ssl_error(err, errlen, "cannot read tls.server.trustCertPath", s->trust_path);
        return -1;
    }
    /* Tell clients which CAs we accept, so they pick the right certificate. */
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->trust_path);
    if (names)
        SSL_CTX_set_client_CA_list(ssl, names);
    ERR_clear_error();
    return 0;
}

static int load_identity(nsrv_tls_ctx_t *t, SSL_CTX *ssl, const settings_t *s, char *err,
                         size_t errlen) {
    bool have_cert = s->cert_path[0] != '\0', have_key = s->key_path[0] != '\0';
    if (have_cert != have_key) {
        snprintf(err, errlen, "tls.server.certPath and tls.server.keyPath go together");
        return -1;
    }
    if (!have_cert) {
        if (!s->test_mode) {
            snprintf(err, errlen,
                     "tls.test.mode.enable=false needs tls.server.certPath and "
                     "tls.server.keyPath");
            return -1;
        }
        if (!t->self_cert && make_self_signed(t, err, errlen) != 0)
            return -1;
        if (SSL_CTX_use_certificate(ssl, t->self_cert) != 1 ||
            SSL_CTX_use_PrivateKey(ssl, t->self_key) != 1) {
            ssl_error(err, errlen, "cannot use the test-mode certificate", "self-signed");
            return -1;
        }
        return 0;
    }
    if (SSL_CTX_use_certificate_chain_file(ssl, s->cert_path) != 1) {
        ssl_error(err, errlen, "cannot read tls.server.certPath", s->cert_path);
        return -1;
    }
    EVP_PKEY *key = load_key(s, err, errlen);
    if (!key)
        return -1;
    int ok = SSL_CTX_use_PrivateKey(ssl, key) == 1 && SSL_CTX_check_private_key(ssl) == 1;
    EVP_PKEY_free(key);
    if (!ok) {
        ssl_error(err, errlen, "tls.server.keyPath does not match tls.server.certPath",
                  s->key_path);
        return -1;
    }
    return 0;
}

static const char *auth_name(nsrv_tls_auth_t a) {
    return a == NSRV_TLS_AUTH_REQUIRE    ? "require"
           : a == NSRV_TLS_AUTH_OPTIONAL ? "optional"
                                         : "none";
}

static SSL_CTX *build(nsrv_tls_ctx_t *t, const settings_t *s, char *err, size_t errlen) {
    ERR_clear_error();
    SSL_CTX *ssl = SSL_CTX_new(TLS_server_method());
    if (!ssl) {
        ssl_error(err, errlen, "cannot create the TLS context", "");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ssl, TLS1_2_VERSION);
    /* Renegotiation only costs handshakes; idle connections drop their record buffers. */
    SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    /* Tickets are sealed by keys of this context only: a reload invalidates them all, so a
     * resumption never skips the checks of a newer certificate or trust store. */
    if (nsrv__tickets_setup(ssl, s->ticket_seconds) != 0) {
        ssl_error(err, errlen, "cannot make the session ticket keys", "tlsSessionTicketSeconds");
        SSL_CTX_free(ssl);
        return NULL;
    }
    if (load_identity(t, ssl, s, err, errlen) != 0 || setup_client_auth(ssl, s, err, errlen) != 0) {
        SSL_CTX_free(ssl);
        return NULL;
    }
    char tickets[48] = "off";
    if (s->ticket_seconds)
        snprintf(tickets, sizeof tickets, "TLS 1.3, %" PRIu32 " s", s->ticket_seconds);
    snprintf(t->describe, sizeof t->describe,
             "tls.server.mode=%s, certificate %s, client certificate %s%s, session tickets %s",
             s->mode == NSRV_TLS_ENFORCING ? "enforcing" : "permissive",
             s->cert_path[0] ? s->cert_path : "self-signed (test mode)",
             auth_name(s->need_client_auth),
             s->need_client_auth == NSRV_TLS_AUTH_NONE ? ""
             : s->auth_client                          ? " (verified)"
                                                       : " (any accepted: authClient=false)",
             tickets);
    return ssl;
}

nsrv_tls_ctx_t *nsrv_tls_ctx_create(const nsrv_config_t *cfg, char *err, size_t errlen) {
    settings_t s;
    if (settings_load(&s, cfg, err, errlen) != 0) {
        settings_free(&s);
        return NULL;
    }
    nsrv_tls_ctx_t *t = nsrv_calloc(1, sizeof *t);
    t->mode = s.mode;
    snprintf(t->describe, sizeof t->describe, "tls.server.mode=disabled");
    if (s.mode != NSRV_TLS_DISABLED && !(t->ssl = build(t, &s, err, errlen))) {
        nsrv_tls_ctx_destroy(t);
        t = NULL;
    }
    settings_free(&s);
    return t;
}

int nsrv_tls_ctx_reload(nsrv_tls_ctx_t *t, const nsrv_config_t *fresh, char *err, size_t errlen) {
    if (t->mode == NSRV_TLS_DISABLED)
        return 0;
    settings_t s;
    int rc = settings_load(&s, fresh, err, errlen);
    if (rc == 0) {
        s.mode = t->mode; /* the first-byte rule stays the one of the start */
        char keep[sizeof t->describe];
        memcpy(keep, t->describe, sizeof keep);
        SSL_CTX *ssl = build(t, &s, err, errlen);
        if (ssl) {
            SSL_CTX_free(t->ssl); /* open connections hold their own reference */
            t->ssl = ssl;
        } else {
            memcpy(t->describe, keep, sizeof keep);
            rc = -1;
        }
    }
    settings_free(&s);
    return rc;
}

void nsrv_tls_ctx_destroy(nsrv_tls_ctx_t *t) {
    if (!t)
        return;
    SSL_CTX_free(t->ssl);
    EVP_PKEY_free(t->self_key);
    X509_free(t->self_cert);
    nsrv_free(t);
}

nsrv_tls_mode_t nsrv_tls_ctx_mode(const nsrv_tls_ctx_t *t) {
    return t->mode;
}

nsrv_ssl_ctx_t *nsrv_tls_ctx_ssl(const nsrv_tls_ctx_t *t) {
    return t->ssl;
}

const char *nsrv_tls_ctx_describe(const nsrv_tls_ctx_t *t) {
    return t->describe;
}
