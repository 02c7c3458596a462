/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the pull-response decoder. Byte 0 picks the feed chunk
 * size (1..256, or everything at once when 0); the rest is the TCP stream,
 * decoded against the vector nonce a0..af and node 2's vector key. Every
 * outcome must be a clean return; an accepted response must hold items whose
 * broker keys match their identities.
 */
#include <stddef.h>
#include <stdint.h>

#include "nsrv/gossip_msg.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static nsrv_gossip_key_t key;
static bool key_ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (!key_ready) {
        uint8_t sk[64];
        key.key_id = 1;
        fuzz_key(0x20, key.pk, sk);
        key_ready = true;
    }
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    for (int i = 0; i < NSRV_GOSSIP_NONCE_LEN; i++)
        nonce[i] = (uint8_t)(0xa0 + i);
    size_t chunk = data[0] ? data[0] : size;
    data++;
    size--;

    nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(nonce, &key, 1);
    int rc = NSRV_AGAIN;
    for (size_t off = 0; off < size; off += chunk) {
        rc = nsrv_gossip_pull_dec_feed(d, data + off, NSRV_MIN(chunk, size - off));
        if (rc != NSRV_AGAIN)
            break;
    }
    FUZZ_CHECK(rc == NSRV_AGAIN || rc == 0 || rc == NSRV_GOSSIP_EDECODE || rc == NSRV_ETOOBIG ||
               rc == NSRV_GOSSIP_EKEY_ID || rc == NSRV_GOSSIP_EBAD_SIG);
    const nsrv_gossip_pull_item_t *items;
    size_t n = nsrv_gossip_pull_dec_items(d, &items);
    FUZZ_CHECK(rc == 0 || n == 0);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(items[i].bkey ==
                   nsrv_gossip_bkey(items[i].cluster, items[i].name, items[i].id, items[i].addr));
        FUZZ_CHECK(items[i].acting_master >= -1 && items[i].acting_master <= 1);
    }
    nsrv_gossip_pull_dec_destroy(&d);
    return 0;
}
