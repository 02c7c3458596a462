/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Eight bytes a step (every route query hashes the topic it names: byte-wise
 * FNV-1a took ~125 instructions for a 20-byte name, this ~40), then a
 * finalizer (MurmurHash3's fmix32) that spreads every input bit over the low
 * bits that pick a slot, so names that differ only in their last digits
 * (topic-broker-0001-17, ...) do not cluster.
 */
#include "nsrv/hash.h"

#include <string.h>

uint32_t nsrv_hash_bytes(const void *data, size_t len) {
    const unsigned char *start = data, *p = start;
    uint64_t h = 0x9e3779b97f4a7c15u ^ len;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t tail = 0;
    if (len && p != start) {
        memcpy(&tail, p + len - 8, 8); /* the last 8 bytes, overlapping the words hashed */
    } else {
        for (size_t i = 0; i < len; i++)
            tail |= (uint64_t)p[i] << (8 * i);
    }
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53u;
    uint32_t r = (uint32_t)(h ^ (h >> 32));
    r ^= r >> 16;
    r *= 0x85ebca6bu;
    r ^= r >> 13;
    r *= 0xc2b2ae35u;
    r ^= r >> 16;
    return r ? r : 1;
}
