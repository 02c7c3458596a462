/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receive pipeline and per-peer state: every rejection reason, the replay
 * window, incarnations, the clock offset, round-trip anchors and age
 * mapping, key rotation, reload, and the persisted incarnation. Clocks are
 * injected.
 *
 * Setup: we are node 2. Node 1 is at 10.0.0.1 with keys 1 and 2; node 3 at
 * [fd00::3] with node 2's test key as its key 1.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gossip_test.h"
#include "nsrv/gossip.h"
#include "nsrv/netaddr.h"
#include "testlib.h"

#define ME 2
#define T0 1000000 /* local monotonic ms at the first packet */

typedef struct {
    nsrv_gossip_peers_t *t;
    gt_key_t k11, k12, k21;
    struct sockaddr_in from1;
    nsrv_arena_t arena;
    nsrv_buf_t buf;
} fx_t;

static int setup(void **state) {
    fx_t *f = calloc(1, sizeof *f);
    f->k11 = gt_key_1_1();
    f->k12 = gt_key_1_2();
    f->k21 = gt_key_2_1();
    nsrv_gossip_key_t keys1[2] = {{1, {0}}, {2, {0}}}, keys3[1] = {{1, {0}}};
    memcpy(keys1[0].pk, f->k11.pk, 32);
    memcpy(keys1[1].pk, f->k12.pk, 32);
    memcpy(keys3[0].pk, f->k21.pk, 32);
    nsrv_gossip_peer_conf_t conf[2] = {{1, "10.0.0.1:7946", keys1, 2},
                                       {3, "[fd00::3]:7946", keys3, 1}};
    f->t = nsrv_gossip_peers_create(1200);
    assert_int_equal(nsrv_gossip_peers_configure(f->t, conf, 2), 0);
    f->from1 = gt_sin("10.0.0.1", 7946);
    nsrv_arena_init(&f->arena, 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peers_destroy(&f->t);
    nsrv_arena_deinit(&f->arena);
    nsrv_buf_deinit(&f->buf);
    free(f);
    return 0;
}

static nsrv_gossip_entry_t ENTRY = {0x1234, {7, 1717999999000, 0}, 3000, 0};

/* A DIGEST_DELTA from node 1, key 1, with the given seq and sender clock. */
static nsrv_gossip_msg_t msg(uint64_t seq, uint64_t src_mono) {
    nsrv_gossip_msg_t m = gt_envelope(NSRV_GOSSIP_DIGEST_DELTA, 1, seq, src_mono, ME, 1);
    m.body.delta.entries = &ENTRY;
    m.body.delta.n = 1;
    return m;
}

/* Encodes m with sk into f->buf. */
static void enc(fx_t *f, const nsrv_gossip_msg_t *m, const uint8_t *sk) {
    nsrv_buf_reset(&f->buf);
    assert_int_equal(nsrv_gossip_msg_encode(m, sk, &f->buf), 0);
}

static int check_at(fx_t *f, const void *from, uint64_t mono, int64_t wall) {
    nsrv_gossip_msg_t out;
    nsrv_gossip_peer_t *p = NULL;
    nsrv_arena_reset(&f->arena);
    int rc = nsrv_gossip_peer_check(f->t, ME, GT_CLUSTER, (const uint8_t *)f->buf.data, f->buf.len,
                                    (const struct sockaddr *)from, mono, wall, &out, &f->arena, &p);
    if (rc == 0) {
        assert_non_null(p);
        assert_int_equal(nsrv_gossip_peer_id(p), out.src);
    }
    return rc;
}

static int check(fx_t *f) {
    return check_at(f, &f->from1, T0, GT_WALL);
}

/* Encode with node 1's key 1 and check from node 1's address. */
static int send_msg(fx_t *f, const nsrv_gossip_msg_t *m) {
    enc(f, m, f->k11.sk);
    return check(f);
}

static nsrv_gossip_peer_info_t info(fx_t *f, uint8_t id) {
    nsrv_gossip_peer_info_t i;
    nsrv_gossip_peer_info(nsrv_gossip_peers_find(f->t, id), &i);
    return i;
}

static uint64_t rejected(fx_t *f, uint8_t id, int code) {
    return info(f, id).rejected[nsrv_gossip_reason_index(code)];
}

static void test_accept(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 50000);
    enc(f, &m, f->k11.sk);
    nsrv_gossip_msg_t out;
    nsrv_gossip_peer_t *p = NULL;
    assert_int_equal(nsrv_gossip_peer_check(f->t, ME, GT_CLUSTER, (const uint8_t *)f->buf.data,
                                            f->buf.len, (const struct sockaddr *)&f->from1, T0,
                                            GT_WALL, &out, &f->arena, &p),
                     0);
    assert_ptr_equal(p, nsrv_gossip_peers_find(f->t, 1));
    assert_int_equal(out.type, NSRV_GOSSIP_DIGEST_DELTA);
    assert_int_equal(out.body.delta.n, 1);
    assert_int_equal(out.body.delta.entries[0].bkey, 0x1234);
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_true(i.has_incarnation);
    assert_int_equal(i.incarnation, GT_INC);
    assert_true(i.new_incarnation);
    assert_int_equal(i.top_seq, 1);
    assert_int_equal(i.last_valid_mono_ms, T0);
    assert_int_equal(i.last_key_id, 1);
    assert_int_equal(i.accepted, 1);
    assert_true(i.has_offset);
    assert_int_equal(i.offset_ms, T0 - 50000);
    /* Another port of the same IP is fine (only the IP is pinned). */
    m = msg(2, 50010);
    enc(f, &m, f->k11.sk);
    struct sockaddr_in other_port = gt_sin("10.0.0.1", 40001);
    assert_int_equal(check_at(f, &other_port, T0 + 10, GT_WALL), 0);
    assert_false(info(f, 1).new_incarnation);
    uint64_t acc;
    uint64_t rej[NSRV_GOSSIP_NREASONS];
    nsrv_gossip_peers_totals(f->t, &acc, rej);
    assert_int_equal(acc, 2);
}

