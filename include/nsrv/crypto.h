/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What nsrvd needs of OpenSSL, behind one function table: TLS on the listen
 * port (nsrv/tls.h, src/crypto/tls_*.c) and the ACL signature's HmacSHA1. The table lives
 * in nsrvd-crypto.so, which nsrvd loads only when TLS or adminAclEnable is
 * configured: libcrypto's and libssl's text (4.6 MB, resident as soon as they
 * are mapped because their constructors run at load) then stays out of every
 * process that does not use them. Tests and fuzzers link the implementation
 * directly and install it with nsrv_crypto_use.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "nsrv/tls.h"

/* Raised whenever a member changes meaning, type or place. */
#define NSRV_CRYPTO_ABI 1
/* The module's file name; found next to nsrvd (build tree) or in ../lib/nsrvd (installed). */
#define NSRV_CRYPTO_MODULE "nsrvd-crypto.so"
/* The table's symbol in the module. */
#define NSRV_CRYPTO_SYMBOL "nsrv_crypto_module_v1"

typedef struct nsrv_crypto_api {
    uint32_t abi;         /* NSRV_CRYPTO_ABI the module was built with */
    uint32_t size;        /* sizeof(nsrv_crypto_api_t) there */
    uint32_t config_size; /* sizeof(nsrv_config_t) there: the configuration is passed by pointer */

    nsrv_tls_ctx_t *(*tls_ctx_create)(const struct nsrv_config *cfg, char *err, size_t errlen);
    int (*tls_ctx_reload)(nsrv_tls_ctx_t *t, const struct nsrv_config *fresh, char *err,
                          size_t errlen);
    void (*tls_ctx_destroy)(nsrv_tls_ctx_t *t);
    nsrv_tls_mode_t (*tls_ctx_mode)(const nsrv_tls_ctx_t *t);
    nsrv_ssl_ctx_t *(*tls_ctx_ssl)(const nsrv_tls_ctx_t *t);
    const char *(*tls_ctx_describe)(const nsrv_tls_ctx_t *t);

    nsrv_tls_session_t *(*session_new)(nsrv_ssl_ctx_t *ctx);
    void (*session_free)(nsrv_tls_session_t *s);
    nsrv_tls_status_t (*session_feed)(nsrv_tls_session_t *s, const void *data, size_t len,
                                      nsrv_buf_t *plain, const char **why);
    bool (*session_write)(nsrv_tls_session_t *s, const void *data, size_t len);
    void (*session_shutdown)(nsrv_tls_session_t *s);
    size_t (*session_output)(nsrv_tls_session_t *s, const char **p);
    void (*session_output_clear)(nsrv_tls_session_t *s);
    bool (*session_established)(const nsrv_tls_session_t *s);
    bool (*session_input_pending)(const nsrv_tls_session_t *s);
    void (*session_describe)(const nsrv_tls_session_t *s, char *out, size_t len);

    /* base64(HmacSHA1(key, the parts in order)) into out (28 characters and a NUL); 0 or -1. */
    int (*hmac_sha1_b64)(const void *key, size_t key_len, const struct iovec *parts, size_t n_parts,
                         char out[29]);
} nsrv_crypto_api_t;

/**
 * The table: the one installed by nsrv_crypto_use, else nsrvd-crypto.so loaded
 * (once; later calls return the same table). NULL with the reason in err when
 * the module is missing or from another build.
 */
const nsrv_crypto_api_t *nsrv_crypto_get(char *err, size_t errlen);

/* The table if it is already there (installed or loaded), else NULL; loads nothing. */
const nsrv_crypto_api_t *nsrv_crypto_loaded(void);

/* Installs a table linked into the program (tests, fuzzers); nsrv_crypto_get returns it. */
void nsrv_crypto_use(const nsrv_crypto_api_t *api);

/* The implementation's table: what nsrvd-crypto.so exports, and what a program linking
 * nsrv_crypto_impl (tests, fuzzers) installs with nsrv_crypto_use. */
extern const nsrv_crypto_api_t nsrv_crypto_module_v1;

/**
 * Where the module would be loaded from, without loading it: 0 with the path in
 * out, or -1 with the places looked at in err. Lets a start that will need the
 * module later (TLS made at the first handshake) fail at once if it is missing.
 */
int nsrv_crypto_locate(char *out, size_t outlen, char *err, size_t errlen);
