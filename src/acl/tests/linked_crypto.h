/* SPDX-License-Identifier: Apache-2.0 */
/* The ACL tests' group setup: OpenSSL linked in, as nsrvd would load it from nsrvd-crypto.so. */
#pragma once

#include "nsrv/crypto.h"

static inline int use_linked_crypto(void **state) {
    (void)state;
    nsrv_crypto_use(&nsrv_crypto_module_v1);
    return 0;
}