static void test_reject_cheap_checks(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m;
    uint64_t acc, rej[NSRV_GOSSIP_NREASONS];

    /* size: 40 wide entries are > 1200 bytes. */
    nsrv_gossip_entry_t wide[40];
    for (int i = 0; i < 40; i++)
        wide[i] = (nsrv_gossip_entry_t){
            UINT64_MAX - 40 + (uint64_t)i, {INT64_MIN, INT64_MIN, INT64_MIN}, UINT32_MAX, 255};
    m = msg(1, 1);
    m.body.delta.entries = wide;
    m.body.delta.n = 40;
    enc(f, &m, f->k11.sk);
    assert_true(f->buf.len > 1200);
    assert_int_equal(check(f), NSRV_GOSSIP_ESIZE);
    nsrv_gossip_peers_set_max_dgram(f->t, 65000);
    assert_int_equal(check(f), 0); /* accepted under a larger budget */
    nsrv_gossip_peers_set_max_dgram(f->t, 1200);

    /* version */
    m = msg(2, 1);
    enc(f, &m, f->k11.sk);
    f->buf.data[1] = 2;
    assert_int_equal(check(f), NSRV_GOSSIP_EVERSION);

    /* cluster */
    m = msg(3, 1);
    m.cluster = NSRV_STR_LIT("OtherCluster");
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_ECLUSTER);
    m.cluster = NSRV_STR_LIT("DefaultCluste");
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_ECLUSTER);

    /* unknown src (counted in the totals only) */
    m = msg(3, 1);
    m.src = 9;
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EUNKNOWN_SRC);
    m.src = ME; /* ourselves: not a peer either */
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EUNKNOWN_SRC);
    nsrv_gossip_peers_totals(f->t, &acc, rej);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_EUNKNOWN_SRC)], 2);

    /* source IP differs from node 1's (counted on node 1) */
    m = msg(3, 1);
    enc(f, &m, f->k11.sk);
    struct sockaddr_in wrong = gt_sin("10.0.0.9", 7946);
    assert_int_equal(check_at(f, &wrong, T0, GT_WALL), NSRV_GOSSIP_ESRC_ADDR);
    assert_int_equal(check_at(f, NULL, T0, GT_WALL), NSRV_GOSSIP_ESRC_ADDR);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_ESRC_ADDR), 2);

    /* unknown key_id */
    m = msg(3, 1);
    m.key_id = 7;
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EKEY_ID);

    /* dst: another node; 255 is fine */
    m = msg(3, 1);
    m.dst = 3;
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EDST);
    m.dst = NSRV_GOSSIP_DST_ANY;
    assert_int_equal(send_msg(f, &m), 0);

    /* The wall clocks may disagree (by minutes, or ours may be unset): only
     * the replay window decides. */
    m = msg(4, 1);
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0, GT_WALL + 5 * 60000), 0);
    m = msg(5, 1);
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0, GT_WALL - 5 * 60000), 0);
    assert_int_equal(check_at(f, &f->from1, T0, GT_WALL - 5 * 60000), NSRV_GOSSIP_EREPLAY);
    m = msg(6, 1);
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0, GT_WALL - 23 * 3600 * 1000LL), 0);

    /* type 5 is TCP only */
    nsrv_gossip_msg_t pr = msg(5, 1);
    pr.type = NSRV_GOSSIP_PULL_REQ;
    memset(pr.body.pull.nonce, 1, 16);
    pr.body.pull.keys = NULL;
    pr.body.pull.n = 0;
    assert_int_equal(send_msg(f, &pr), NSRV_GOSSIP_ETYPE);

    nsrv_gossip_peers_totals(f->t, &acc, rej);
    assert_int_equal(acc, 5);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_ESIZE)], 1);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_EVERSION)], 1);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_ECLUSTER)], 2);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_EKEY_ID)], 1);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_EDST)], 1);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_ESTALE_TIME)], 0);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_EREPLAY)], 1);
    assert_int_equal(rej[nsrv_gossip_reason_index(NSRV_GOSSIP_ETYPE)], 1);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_EKEY_ID), 1);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_EUNKNOWN_SRC), 0);
}

static void test_reject_incarnation(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 1);
    m.src_inc = GT_INC + 5;
    assert_int_equal(send_msg(f, &m), 0);
    m = msg(2, 1); /* GT_INC < GT_INC + 5 */
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EOLD_INC);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_EOLD_INC), 1);
    /* More than 24 h ahead of our wall clock. */
    m = msg(1, 1);
    m.src_inc = (uint64_t)GT_WALL + NSRV_GOSSIP_INC_FUTURE_MS + 1;
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EFUTURE_INC);
    m.src_inc = (uint64_t)GT_WALL + NSRV_GOSSIP_INC_FUTURE_MS;
    assert_int_equal(send_msg(f, &m), 0);
    assert_int_equal(info(f, 1).incarnation, (uint64_t)GT_WALL + NSRV_GOSSIP_INC_FUTURE_MS);
}

static void test_reject_replay(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 100);
    assert_int_equal(send_msg(f, &m), 0);
    /* The same datagram again, now and 100 s later. */
    assert_int_equal(check(f), NSRV_GOSSIP_EREPLAY);
    assert_int_equal(check_at(f, &f->from1, T0 + 100000, GT_WALL), NSRV_GOSSIP_EREPLAY);
    /* A different datagram with a seq already used. */
    m = msg(1, 200);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EREPLAY);
    /* Far ahead, then far behind the window. */
    m = msg(1000, 300);
    assert_int_equal(send_msg(f, &m), 0);
    m = msg(1000 - NSRV_GOSSIP_WINDOW, 300);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EREPLAY);
    m = msg(1000 - NSRV_GOSSIP_WINDOW + 1, 300);
    assert_int_equal(send_msg(f, &m), 0); /* the oldest slot still inside */
    m = msg(2, 300);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EREPLAY);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_EREPLAY), 5);
    assert_int_equal(info(f, 1).top_seq, 1000);
}

