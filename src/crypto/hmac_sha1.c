/* SPDX-License-Identifier: Apache-2.0 */
/* HmacSHA1, base64-encoded, from libcrypto: the ACL signature's MAC (src/acl/acl_sign.c). */
#include <openssl/core_names.h>
#include <openssl/evp.h>

#include "crypto_module.h"

/* Fetched once: HMAC's implementation lookup is not free. */
static EVP_MAC *hmac_impl(void) {
    static EVP_MAC *mac;
    if (!mac)
        mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    return mac;
}

int nsrv_hmac_sha1_b64(const void *key, size_t key_len, const struct iovec *parts, size_t n_parts,
                       char out[29]) {
    int rc = -1;
    EVP_MAC_CTX *ctx = hmac_impl() ? EVP_MAC_CTX_new(hmac_impl()) : NULL;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA1", 0),
                           OSSL_PARAM_construct_end()};
    if (!ctx || !EVP_MAC_init(ctx, key, key_len, params))
        goto done;
    for (size_t i = 0; i < n_parts; i++)
        if (parts[i].iov_len && !EVP_MAC_update(ctx, parts[i].iov_base, parts[i].iov_len))
            goto done;
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t md_len = 0;
    if (!EVP_MAC_final(ctx, md, &md_len, sizeof md) || md_len != 20)
        goto done;
    EVP_EncodeBlock((unsigned char *)out, md, (int)md_len);
    out[28] = '\0';
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    return rc;
}
