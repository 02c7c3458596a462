/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the gossip secret-key file's contents (gossipSecretKeyFile bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/seal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready)
        ready = nsrv_seal_init() == 0 ? 1 : -1;
    if (ready < 0)
        return 0;
    uint8_t pk[NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
    if (nsrv_seal_sk_parse((const char *)data, size, pk, sk) == 0) {
        /* A seed is 32 bytes: 43 or 44 base64 characters, so an accepted file is short. */
        if (size < 43)
            abort();
        /* The pair must be consistent: a signature made with sk verifies under pk. */
        uint8_t sig[NSRV_SEAL_SIG_LEN];
        nsrv_seal_sign(sk, data, size, sig);
        if (nsrv_seal_verify(pk, data, size, sig) != 0)
            abort();
    }
    return 0;
}