static void test_reject_sig_and_decode(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 100);
    enc(f, &m, f->k11.sk);
    /* Flip a bit in the signature, then in the signed entry (age byte). */
    f->buf.data[f->buf.len - 1] ^= 0x01;
    assert_int_equal(check(f), NSRV_GOSSIP_EBAD_SIG);
    f->buf.data[f->buf.len - 1] ^= 0x01;
    f->buf.data[f->buf.len - 64 - 2] ^= 0x10;
    assert_int_equal(check(f), NSRV_GOSSIP_EBAD_SIG);
    f->buf.data[f->buf.len - 64 - 2] ^= 0x10;
    /* Signed by key 2 but labelled key 1. */
    enc(f, &m, f->k12.sk);
    assert_int_equal(check(f), NSRV_GOSSIP_EBAD_SIG);
    /* Signed by node 3's key. */
    enc(f, &m, f->k21.sk);
    assert_int_equal(check(f), NSRV_GOSSIP_EBAD_SIG);
    assert_int_equal(rejected(f, 1, NSRV_GOSSIP_EBAD_SIG), 4);
    /* Truncated by 1, 10 and 64 bytes. */
    enc(f, &m, f->k11.sk);
    size_t full = f->buf.len;
    for (size_t cut = 1; cut < full; cut++) {
        f->buf.len = full - cut;
        /* Below 64 + 13 bytes there is no room for a signature and an envelope. */
        assert_int_equal(check(f), full - cut < 77 ? NSRV_GOSSIP_ESIZE : NSRV_GOSSIP_EDECODE);
    }
    f->buf.len = full;
    /* A forged datagram burnt nothing: seq 1 is still accepted. */
    assert_false(info(f, 1).has_incarnation);
    assert_int_equal(check(f), 0);
    assert_int_equal(info(f, 1).accepted, 1);
}

/* A forged higher incarnation must not reset the window or the offset. */
static void test_forged_incarnation_changes_nothing(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(10, 100);
    assert_int_equal(send_msg(f, &m), 0);
    m = msg(1, 100);
    m.src_inc = GT_INC + 1;
    enc(f, &m, f->k21.sk); /* wrong key */
    assert_int_equal(check(f), NSRV_GOSSIP_EBAD_SIG);
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_int_equal(i.incarnation, GT_INC);
    assert_int_equal(i.top_seq, 10);
    m = msg(10, 100);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EREPLAY);
    m = msg(9, 100);
    assert_int_equal(send_msg(f, &m), 0);
}

static void test_reordered_inside_window(void **state) {
    fx_t *f = *state;
    const uint64_t order[] = {5, 3, 4, 1, 2, 300, 100, 299, 45, 46};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(order); i++) {
        nsrv_gossip_msg_t m = msg(order[i], 10 * order[i]);
        assert_int_equal(send_msg(f, &m), 0);
    }
    for (size_t i = 0; i < NSRV_ARRAY_LEN(order); i++) {
        nsrv_gossip_msg_t m = msg(order[i], 10 * order[i]);
        int rc = send_msg(f, &m);
        assert_int_equal(rc, NSRV_GOSSIP_EREPLAY);
    }
    /* Gaps stay open until they fall out of the window. */
    nsrv_gossip_msg_t m = msg(200, 1);
    assert_int_equal(send_msg(f, &m), 0);
    assert_int_equal(info(f, 1).accepted, NSRV_ARRAY_LEN(order) + 1);
}

static void test_new_incarnation_resets(void **state) {
    fx_t *f = *state;
    for (uint64_t s = 1; s <= 100; s++) {
        nsrv_gossip_msg_t m = msg(s, 500000 + s);
        assert_int_equal(send_msg(f, &m), 0);
    }
    assert_int_equal(info(f, 1).offset_ms, T0 - 500100);
    /* Restarted sender: new incarnation, seq and clock start again. */
    nsrv_gossip_msg_t m = msg(1, 20);
    m.src_inc = GT_INC + 60000;
    assert_int_equal(send_msg(f, &m), 0);
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_true(i.new_incarnation);
    assert_int_equal(i.incarnation, GT_INC + 60000);
    assert_int_equal(i.top_seq, 1);
    assert_int_equal(i.offset_ms, T0 - 20); /* offset restarted with the clock */
    for (uint64_t s = 2; s <= 100; s++) {
        m = msg(s, 20 + s);
        m.src_inc = GT_INC + 60000;
        assert_int_equal(send_msg(f, &m), 0);
    }
    assert_false(info(f, 1).new_incarnation);
    /* The previous incarnation is over. */
    m = msg(101, 500101);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EOLD_INC);
}

/*
 * Age mapping. In these tests the sender's clock is the local clock minus
 * BASE (the true offset); a pull request sent at local time t is answered
 * with src_mono_ms = t + rtt/2 - BASE, giving the anchor
 * L = BASE - rtt/2 <= BASE.
 */
#define BASE (T0 - 50000)

static void anchor_rtt(nsrv_gossip_peer_t *p, uint64_t inc, uint64_t sent, uint64_t rtt) {
    nsrv_gossip_peer_anchor(p, inc, sent + rtt / 2 - BASE, sent, sent + rtt);
}

/* Accepts a delta of node 1 (incarnation inc) sent at local `sent`, received at `recv`. */
static void deliver(fx_t *f, uint64_t inc, uint64_t seq, uint64_t sent, uint64_t recv) {
    nsrv_gossip_msg_t m = msg(seq, sent - BASE);
    m.src_inc = inc;
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, recv, GT_WALL), 0);
}

/*
 * A copy of a datagram that arrives 100 s late maps to the same local instant
 * as the original, and the naive recv - age would not. The sender keeps
 * gossiping every 5 s meanwhile, as it does in reality.
 */
static void test_age_mapping_delay_and_replay(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 50000, 3000, T0), 0); /* nothing accepted yet */

    /* seq 2 arrives at once; an anchor with a 4 ms round trip. */
    nsrv_gossip_msg_t m2 = msg(2, 50000);
    enc(f, &m2, f->k11.sk);
    nsrv_buf_t orig = NSRV_BUF_INIT;
    nsrv_buf_append(&orig, f->buf.data, f->buf.len);
    assert_int_equal(check_at(f, &f->from1, T0, GT_WALL), 0);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 50000, 3000, T0), 0); /* no anchor yet */
    anchor_rtt(p, GT_INC, T0 - 10, 4);
    uint64_t ls2 = nsrv_gossip_peer_last_seen(p, 50000, 3000, T0);
    /* Early by half the round trip and 1 ms of drift allowance (rounded up). */
    assert_int_equal(ls2, T0 - 3000 - 2 - 1);

    /* 100 s of prompt traffic (seq 3..22, every 5 s). */
    uint64_t seq = 3;
    for (uint64_t t = T0 + 5000; t <= T0 + 100000; t += 5000)
        deliver(f, GT_INC, seq++, t, t);

    /* The original datagram replayed 100 s later: refused, mapping unchanged but for drift. */
    nsrv_buf_reset(&f->buf);
    nsrv_buf_append(&f->buf, orig.data, orig.len);
    assert_int_equal(check_at(f, &f->from1, T0 + 100000, GT_WALL), NSRV_GOSSIP_EREPLAY);
    uint64_t later = nsrv_gossip_peer_last_seen(p, 50000, 3000, T0 + 100000);
    assert_true(later <= ls2 && later >= ls2 - 11); /* 100 ppm of 100 s = 10 ms */

    /* seq 1, sent 1 s before seq 2, is delivered 100 s late (held in a queue). */
    nsrv_gossip_msg_t m1 = msg(1, 49000);
    enc(f, &m1, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0 + 100000, GT_WALL), 0);
    uint64_t ls1 = nsrv_gossip_peer_last_seen(p, 49000, 3000, T0 + 100000);
    assert_true(ls1 <= T0 - 1000 - 3000); /* as if it had arrived on time, never later */
    assert_true(ls1 >= T0 - 1000 - 3000 - 2 - 11);
    /* The delayed sample did not move the (status) offset. */
    assert_int_equal(info(f, 1).offset_ms, (int64_t)BASE);

    /* Saturation at 0: an age older than the whole mapped clock. */
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 0, UINT32_MAX, T0 + 100000), 0);
    /* Never later than the receive time. */
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 100000 + 50000, 0, T0 + 90000), T0 + 90000);
    nsrv_buf_deinit(&orig);
}

