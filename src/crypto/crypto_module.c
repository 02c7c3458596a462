/* SPDX-License-Identifier: Apache-2.0 */
/* The table nsrvd-crypto.so exports (crypto.h); tests link it directly (nsrv_crypto_builtin). */
#include "crypto_module.h"

#include "nsrv/config.h"

const nsrv_crypto_api_t nsrv_crypto_module_v1 = {
    .abi = NSRV_CRYPTO_ABI,
    .size = sizeof(nsrv_crypto_api_t),
    .config_size = sizeof(nsrv_config_t),
    .tls_ctx_create = nsrv_tls_ctx_create,
    .tls_ctx_reload = nsrv_tls_ctx_reload,
    .tls_ctx_destroy = nsrv_tls_ctx_destroy,
    .tls_ctx_mode = nsrv_tls_ctx_mode,
    .tls_ctx_ssl = nsrv_tls_ctx_ssl,
    .tls_ctx_describe = nsrv_tls_ctx_describe,
    .session_new = nsrv_tls_session_new,
    .session_free = nsrv_tls_session_free,
    .session_feed = nsrv_tls_session_feed,
    .session_write = nsrv_tls_session_write,
    .session_shutdown = nsrv_tls_session_shutdown,
    .session_output = nsrv_tls_session_output,
    .session_output_clear = nsrv_tls_session_output_clear,
    .session_established = nsrv_tls_session_established,
    .session_input_pending = nsrv_tls_session_input_pending,
    .session_describe = nsrv_tls_session_describe,
    .hmac_sha1_b64 = nsrv_hmac_sha1_b64,
};
