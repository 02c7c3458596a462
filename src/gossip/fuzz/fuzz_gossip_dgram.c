/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for gossip datagrams. The first byte picks the path:
 *   0  the whole UDP receive pipeline (nsrv_gossip_peer_check) against a
 *      fixed peer table (node 1 at 127.0.0.1 with the vector keys 1 and 2;
 *      we are node 2, clocks fixed at the vectors' wall time), then the
 *      same bytes again (must be refused if first accepted);
 *   1  the structural decoder without the signature (nsrv_gossip_msg_decode):
 *      what decodes must re-encode and decode to the same fields;
 *   2  the TCP PULL_REQ pipeline (nsrv_gossip_peer_check_pull);
 *   3  a body parser directly: byte 1 is the type, the rest the body, behind
 *      a fixed valid envelope, to reach deep code from unsigned input.
 * Nothing may crash; invariants abort.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "nsrv/gossip_msg.h"
#include "nsrv/gossip_peer.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WALL INT64_C(1718000123456)

static uint8_t pk11[32], sk11[64], pk12[32], sk12[64];
static bool keys_ready;

static nsrv_gossip_peers_t *make_peers(void) {
    if (!keys_ready) {
        fuzz_key(0x00, pk11, sk11);
        fuzz_key(0x40, pk12, sk12);
        keys_ready = true;
    }
    nsrv_gossip_key_t keys[2] = {{1, {0}}, {2, {0}}};
    memcpy(keys[0].pk, pk11, 32);
    memcpy(keys[1].pk, pk12, 32);
    nsrv_gossip_peer_conf_t conf = {1, "127.0.0.1:7946", keys, 2};
    nsrv_gossip_peers_t *t = nsrv_gossip_peers_create(NSRV_GOSSIP_DGRAM_DEFAULT);
    FUZZ_CHECK(nsrv_gossip_peers_configure(t, &conf, 1) == 0);
    return t;
}

static void check_reason(int rc) {
    FUZZ_CHECK(rc == 0 || nsrv_gossip_reason_index(rc) >= 0);
}

/* Uses every decoded list element so sanitizers see the memory. */
static uint64_t touch(const nsrv_gossip_msg_t *m) {
    uint64_t acc = 0;
    switch (m->type) {
    case NSRV_GOSSIP_DIGEST_FULL:
        for (size_t i = 0; i < m->body.full.n; i++) {
            FUZZ_CHECK(m->body.full.entries[i].bkey >= m->body.full.key_lo &&
                       m->body.full.entries[i].bkey <= m->body.full.key_hi);
            acc += m->body.full.entries[i].age_ms;
        }
        FUZZ_CHECK(m->body.full.part < m->body.full.nparts);
        break;
    case NSRV_GOSSIP_DIGEST_DELTA:
        FUZZ_CHECK(m->body.delta.n > 0);
        for (size_t i = 0; i < m->body.delta.n; i++)
            acc += m->body.delta.entries[i].age_ms;
        break;
    case NSRV_GOSSIP_TOMBSTONE:
        for (size_t i = 0; i < m->body.tomb.n; i++)
            acc += m->body.tomb.tombs[i].reason;
        break;
    case NSRV_GOSSIP_PULL_REQ:
        for (size_t i = 0; i < m->body.pull.n; i++)
            acc += m->body.pull.keys[i];
        break;
    case NSRV_GOSSIP_ANNOUNCE:
        /* What reaches the address service is a host that cannot break its list. */
        FUZZ_CHECK(nsrv_gossip_announce_problem(&m->body.announce) == NULL);
        for (size_t i = 0; i < m->body.announce.ns_host.len; i++)
            acc += (uint8_t)m->body.announce.ns_host.ptr[i];
        acc += m->body.announce.status_host.len + m->body.announce.status_port;
        break;
    default:
        break;
    }
    return acc;
}

static void run_pipeline(const uint8_t *d, size_t n, bool tcp, nsrv_arena_t *a) {
    nsrv_gossip_peers_t *t = make_peers();
    struct sockaddr_in from;
    memset(&from, 0, sizeof from);
    from.sin_family = AF_INET;
    from.sin_port = htons(7946);
    from.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    nsrv_gossip_msg_t m;
    nsrv_gossip_peer_t *p = NULL;
    int (*check)(nsrv_gossip_peers_t *, uint8_t, const char *, const uint8_t *, size_t,
                 const struct sockaddr *, uint64_t, int64_t, nsrv_gossip_msg_t *, nsrv_arena_t *,
                 nsrv_gossip_peer_t **) =
        tcp ? nsrv_gossip_peer_check_pull : nsrv_gossip_peer_check;
    int rc =
        check(t, 2, "DefaultCluster", d, n, (const struct sockaddr *)&from, 5000, WALL, &m, a, &p);
    check_reason(rc);
    if (rc == 0) {
        FUZZ_CHECK(p == nsrv_gossip_peers_find(t, 1));
        (void)touch(&m);
        if (m.type == NSRV_GOSSIP_DIGEST_DELTA) {
            uint32_t age = m.body.delta.entries[0].age_ms;
            /* Unanchored: unusable. */
            FUZZ_CHECK(nsrv_gossip_peer_last_seen(p, m.src_mono_ms, age, 5000) == 0);
            nsrv_gossip_peer_anchor(p, m.src_inc, m.src_mono_ms, 4000, 5000);
            /* The request left at 4000: nothing can map later than that. */
            FUZZ_CHECK(nsrv_gossip_peer_last_seen(p, m.src_mono_ms, age, 5000) <= 4000);
        }
        nsrv_arena_reset(a);
        rc = check(t, 2, "DefaultCluster", d, n, (const struct sockaddr *)&from, 6000, WALL, &m, a,
                   &p);
        FUZZ_CHECK(rc == NSRV_GOSSIP_EREPLAY);
    }
    uint64_t acc;
    uint64_t rej[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(t, &acc, rej);
    nsrv_gossip_peers_destroy(&t);
}

static void run_decode(const uint8_t *d, size_t n, nsrv_arena_t *a) {
    nsrv_gossip_msg_t m;
    int rc = nsrv_gossip_msg_decode(d, n, a, &m);
    FUZZ_CHECK(rc == 0 || rc == NSRV_GOSSIP_ESIZE || rc == NSRV_GOSSIP_EVERSION ||
               rc == NSRV_GOSSIP_EDECODE || rc == NSRV_GOSSIP_ETYPE);
    if (rc != 0)
        return;
    (void)touch(&m);
    /* Round trip: our encoding of what we decoded decodes to the same fields. */
    if (!keys_ready) {
        fuzz_key(0x00, pk11, sk11);
        fuzz_key(0x40, pk12, sk12);
        keys_ready = true;
    }
    nsrv_buf_t out = NSRV_BUF_INIT;
    FUZZ_CHECK(nsrv_gossip_msg_encode(&m, sk11, &out) == 0);
    nsrv_gossip_msg_t m2;
    FUZZ_CHECK(nsrv_gossip_msg_decode((const uint8_t *)out.data, out.len, a, &m2) == 0);
    FUZZ_CHECK(m2.type == m.type && m2.seq == m.seq && m2.src_inc == m.src_inc &&
               m2.src_mono_ms == m.src_mono_ms && m2.wall_ms == m.wall_ms && m2.dst == m.dst &&
               m2.src == m.src && m2.key_id == m.key_id && nsrv_str_eq(m2.cluster, m.cluster));
    FUZZ_CHECK(nsrv_seal_verify(pk11, out.data, m2.signed_len, m2.sig) == 0);
    FUZZ_CHECK(touch(&m2) == touch(&m));
    nsrv_buf_deinit(&out);
}

/* The body behind a fixed valid v1 envelope of the given type. */
static void run_body(uint8_t type, const uint8_t *body, size_t n, nsrv_arena_t *a) {
    static const uint8_t env[] = {0x9b, 0x01, 0x00, 0xa1, 'C',  0x01,
                                  0x01, 0x01, 0x00, 0x00, 0x02, 0x01};
    if (n > 70000)
        return;
    size_t len = sizeof env + n + 64;
    uint8_t *buf = malloc(len);
    if (!buf)
        return;
    memcpy(buf, env, sizeof env);
    buf[2] = type & 0x7f; /* stays a one-byte fixint */
    if (n)
        memcpy(buf + sizeof env, body, n);
    memset(buf + sizeof env + n, 0, 64);
    nsrv_gossip_msg_t m;
    size_t off;
    int rc = nsrv_gossip_msg_decode_header(buf, len, &m, &off);
    FUZZ_CHECK(rc == 0 || (rc == NSRV_GOSSIP_ESIZE && n == 0)); /* 76 bytes: below the minimum */
    if (rc == 0) {
        FUZZ_CHECK(off == sizeof env);
        rc = nsrv_gossip_msg_decode_body(buf, len, off, a, &m);
        FUZZ_CHECK(rc == 0 || rc == NSRV_GOSSIP_EDECODE || rc == NSRV_GOSSIP_ETYPE);
        if (rc == 0)
            (void)touch(&m);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 4096);
    switch (data[0] & 3) {
    case 0:
        run_pipeline(data + 1, size - 1, false, &a);
        break;
    case 1:
        run_decode(data + 1, size - 1, &a);
        break;
    case 2:
        run_pipeline(data + 1, size - 1, true, &a);
        break;
    default:
        if (size >= 2)
            run_body(data[1], data + 2, size - 2, &a);
        break;
    }
    nsrv_arena_deinit(&a);
    return 0;
}