/*
 * The peer falls silent for 100 s (or an attacker blocks it), then a packet
 * held back 25 s (still inside the 30 s freshness window) is delivered: the
 * status offset may rise by 1 ms per second of silence, not by the 25 s
 * delay, and the anchored mapping ignores the delay altogether.
 */
static void test_age_mapping_after_silence(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    deliver(f, GT_INC, 1, T0, T0);
    anchor_rtt(p, GT_INC, T0, 4);
    /* Sent at local T0 + 75 s, delivered at T0 + 100 s. */
    deliver(f, GT_INC, 2, T0 + 75000, T0 + 100000);
    int64_t off = info(f, 1).offset_ms;
    assert_true(off > (int64_t)BASE && off <= (int64_t)BASE + 100); /* <= 100 s x 1 ms/s */
    uint64_t ls = nsrv_gossip_peer_last_seen(p, T0 + 75000 - BASE, 0, T0 + 100000);
    assert_true(ls <= T0 + 75000 && ls >= T0 + 75000 - 2 - 11);
    /* Prompt packets let the status offset settle on the true value again. */
    deliver(f, GT_INC, 3, T0 + 101000, T0 + 101000);
    assert_int_equal(info(f, 1).offset_ms, (int64_t)BASE);
}

/*
 * The known hole of the sample-minimum mapping: a freshly restarted node
 * whose FIRST datagram from a peer was held back 25 s (inside the 30 s
 * freshness window). The sample offset is 25 s too large; the anchor is not,
 * so the mapped instant is the true one (minus the round trip), not 25 s late.
 */
static void test_replay_to_fresh_node_maps_early(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    /* Sent at local T0 (age 1 s then), delivered first at T0 + 25 s. */
    deliver(f, GT_INC, 1, T0, T0 + 25000);
    assert_int_equal(info(f, 1).offset_ms, (int64_t)BASE + 25000); /* the upper bound is off */
    assert_int_equal(nsrv_gossip_peer_last_seen(p, T0 - BASE, 1000, T0 + 25000), 0);
    /* The pull we start on boot: request at T0 + 25 s, 30 ms round trip. */
    anchor_rtt(p, GT_INC, T0 + 25000, 30);
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_true(i.has_anchor);
    assert_int_equal(i.anchor_offset_ms, (int64_t)BASE - 15);
    assert_int_equal(i.anchor_mono_ms, T0 + 25000);
    uint64_t ls = nsrv_gossip_peer_last_seen(p, T0 - BASE, 1000, T0 + 25030);
    assert_true(ls <= T0 - 1000);      /* never late */
    assert_true(ls >= T0 - 1000 - 30); /* early by at most the round trip */
    /* The same for any held-back delay up to the freshness window. */
    for (uint64_t d = 0; d <= 30000; d += 1000) {
        uint64_t v = nsrv_gossip_peer_last_seen(p, T0 + 1000 - BASE, 500, T0 + 26000 + d);
        assert_true(v <= T0 + 1000 - 500);
        assert_true(v + 30 + 1 >= T0 + 1000 - 500);
    }
}

/* The same after the peer's restart: its new incarnation's first datagram is delayed. */
static void test_new_incarnation_needs_its_own_anchor(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    deliver(f, GT_INC, 1, T0, T0 + 2);
    anchor_rtt(p, GT_INC, T0, 4);
    assert_true(nsrv_gossip_peer_last_seen(p, T0 - BASE, 0, T0 + 2) > 0);
    /*
     * The peer restarts: its clock starts again from 0 at local T0 + 60 s,
     * so its new offset is T0 + 60000. Its first datagram is held back 20 s.
     */
    const uint64_t inc2 = GT_INC + 60000, base2 = T0 + 60000;
    nsrv_gossip_msg_t m = msg(1, 5000); /* sent at local T0 + 65 s */
    m.src_inc = inc2;
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0 + 85000, GT_WALL), 0);
    /* The old incarnation's anchor does not map the new one's ages. */
    assert_false(info(f, 1).has_anchor);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 5000, 0, T0 + 85000), 0);
    /* A late pull response from the old incarnation is ignored. */
    anchor_rtt(p, GT_INC, T0 + 84000, 4);
    assert_false(info(f, 1).has_anchor);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 5000, 0, T0 + 85000), 0);
    /* The new incarnation's pull anchors it: the 20 s delay is not added. */
    nsrv_gossip_peer_anchor(p, inc2, T0 + 85010 - base2, T0 + 85000, T0 + 85020);
    uint64_t ls = nsrv_gossip_peer_last_seen(p, 5000, 0, T0 + 85020);
    assert_true(ls <= T0 + 65000 && ls >= T0 + 65000 - 20);
}

/*
 * A pull response of an incarnation we have no datagram of yet (the peer
 * restarted, or we did and pulled before its first digest) waits for it;
 * a stale "next" of a lower incarnation never applies.
 */
