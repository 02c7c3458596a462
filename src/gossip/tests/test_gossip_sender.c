/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sending: envelopes from the sender state, and lists cut to the datagram
 * budget. Each part must fit, verify alone, and the parts of a full digest
 * must cover the key space contiguously with exactly the input entries.
 */
#include "gossip_test.h"
#include "testlib.h"

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_entry(const void *a, const void *b) {
    uint64_t x = ((const nsrv_gossip_entry_t *)a)->bkey, y = ((const nsrv_gossip_entry_t *)b)->bkey;
    return x < y ? -1 : x > y;
}

/* n distinct sorted entries; wide = values that take the most bytes. */
static nsrv_gossip_entry_t *make_entries(size_t n, bool wide) {
    nsrv_gossip_entry_t *e = nsrv_malloc((n ? n : 1) * sizeof *e);
    for (size_t i = 0; i < n; i++) {
        e[i].bkey = rnd() | (wide ? UINT64_C(1) << 63 : 0);
        e[i].dv.counter = wide ? INT64_MIN : (int64_t)(rnd() % 1000);
        e[i].dv.timestamp = wide ? INT64_MAX : 1717999999000 + (int64_t)(rnd() % 100000);
        e[i].dv.state_version = wide ? INT64_MIN + 1 : 0;
        e[i].age_ms = wide ? UINT32_MAX : (uint32_t)(rnd() % 120000);
        e[i].flags = wide ? 255 : 0;
    }
    qsort(e, n, sizeof *e, cmp_entry);
    for (size_t i = 1; i < n; i++) /* make strictly increasing */
        if (e[i].bkey <= e[i - 1].bkey)
            e[i].bkey = e[i - 1].bkey + 1;
    return e;
}

/* Checks the parts of one full round against the input. */
static void check_full_round(gt_sink_t *sink, const nsrv_gossip_entry_t *in, size_t n,
                             uint32_t budget, uint64_t first_seq, uint32_t round) {
    gt_key_t k = gt_key_1_1();
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    size_t seen = 0;
    uint64_t next_lo = 0;
    assert_true(sink->n >= 1);
    for (size_t i = 0; i < sink->n; i++) {
        assert_true(sink->len[i] <= budget);
        nsrv_gossip_msg_t m;
        assert_int_equal(nsrv_gossip_msg_decode(sink->d[i], sink->len[i], &a, &m), 0);
        assert_int_equal(nsrv_seal_verify(k.pk, sink->d[i], m.signed_len, m.sig), 0);
        assert_int_equal(m.type, NSRV_GOSSIP_DIGEST_FULL);
        assert_int_equal(m.seq, first_seq + i);
        assert_int_equal(m.body.full.round, round);
        assert_int_equal(m.body.full.part, i);
        assert_int_equal(m.body.full.nparts, sink->n);
        assert_int_equal(m.body.full.key_lo, next_lo);
        /* Exactly the input entries of this key range, in order. */
        for (size_t j = 0; j < m.body.full.n; j++) {
            assert_true(seen < n);
            assert_int_equal(m.body.full.entries[j].bkey, in[seen].bkey);
            assert_true(nsrv_data_version_eq(&m.body.full.entries[j].dv, &in[seen].dv));
            assert_int_equal(m.body.full.entries[j].age_ms, in[seen].age_ms);
            seen++;
        }
        /* No input key of this range is missing from the part. */
        assert_true(seen == n || in[seen].bkey > m.body.full.key_hi);
        if (i + 1 == sink->n)
            assert_int_equal(m.body.full.key_hi, UINT64_MAX);
        else
            next_lo = m.body.full.key_hi + 1;
        nsrv_arena_reset(&a);
    }
    assert_int_equal(seen, n);
    nsrv_arena_deinit(&a);
}

