/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenSSL side of crypto.h: what nsrvd-crypto.so holds and tests link directly. */
#pragma once

#include "nsrv/crypto.h"

/* HmacSHA1 over parts, base64 (hmac_sha1.c). */
int nsrv_hmac_sha1_b64(const void *key, size_t key_len, const struct iovec *parts, size_t n_parts,
                       char out[29]);