static void test_anchor_for_next_incarnation(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    /* Before any datagram: kept aside. */
    anchor_rtt(p, GT_INC, T0 - 100, 6);
    assert_false(info(f, 1).has_anchor);
    deliver(f, GT_INC, 1, T0, T0 + 1);
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_true(i.has_anchor);
    assert_int_equal(i.anchor_offset_ms, (int64_t)BASE - 3);
    /* Anchors of two future incarnations: only the highest is kept. */
    const uint64_t inc2 = GT_INC + 10, inc3 = GT_INC + 20;
    nsrv_gossip_peer_anchor(p, inc3, 100, T0 + 1000, T0 + 1001);
    nsrv_gossip_peer_anchor(p, inc2, 100, T0 + 1000, T0 + 1001);      /* lower than inc3: ignored */
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)BASE - 3); /* current one unchanged */
    /* inc2 starts after all: its ages are unmapped (inc3's anchor is not its). */
    nsrv_gossip_msg_t m = msg(1, 500);
    m.src_inc = inc2;
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0 + 2000, GT_WALL), 0);
    assert_false(info(f, 1).has_anchor);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 500, 0, T0 + 2000), 0);
    /* Then inc3 starts: the anchor kept for it applies. */
    m = msg(1, 1500);
    m.src_inc = inc3;
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, T0 + 3000, GT_WALL), 0);
    i = info(f, 1);
    assert_true(i.has_anchor);
    assert_int_equal(i.anchor_offset_ms, (int64_t)(T0 + 1000 - 100));
    assert_int_equal(nsrv_gossip_peer_last_seen(p, 1500, 0, T0 + 3000), T0 + 2400 - 1);
    /* Nonsense is ignored: incarnation 0, a request "sent" after now. */
    nsrv_gossip_peer_anchor(p, 0, 0, T0 + 3000, T0 + 3000);
    nsrv_gossip_peer_anchor(p, inc3, 0, T0 + 3001, T0 + 3000);
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)(T0 + 1000 - 100));
}

/* The allowance for clock drift lowers the bound by 100 ppm of the anchor's age. */
static void test_anchor_drift_allowance(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    deliver(f, GT_INC, 1, T0, T0);
    anchor_rtt(p, GT_INC, T0, 0);   /* an exact anchor: L = BASE */
    uint64_t src = 10000000 - BASE; /* sent at local 10 000 000 (T0 + 9000 s) */
    uint64_t prev = UINT64_MAX;
    for (uint64_t age = 0; age <= 3600000; age += 600000) {
        uint64_t now = T0 + age;
        /* The report itself is fixed; only the allowance changes with now. */
        uint64_t v = nsrv_gossip_peer_last_seen(p, T0 - BASE, 0, now);
        uint64_t allowance = (age * NSRV_GOSSIP_ANCHOR_DRIFT_PPM + 999999) / 1000000;
        assert_int_equal(v, T0 - allowance);
        assert_true(v <= prev);
        prev = v;
    }
    assert_int_equal(nsrv_gossip_peer_last_seen(p, T0 - BASE, 0, T0 + 3600000), T0 - 360);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, src, 0, 10000000), 10000000 - 900);
}

/*
 * Replacement: a tighter anchor replaces a looser one at once; a looser one
 * replaces only an anchor older than 60 s (or one whose drift allowance has
 * made it looser still).
 */
static void test_anchor_tighter_replaces(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    deliver(f, GT_INC, 1, T0, T0);
    anchor_rtt(p, GT_INC, T0, 2000); /* slow: L = BASE - 1000 */
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)BASE - 1000);
    anchor_rtt(p, GT_INC, T0 + 5000, 20); /* tighter: L = BASE - 10 */
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)BASE - 10);
    assert_int_equal(info(f, 1).anchor_mono_ms, T0 + 5000);
    anchor_rtt(p, GT_INC, T0 + 10000, 400); /* looser and the current one is young: kept */
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)BASE - 10);
    uint64_t at = nsrv_gossip_peer_last_seen(p, T0 + 10000 - BASE, 0, T0 + 10400);
    assert_int_equal(at, T0 + 10000 - 10 - 1); /* 5.4 s of allowance rounds up to 1 ms */
    /* After 60 s any fresh anchor replaces it (bounding what excess drift can do). */
    anchor_rtt(p, GT_INC, T0 + 65000, 400);
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)BASE - 200);
    /* A loose anchor never maps later than the truth; the mapping moved earlier. */
    assert_true(nsrv_gossip_peer_last_seen(p, T0 + 65000 - BASE, 0, T0 + 65400) <= T0 + 65000);
}

/*
 * The sample offset stays the status value, and caps the anchor: if the
 * anchor claims more than any datagram's (recv - src_mono_ms), the smaller
 * value maps.
 */
static void test_offset_tracks_minimum(void **state) {
    fx_t *f = *state;
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    /* Sender clock = local clock - 700000; one-way delays 5, 2, 9 ms. */
    const uint64_t base = 700000;
    const uint64_t delays[] = {5, 2, 9};
    uint64_t seq = 1;
    for (size_t i = 0; i < 3; i++) {
        uint64_t sent = T0 + i * 1000;
        nsrv_gossip_msg_t m = msg(seq++, sent - base);
        enc(f, &m, f->k11.sk);
        assert_int_equal(check_at(f, &f->from1, sent + delays[i], GT_WALL), 0);
    }
    assert_int_equal(info(f, 1).offset_ms, (int64_t)(base + 2));
    /* An anchor that claims base + 50 (a responder clock reading too early). */
    nsrv_gossip_peer_anchor(p, GT_INC, T0 + 2500 - base - 50, T0 + 2500, T0 + 2510);
    assert_int_equal(info(f, 1).anchor_offset_ms, (int64_t)(base + 50));
    /* last_seen maps through the smaller one: (sent - base) - age + base + 2. */
    assert_int_equal(nsrv_gossip_peer_last_seen(p, T0 + 1000 - base, 500, T0 + 2510),
                     T0 + 1000 - 500 + 2);

    /* The network slows to 7 ms for two minutes: the old minimum expires. */
    uint64_t now = T0 + 3000;
    for (; now < T0 + 120000; now += 5000) {
        nsrv_gossip_msg_t m = msg(seq++, now - base);
        enc(f, &m, f->k11.sk);
        assert_int_equal(check_at(f, &f->from1, now + 7, GT_WALL), 0);
    }
    assert_int_equal(info(f, 1).offset_ms, (int64_t)(base + 7));
    /* A faster packet lowers it at once. */
    nsrv_gossip_msg_t m = msg(seq++, now - base);
    enc(f, &m, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, now + 1, GT_WALL), 0);
    assert_int_equal(info(f, 1).offset_ms, (int64_t)(base + 1));
    /* A sender clock ahead of ours gives a negative offset; mapping still works. */
    nsrv_gossip_peer_anchor(p, GT_INC, now + 5000000, now, now + 1);
    nsrv_gossip_msg_t far = msg(seq++, now + 5000000);
    enc(f, &far, f->k11.sk);
    assert_int_equal(check_at(f, &f->from1, now + 1, GT_WALL), 0);
    assert_int_equal(info(f, 1).offset_ms, -5000000 + 1);
    assert_int_equal(info(f, 1).anchor_offset_ms, -5000000);
    assert_int_equal(nsrv_gossip_peer_last_seen(p, now + 5000000, 100, now + 1), now - 100 - 1);
}