static void run_full(size_t n, uint32_t budget, bool wide, size_t *nparts_out) {
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    nsrv_gossip_entry_t *e = make_entries(n, wide);
    gt_sink_t *sink = calloc(1, sizeof *sink);
    nsrv_gossip_send_opts_t o = gt_opts(2, budget, 61000);
    assert_int_equal(nsrv_gossip_sender_full(&s, &o, 77, e, n, gt_emit, sink), 0);
    check_full_round(sink, e, n, budget, 1, 77);
    assert_int_equal(s.next_seq, 1 + sink->n);
    if (nparts_out)
        *nparts_out = sink->n;
    gt_sink_free(sink);
    free(sink);
    nsrv_free(e);
    nsrv_gossip_sender_deinit(&s);
}

static void test_full_1000_at_1200(void **state) {
    (void)state;
    size_t parts;
    run_full(1000, 1200, false, &parts);
    /* About 30 B per entry: 1000 entries need 25..40 parts at 1200 B. */
    assert_true(parts >= 25 && parts <= 40);
    run_full(1000, 1200, true, &parts);
}

static void test_full_other_budgets(void **state) {
    (void)state;
    size_t parts;
    run_full(0, 1200, false, &parts);
    assert_int_equal(parts, 1);
    run_full(1, 512, true, &parts);
    assert_int_equal(parts, 1);
    for (size_t n = 1; n < 60; n++)
        run_full(n, 512, n % 2 == 0, NULL);
    run_full(3000, 512, false, NULL);
    run_full(3000, 65000, true, &parts);
    assert_true(parts >= 2);
    run_full(5000, 1400, false, NULL);
}

/* Every budget from 512 to 700 at byte granularity: the cut is exact. */
static void test_full_budget_sweep(void **state) {
    (void)state;
    for (uint32_t b = 512; b <= 700; b++)
        run_full(40, b, b % 3 == 0, NULL);
}

static void test_envelope_from_sender(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    gt_sink_t sink = {0};
    nsrv_gossip_send_opts_t o = gt_opts(NSRV_GOSSIP_DST_ANY, 1200, 1000 + 123456);
    assert_int_equal(nsrv_gossip_sender_sync(&s, &o, gt_emit, &sink), 0);
    o.now_mono_ms = 500; /* before the incarnation start: saturates at 0 */
    assert_int_equal(nsrv_gossip_sender_sync(&s, &o, gt_emit, &sink), 0);
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    assert_int_equal(nsrv_gossip_msg_decode(sink.d[0], sink.len[0], &a, &m), 0);
    assert_int_equal(m.type, NSRV_GOSSIP_SYNC_REQ);
    assert_int_equal(m.src, 1);
    assert_int_equal(m.src_inc, GT_INC);
    assert_int_equal(m.seq, 1);
    assert_int_equal(m.src_mono_ms, 123456);
    assert_int_equal(m.wall_ms, (uint64_t)GT_WALL);
    assert_int_equal(m.dst, 255);
    assert_int_equal(m.key_id, 1);
    assert_int_equal(nsrv_gossip_msg_decode(sink.d[1], sink.len[1], &a, &m), 0);
    assert_int_equal(m.seq, 2);
    assert_int_equal(m.src_mono_ms, 0);

    /* Key switch (rotation). */
    gt_key_t k2 = gt_key_1_2();
    nsrv_gossip_sender_set_key(&s, 2, k2.sk);
    assert_int_equal(nsrv_gossip_sender_sync(&s, &o, gt_emit, &sink), 0);
    assert_int_equal(nsrv_gossip_msg_decode(sink.d[2], sink.len[2], &a, &m), 0);
    assert_int_equal(m.key_id, 2);
    assert_int_equal(nsrv_seal_verify(k2.pk, sink.d[2], m.signed_len, m.sig), 0);
    assert_int_equal(nsrv_seal_verify(k.pk, sink.d[2], m.signed_len, m.sig), -EBADMSG);

    nsrv_arena_deinit(&a);
    gt_sink_free(&sink);
    nsrv_gossip_sender_deinit(&s);
}

