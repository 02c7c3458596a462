/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the gossip fuzz targets: the invariant check and the fixed keys. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/seal.h"
#include "fuzz_check.h"

/* The test-vector key whose seed is the 32 bytes first, first + 1, ... */
static inline void fuzz_key(uint8_t first, uint8_t pk[NSRV_SEAL_PK_LEN],
                            uint8_t sk[NSRV_SEAL_SK_LEN]) {
    uint8_t seed[NSRV_SEAL_SEED_LEN];
    for (int i = 0; i < NSRV_SEAL_SEED_LEN; i++)
        seed[i] = (uint8_t)(first + i);
    nsrv_seal_keypair_from_seed(seed, pk, sk);
}