static void test_rotation_two_keys(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 1);
    assert_int_equal(send_msg(f, &m), 0);
    m = msg(2, 1);
    m.key_id = 2;
    enc(f, &m, f->k12.sk);
    assert_int_equal(check(f), 0);
    assert_int_equal(info(f, 1).last_key_id, 2);

    /* Reload with only key 2: key 1 refused, the window survives the reload. */
    nsrv_gossip_key_t k2 = {2, {0}};
    memcpy(k2.pk, f->k12.pk, 32);
    nsrv_gossip_key_t k3 = {1, {0}};
    memcpy(k3.pk, f->k21.pk, 32);
    nsrv_gossip_peer_conf_t conf[2] = {{1, "10.0.0.1:7946", &k2, 1}, {3, "[fd00::3]:7946", &k3, 1}};
    nsrv_gossip_peer_t *before = nsrv_gossip_peers_find(f->t, 1);
    assert_int_equal(nsrv_gossip_peers_configure(f->t, conf, 2), 0);
    assert_ptr_equal(nsrv_gossip_peers_find(f->t, 1), before);
    m = msg(3, 1);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_EKEY_ID);
    m = msg(2, 1);
    m.key_id = 2;
    enc(f, &m, f->k12.sk);
    assert_int_equal(check(f), NSRV_GOSSIP_EREPLAY);
    m.seq = 3;
    enc(f, &m, f->k12.sk);
    assert_int_equal(check(f), 0);
    assert_int_equal(info(f, 1).accepted, 3);
    size_t n;
    const nsrv_gossip_key_t *keys = nsrv_gossip_peer_keys(before, &n);
    assert_int_equal(n, 1);
    assert_int_equal(keys[0].key_id, 2);
}