static void test_delta_and_tombs_split(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    size_t n = 500;
    nsrv_gossip_entry_t *e = make_entries(n, true);
    gt_sink_t *sink = calloc(1, sizeof *sink);
    nsrv_gossip_send_opts_t o = gt_opts(3, 1200, 5000);
    assert_int_equal(nsrv_gossip_sender_delta(&s, &o, e, n, gt_emit, sink), 0);
    assert_true(sink->n > 1);
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    size_t seen = 0;
    for (size_t i = 0; i < sink->n; i++) {
        nsrv_gossip_msg_t m;
        assert_true(sink->len[i] <= 1200);
        assert_int_equal(nsrv_gossip_msg_decode(sink->d[i], sink->len[i], &a, &m), 0);
        assert_int_equal(nsrv_seal_verify(k.pk, sink->d[i], m.signed_len, m.sig), 0);
        assert_int_equal(m.type, NSRV_GOSSIP_DIGEST_DELTA);
        assert_int_equal(m.seq, i + 1);
        for (size_t j = 0; j < m.body.delta.n; j++)
            assert_int_equal(m.body.delta.entries[j].bkey, e[seen++].bkey);
        nsrv_arena_reset(&a);
    }
    assert_int_equal(seen, n);
    uint64_t next = s.next_seq;
    gt_sink_free(sink);

    nsrv_gossip_tomb_t *t = nsrv_malloc(n * sizeof *t);
    for (size_t i = 0; i < n; i++)
        t[i] = (nsrv_gossip_tomb_t){e[i].bkey, e[i].dv, (uint8_t)(1 + i % 2), e[i].age_ms};
    o.budget = 512;
    assert_int_equal(nsrv_gossip_sender_tombs(&s, &o, t, n, gt_emit, sink), 0);
    seen = 0;
    for (size_t i = 0; i < sink->n; i++) {
        nsrv_gossip_msg_t m;
        assert_true(sink->len[i] <= 512);
        assert_int_equal(nsrv_gossip_msg_decode(sink->d[i], sink->len[i], &a, &m), 0);
        assert_int_equal(m.seq, next + i);
        for (size_t j = 0; j < m.body.tomb.n; j++) {
            assert_int_equal(m.body.tomb.tombs[j].bkey, t[seen].bkey);
            assert_int_equal(m.body.tomb.tombs[j].reason, t[seen].reason);
            seen++;
        }
        nsrv_arena_reset(&a);
    }
    assert_int_equal(seen, n);
    gt_sink_free(sink);
    free(sink);
    nsrv_arena_deinit(&a);
    nsrv_free(t);
    nsrv_free(e);
    nsrv_gossip_sender_deinit(&s);
}

static void test_invalid_input_sends_nothing(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    gt_sink_t sink = {0};
    nsrv_gossip_entry_t e[3] = {{5, {0, 0, 0}, 0, 0}, {4, {0, 0, 0}, 0, 0}, {6, {0, 0, 0}, 0, 0}};
    nsrv_gossip_send_opts_t o = gt_opts(2, 1200, 0);
    assert_int_equal(nsrv_gossip_sender_full(&s, &o, 1, e, 3, gt_emit, &sink), -EINVAL);
    assert_int_equal(nsrv_gossip_sender_delta(&s, &o, e, 3, gt_emit, &sink), -EINVAL);
    assert_int_equal(nsrv_gossip_sender_delta(&s, &o, e, 0, gt_emit, &sink), -EINVAL);
    e[1].bkey = 5; /* duplicate */
    assert_int_equal(nsrv_gossip_sender_full(&s, &o, 1, e, 3, gt_emit, &sink), -EINVAL);
    e[1].bkey = 55;
    e[2].bkey = 56;
    o.budget = 511;
    assert_int_equal(nsrv_gossip_sender_full(&s, &o, 1, e, 3, gt_emit, &sink), -EINVAL);
    o.budget = 65001;
    assert_int_equal(nsrv_gossip_sender_sync(&s, &o, gt_emit, &sink), -EINVAL);
    o.budget = 1200;
    o.dst = 0;
    assert_int_equal(nsrv_gossip_sender_sync(&s, &o, gt_emit, &sink), -EINVAL);
    nsrv_gossip_tomb_t t = {1, {0, 0, 0}, 0, 0}; /* reason 0 */
    o.dst = 2;
    assert_int_equal(nsrv_gossip_sender_tombs(&s, &o, &t, 1, gt_emit, &sink), -EINVAL);
    assert_int_equal(sink.n, 0);
    assert_int_equal(s.next_seq, 1);
    /* Bad sender configuration. */
    nsrv_gossip_sender_t s2;
    assert_int_equal(nsrv_gossip_sender_init(&s2, NSRV_STR_LIT(""), 1, 1, 0, 1, k.sk), -EINVAL);
    assert_int_equal(nsrv_gossip_sender_init(&s2, NSRV_STR_LIT("c"), 0, 1, 0, 1, k.sk), -EINVAL);
    assert_int_equal(nsrv_gossip_sender_init(&s2, NSRV_STR_LIT("c"), 255, 1, 0, 1, k.sk), -EINVAL);
    assert_int_equal(nsrv_gossip_sender_init(&s2, NSRV_STR_LIT("c"), 1, 0, 0, 1, k.sk), -EINVAL);
    nsrv_gossip_sender_deinit(&s);
}

