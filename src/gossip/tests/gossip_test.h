/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the gossip tests: the fixed test keys (the same seeds as
 * proto/vectors/gossip/gen_vectors.py), a datagram collector for the sender
 * functions, and hex-file reading. Header-only so each test is one file.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/fileio.h"
#include "nsrv/gossip_msg.h"
#include "nsrv/gossip_peer.h"
#include "nsrv/seal.h"
#include "nsrv/text.h"

#define GT_CLUSTER "DefaultCluster"
#define GT_INC UINT64_C(1718000000000)
#define GT_WALL INT64_C(1718000123456)

/* Node n's key k: seed bytes start at 0x00 (1/1), 0x20 (2/1), 0x40 (1/2). */
typedef struct {
    uint8_t pk[NSRV_SEAL_PK_LEN];
    uint8_t sk[NSRV_SEAL_SK_LEN];
} gt_key_t;

static inline gt_key_t gt_key_from(uint8_t first) {
    uint8_t seed[32];
    for (int i = 0; i < 32; i++)
        seed[i] = (uint8_t)(first + i);
    gt_key_t k;
    nsrv_seal_keypair_from_seed(seed, k.pk, k.sk);
    return k;
}
static inline gt_key_t gt_key_1_1(void) {
    return gt_key_from(0x00);
}
static inline gt_key_t gt_key_2_1(void) {
    return gt_key_from(0x20);
}
static inline gt_key_t gt_key_1_2(void) {
    return gt_key_from(0x40);
}

/* Collects emitted datagrams. */
#define GT_MAX_DGRAMS 4096
typedef struct {
    uint8_t *d[GT_MAX_DGRAMS];
    size_t len[GT_MAX_DGRAMS];
    size_t n;
    int fail_at; /* emit returns -EPIPE for datagram number fail_at (1-based); 0 = never */
} gt_sink_t;

static inline int gt_emit(void *ud, const uint8_t *dgram, size_t len) {
    gt_sink_t *s = ud;
    if (s->fail_at && (int)s->n + 1 == s->fail_at)
        return -EPIPE;
    assert_true(s->n < GT_MAX_DGRAMS);
    s->d[s->n] = nsrv_malloc(len);
    memcpy(s->d[s->n], dgram, len);
    s->len[s->n] = len;
    s->n++;
    return 0;
}

static inline void gt_sink_free(gt_sink_t *s) {
    for (size_t i = 0; i < s->n; i++)
        nsrv_free(s->d[i]);
    s->n = 0;
}

/* A version-1 envelope of cluster GT_CLUSTER at incarnation GT_INC and wall clock GT_WALL;
 * the body is empty (zeroed). */
static inline nsrv_gossip_msg_t gt_envelope(uint8_t type, uint8_t src, uint64_t seq,
                                            uint64_t src_mono_ms, uint8_t dst, uint8_t key_id) {
    nsrv_gossip_msg_t m;
    memset(&m, 0, sizeof m);
    m.ver = 1;
    m.type = type;
    m.cluster = nsrv_str_c(GT_CLUSTER);
    m.src = src;
    m.src_inc = GT_INC;
    m.seq = seq;
    m.src_mono_ms = src_mono_ms;
    m.wall_ms = (uint64_t)GT_WALL;
    m.dst = dst;
    m.key_id = key_id;
    return m;
}

/* A sender for node `node` with the given key, incarnation GT_INC, mono start 1000. */
static inline void gt_sender(nsrv_gossip_sender_t *s, uint8_t node, uint8_t key_id,
                             const gt_key_t *k) {
    assert_int_equal(
        nsrv_gossip_sender_init(s, nsrv_str_c(GT_CLUSTER), node, GT_INC, 1000, key_id, k->sk), 0);
}

static inline nsrv_gossip_send_opts_t gt_opts(uint8_t dst, uint32_t budget, uint64_t mono) {
    nsrv_gossip_send_opts_t o = {dst, budget, mono, GT_WALL};
    return o;
}

/* The vectors of proto/vectors/gossip (NSRV_SOURCE_DIR comes from nsrv_add_test). */
#define NSRV_GOSSIP_VECTORS NSRV_SOURCE_DIR "/proto/vectors/gossip"

/* Reads a hex file (whitespace ignored) into a heap buffer. */
static inline uint8_t *gt_read_hex(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NSRV_GOSSIP_VECTORS, name);
    char *text = NULL;
    size_t tlen = 0;
    assert_int_equal(nsrv_file_read_all(path, 1 << 20, &text, &tlen), 0);
    uint8_t *out = nsrv_malloc(tlen / 2 + 1);
    size_t n = 0;
    int hi = -1;
    for (size_t i = 0; i < tlen; i++) {
        int v = nsrv_hex_digit(text[i]);
        if (v < 0)
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    assert_true(hi < 0);
    nsrv_free(text);
    *len = n;
    return out;
}

static inline struct sockaddr_in gt_sin(const char *ip, uint16_t port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}