static void test_configure(void **state) {
    fx_t *f = *state;
    nsrv_gossip_key_t k = {1, {0}};
    memcpy(k.pk, f->k11.pk, 32);
    nsrv_gossip_key_t dup[2] = {k, k};
    /* Invalid lists leave the table as it was. */
    nsrv_gossip_peer_conf_t bad[][2] = {
        {{1, "10.0.0.1:7946", &k, 1}, {1, "10.0.0.2:7946", &k, 1}}, /* duplicate id */
        {{1, "10.0.0.1", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},      /* no port */
        {{1, "10.0.0.1:0", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},    /* port 0 */
        {{1, "ho st:7946", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},    /* not a host name */
        {{1, "10.0.0:7946", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},   /* a bad IPv4, not a name */
        {{1, "host:0", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},        /* a name, port 0 */
        {{1, "host", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},          /* a name, no port */
        {{0, "10.0.0.1:7946", &k, 1}, {4, "10.0.0.2:7946", &k, 1}}, /* id 0 */
        {{255, "10.0.0.1:7946", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},
        {{1, "10.0.0.1:7946", &k, 0}, {4, "10.0.0.2:7946", &k, 1}},  /* no key */
        {{1, "10.0.0.1:7946", dup, 2}, {4, "10.0.0.2:7946", &k, 1}}, /* duplicate key id */
        {{1, "[fd00::1:7946", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},
        {{1, "10.0.0.1:65536", &k, 1}, {4, "10.0.0.2:7946", &k, 1}},
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++)
        assert_int_equal(nsrv_gossip_peers_configure(f->t, bad[i], 2), -EINVAL);
    assert_int_equal(nsrv_gossip_peers_count(f->t), 2);
    assert_int_equal(nsrv_gossip_peer_id(nsrv_gossip_peers_at(f->t, 0)), 1);
    assert_int_equal(nsrv_gossip_peer_id(nsrv_gossip_peers_at(f->t, 1)), 3);
    assert_null(nsrv_gossip_peers_at(f->t, 2));

    /* Drop node 3, add node 7; node 1 moves to a new address. */
    nsrv_gossip_peer_conf_t ok[2] = {{7, "127.0.0.7:7000", &k, 1}, {1, "10.0.0.11:7946", &k, 1}};
    assert_int_equal(nsrv_gossip_peers_configure(f->t, ok, 2), 0);
    assert_int_equal(nsrv_gossip_peers_count(f->t), 2);
    assert_null(nsrv_gossip_peers_find(f->t, 3));
    assert_int_equal(nsrv_gossip_peer_id(nsrv_gossip_peers_at(f->t, 1)), 7);
    socklen_t len;
    const struct sockaddr_in *a =
        (const struct sockaddr_in *)nsrv_gossip_peer_addr(nsrv_gossip_peers_find(f->t, 1), &len);
    assert_int_equal(len, sizeof *a);
    assert_int_equal(ntohs(a->sin_port), 7946);
    nsrv_gossip_msg_t m = msg(1, 1);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_ESRC_ADDR);
    struct sockaddr_in from = gt_sin("10.0.0.11", 7946);
    assert_int_equal(check_at(f, &from, T0, GT_WALL), 0);
    /* Empty list: every peer goes. */
    assert_int_equal(nsrv_gossip_peers_configure(f->t, NULL, 0), 0);
    assert_int_equal(nsrv_gossip_peers_count(f->t), 0);
}

static void test_ipv6_and_mapped(void **state) {
    fx_t *f = *state;
    nsrv_gossip_msg_t m = msg(1, 1);
    m.src = 3;
    enc(f, &m, f->k21.sk);
    struct sockaddr_in6 from6;
    memset(&from6, 0, sizeof from6);
    from6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "fd00::3", &from6.sin6_addr);
    assert_int_equal(check_at(f, &from6, T0, GT_WALL), 0);
    inet_pton(AF_INET6, "fd00::4", &from6.sin6_addr);
    m.seq = 2;
    enc(f, &m, f->k21.sk);
    assert_int_equal(check_at(f, &from6, T0, GT_WALL), NSRV_GOSSIP_ESRC_ADDR);
    /* Node 1 (IPv4) seen through a dual-stack socket. */
    m = msg(1, 1);
    enc(f, &m, f->k11.sk);
    inet_pton(AF_INET6, "::ffff:10.0.0.1", &from6.sin6_addr);
    assert_int_equal(check_at(f, &from6, T0, GT_WALL), 0);

    struct sockaddr_storage ss;
    socklen_t len;
    assert_int_equal(nsrv_sockaddr_parse("[::1]:1", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(nsrv_sockaddr_parse("[::1]", &ss, &len), -EINVAL);
    assert_int_equal(nsrv_sockaddr_parse("::1:80", &ss, &len), -EINVAL);
    assert_int_equal(nsrv_sockaddr_parse("1.2.3.4:+80", &ss, &len), -EINVAL);
    assert_int_equal(nsrv_sockaddr_parse(":80", &ss, &len), -EINVAL);
    assert_int_equal(nsrv_sockaddr_parse(NULL, &ss, &len), -EINVAL);
}

static void test_pull_request_path(void **state) {
    fx_t *f = *state;
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &f->k11);
    uint8_t nonce[16] = {1, 2, 3};
    uint64_t keys[1] = {0x1234};
    nsrv_gossip_send_opts_t o = gt_opts(ME, 0, 5000);
    nsrv_buf_t req = NSRV_BUF_INIT;
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, keys, 1, &req), 0);
    const uint8_t *body = (const uint8_t *)req.data + 4;
    size_t blen = req.len - 4;
    nsrv_gossip_msg_t out;
    nsrv_gossip_peer_t *p;
    const struct sockaddr *from = (const struct sockaddr *)&f->from1;
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER, body, blen, from, T0,
                                                 GT_WALL, &out, &f->arena, &p),
                     0);
    assert_int_equal(out.type, NSRV_GOSSIP_PULL_REQ);
    assert_memory_equal(out.body.pull.nonce, nonce, 16);
    /* A replayed request is refused. */
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER, body, blen, from, T0,
                                                 GT_WALL, &out, &f->arena, &p),
                     NSRV_GOSSIP_EREPLAY);
    /* Sent to node 3: refused here. */
    o.dst = 3;
    nsrv_buf_reset(&req);
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, keys, 1, &req), 0);
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER,
                                                 (const uint8_t *)req.data + 4, req.len - 4, from,
                                                 T0, GT_WALL, &out, &f->arena, &p),
                     NSRV_GOSSIP_EDST);
    /* A UDP type over TCP. */
    nsrv_gossip_msg_t m = msg(10, 1);
    enc(f, &m, f->k11.sk);
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER, (const uint8_t *)f->buf.data,
                                                 f->buf.len, from, T0, GT_WALL, &out, &f->arena,
                                                 &p),
                     NSRV_GOSSIP_ETYPE);
    /* Larger than any request may be. */
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER, body,
                                                 NSRV_GOSSIP_PULL_REQ_MAX + 1, from, T0, GT_WALL,
                                                 &out, &f->arena, &p),
                     NSRV_GOSSIP_ESIZE);
    /* Requests may exceed the UDP budget: 2000 keys. */
    uint64_t *many = nsrv_malloc(2000 * sizeof *many);
    for (int i = 0; i < 2000; i++)
        many[i] = (uint64_t)i * 1000003;
    o.dst = ME;
    nsrv_buf_reset(&req);
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, many, 2000, &req), 0);
    assert_true(req.len > 1200);
    assert_int_equal(nsrv_gossip_peer_check_pull(f->t, ME, GT_CLUSTER,
                                                 (const uint8_t *)req.data + 4, req.len - 4, from,
                                                 T0, GT_WALL, &out, &f->arena, &p),
                     0);
    assert_int_equal(out.body.pull.n, 2000);
    nsrv_free(many);
    nsrv_buf_deinit(&req);
    nsrv_gossip_sender_deinit(&s);
}

static void test_incarnation_persistence(void **state) {
    (void)state;
    nsrv_test_dir_t dir;
    assert_int_equal(nsrv_test_dir_make(&dir, "gossip-inc"), 0);
    char path[256];
    snprintf(path, sizeof path, "%s", nsrv_test_dir_join(&dir, "sub/incarnation"));
    uint64_t inc = 0;
    assert_int_equal(nsrv_gossip_incarnation_next(path, 5000, &inc), 0);
    assert_int_equal(inc, 5000);
    /* The clock went backwards: still rises. */
    assert_int_equal(nsrv_gossip_incarnation_next(path, 100, &inc), 0);
    assert_int_equal(inc, 5001);
    assert_int_equal(nsrv_gossip_incarnation_next(path, 9000, &inc), 0);
    assert_int_equal(inc, 9000);
    char *text;
    size_t len;
    assert_int_equal(nsrv_file_read_all(path, 100, &text, &len), 0);
    assert_string_equal(text, "9000\n");
    nsrv_free(text);
    /* A damaged file is reported, not silently replaced. */
    assert_int_equal(nsrv_file_write_atomic(path, "12x\n", 4, false), 0);
    inc = 77;
    assert_int_equal(nsrv_gossip_incarnation_next(path, 100, &inc), -EINVAL);
    assert_int_equal(inc, 77);
    assert_int_equal(nsrv_file_write_atomic(path, "", 0, false), 0);
    assert_int_equal(nsrv_gossip_incarnation_next(path, 100, &inc), -EINVAL);
    nsrv_test_dir_remove(&dir);
}

/* Node 1 configured by name: nothing accepted from anywhere until its name resolves; then
 * its address follows each resolution (the source check and the pull allow list with it),
 * its security state stays, and a failed lookup keeps the last address. */