/* An emit error stops the round and is returned; emitted parts keep their seq. */
static void test_emit_error(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    nsrv_gossip_entry_t *e = make_entries(200, false);
    gt_sink_t sink = {0};
    sink.fail_at = 3;
    nsrv_gossip_send_opts_t o = gt_opts(2, 600, 0);
    assert_int_equal(nsrv_gossip_sender_full(&s, &o, 1, e, 200, gt_emit, &sink), -EPIPE);
    assert_int_equal(sink.n, 2);
    assert_int_equal(s.next_seq, 4); /* the refused datagram was signed with seq 3 */
    gt_sink_free(&sink);
    nsrv_free(e);
    nsrv_gossip_sender_deinit(&s);
}

static void test_pull_req_framing(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_sender_t s;
    gt_sender(&s, 1, 1, &k);
    uint8_t nonce[16];
    memset(nonce, 0x5a, sizeof nonce);
    uint64_t keys[2] = {10, 20};
    nsrv_gossip_send_opts_t o = gt_opts(2, 0, 1500);
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_buf_append_c(&out, "xy"); /* appends after existing bytes */
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, keys, 2, &out), 0);
    uint32_t flen = nsrv_load_be32(out.data + 2);
    assert_int_equal(flen, out.len - 6);
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    assert_int_equal(nsrv_gossip_msg_decode((const uint8_t *)out.data + 6, flen, &a, &m), 0);
    assert_int_equal(m.type, NSRV_GOSSIP_PULL_REQ);
    assert_int_equal(m.seq, 1);
    assert_int_equal(m.body.pull.n, 2);
    assert_memory_equal(m.body.pull.nonce, nonce, 16);
    assert_int_equal(s.next_seq, 2);
    o.dst = NSRV_GOSSIP_DST_ANY;
    size_t before = out.len;
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, keys, 2, &out), -EINVAL);
    uint64_t bad[2] = {20, 10};
    o.dst = 2;
    assert_int_equal(nsrv_gossip_sender_pull_req(&s, &o, nonce, bad, 2, &out), -EINVAL);
    assert_int_equal(out.len, before);
    assert_int_equal(s.next_seq, 2);
    nsrv_arena_deinit(&a);
    nsrv_buf_deinit(&out);
    nsrv_gossip_sender_deinit(&s);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_full_1000_at_1200),
               cmocka_unit_test(test_full_other_budgets), cmocka_unit_test(test_full_budget_sweep),
               cmocka_unit_test(test_envelope_from_sender),
               cmocka_unit_test(test_delta_and_tombs_split),
               cmocka_unit_test(test_invalid_input_sends_nothing),
               cmocka_unit_test(test_emit_error), cmocka_unit_test(test_pull_req_framing))