static void test_named_peer(void **state) {
    fx_t *f = *state;
    nsrv_gossip_key_t k = {1, {0}};
    memcpy(k.pk, f->k11.pk, 32);
    nsrv_gossip_peer_conf_t conf[1] = {{1, "node1.example:7946", &k, 1}};
    assert_int_equal(nsrv_gossip_peers_configure(f->t, conf, 1), 0);
    nsrv_gossip_peer_t *p = nsrv_gossip_peers_find(f->t, 1);
    assert_string_equal(nsrv_gossip_peer_host(p), "node1.example");
    assert_false(nsrv_gossip_peer_has_addr(p));
    nsrv_gossip_msg_t m = msg(1, 1);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_ESRC_ADDR);
    assert_false(nsrv_gossip_peers_ip_known(f->t, (const struct sockaddr *)&f->from1));
    /* Never looked up: due at once; not again while the lookup runs. */
    assert_true(nsrv_gossip_peer_resolve_is_due(p, T0, 5000, false));
    nsrv_gossip_peer_resolve_started(p, T0);
    assert_false(nsrv_gossip_peer_resolve_is_due(p, T0 + 60000, 5000, true));
    assert_int_equal(nsrv_gossip_peer_set_resolved(p, (const struct sockaddr *)&f->from1), 1);
    nsrv_gossip_peer_resolve_done(p);
    assert_int_equal(nsrv_gossip_peer_set_resolved(p, (const struct sockaddr *)&f->from1), 0);
    assert_true(nsrv_gossip_peers_ip_known(f->t, (const struct sockaddr *)&f->from1));
    assert_int_equal(send_msg(f, &m), 0);

    /* Heard: looked up every NSRV_GOSSIP_RESOLVE_MS; a refusal kicks it sooner. */
    assert_false(nsrv_gossip_peer_resolve_is_due(p, T0 + NSRV_GOSSIP_RESOLVE_MS - 1, 5000, false));
    assert_true(nsrv_gossip_peer_resolve_is_due(p, T0 + NSRV_GOSSIP_RESOLVE_MS, 5000, false));
    assert_false(
        nsrv_gossip_peer_resolve_is_due(p, T0 + NSRV_GOSSIP_RESOLVE_KICK_MS - 1, 5000, true));
    assert_true(nsrv_gossip_peer_resolve_is_due(p, T0 + NSRV_GOSSIP_RESOLVE_KICK_MS, 5000, true));
    /* Silent for the silence threshold: looked up every NSRV_GOSSIP_RESOLVE_SILENT_MS. */
    uint64_t silent = T0 + (uint64_t)NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS * 1000 + 1;
    nsrv_gossip_peer_resolve_started(p, silent - NSRV_GOSSIP_RESOLVE_SILENT_MS);
    nsrv_gossip_peer_resolve_done(p);
    assert_true(nsrv_gossip_peer_resolve_is_due(p, silent, 1000, false));
    assert_false(nsrv_gossip_peer_resolve_is_due(p, silent, 100000, false));

    /* The name now points elsewhere: the old address is refused, the new one accepted with
     * the same incarnation and replay window. */
    struct sockaddr_in moved = gt_sin("10.0.0.9", 1);
    assert_int_equal(nsrv_gossip_peer_set_resolved(p, (const struct sockaddr *)&moved), 1);
    const struct sockaddr_in *a = (const struct sockaddr_in *)nsrv_gossip_peer_addr(p, NULL);
    assert_int_equal(ntohs(a->sin_port), 7946);
    assert_false(nsrv_gossip_peers_ip_known(f->t, (const struct sockaddr *)&f->from1));
    assert_true(nsrv_gossip_peers_ip_known(f->t, (const struct sockaddr *)&moved));
    m = msg(2, 2);
    assert_int_equal(send_msg(f, &m), NSRV_GOSSIP_ESRC_ADDR);
    assert_int_equal(check_at(f, &moved, T0, GT_WALL), 0);
    assert_int_equal(check_at(f, &moved, T0, GT_WALL), NSRV_GOSSIP_EREPLAY);
    assert_int_equal(info(f, 1).accepted, 2);

    /* A failed lookup keeps the address and is reported; the next success clears it. */
    nsrv_gossip_peer_set_resolve_error(p, -3008, "EAI_NONAME");
    nsrv_gossip_peer_info_t i = info(f, 1);
    assert_true(i.has_addr);
    assert_string_equal(i.resolve_error_name, "EAI_NONAME");
    assert_int_equal(i.resolve_failures, 1);
    assert_true(nsrv_gossip_peers_ip_known(f->t, (const struct sockaddr *)&moved));
    nsrv_gossip_peer_set_resolved(p, (const struct sockaddr *)&moved);
    assert_int_equal(info(f, 1).resolve_error, 0);

    /* A reload with the same name keeps the address; another name forgets it. */
    assert_int_equal(nsrv_gossip_peers_configure(f->t, conf, 1), 0);
    assert_true(nsrv_gossip_peer_has_addr(p));
    nsrv_gossip_peer_conf_t other[1] = {{1, "node1b.example:7946", &k, 1}};
    assert_int_equal(nsrv_gossip_peers_configure(f->t, other, 1), 0);
    assert_false(nsrv_gossip_peer_has_addr(p));
    assert_true(nsrv_gossip_peer_resolve_is_due(p, T0, 5000, false));
    /* A literal peer has no name to resolve. */
    nsrv_gossip_peer_conf_t lit[1] = {{1, "10.0.0.1:7946", &k, 1}};
    assert_int_equal(nsrv_gossip_peers_configure(f->t, lit, 1), 0);
    assert_null(nsrv_gossip_peer_host(p));
    assert_int_equal(nsrv_gossip_peer_set_resolved(p, (const struct sockaddr *)&moved), -EINVAL);
    assert_false(nsrv_gossip_peer_resolve_is_due(p, T0, 5000, false));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

NSRV_TEST_MAIN(NULL, NULL, T(test_accept), T(test_reject_cheap_checks), T(test_reject_incarnation),
               T(test_reject_replay), T(test_reject_sig_and_decode),
               T(test_forged_incarnation_changes_nothing), T(test_reordered_inside_window),
               T(test_new_incarnation_resets), T(test_age_mapping_delay_and_replay),
               T(test_age_mapping_after_silence), T(test_replay_to_fresh_node_maps_early),
               T(test_new_incarnation_needs_its_own_anchor), T(test_anchor_for_next_incarnation),
               T(test_anchor_drift_allowance), T(test_anchor_tighter_replaces),
               T(test_offset_tracks_minimum), T(test_rotation_two_keys), T(test_configure),
               T(test_ipv6_and_mapped), T(test_pull_request_path), T(test_named_peer),
               cmocka_unit_test(test_incarnation_persistence))
