/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Datagram codec: every type round-trips; the decoder is strict about types,
 * counts, order and trailing bytes, and hostile counts allocate nothing.
 */
#include "gossip_test.h"
#include "testlib.h"

static nsrv_gossip_msg_t base_msg(uint8_t type) {
    nsrv_gossip_msg_t m = gt_envelope(type, 3, 42, 987654321, 4, 9);
    return m;
}

static nsrv_gossip_entry_t entry(uint64_t bkey, int64_t c, uint32_t age) {
    nsrv_gossip_entry_t e = {bkey, {c, 1717999999000 ^ c, ~c}, age, (uint8_t)(c & 0xff)};
    return e;
}

static void assert_env_equal(const nsrv_gossip_msg_t *a, const nsrv_gossip_msg_t *b) {
    assert_int_equal(a->ver, b->ver);
    assert_int_equal(a->type, b->type);
    assert_true(nsrv_str_eq(a->cluster, b->cluster));
    assert_int_equal(a->src, b->src);
    assert_int_equal(a->src_inc, b->src_inc);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->src_mono_ms, b->src_mono_ms);
    assert_int_equal(a->wall_ms, b->wall_ms);
    assert_int_equal(a->dst, b->dst);
    assert_int_equal(a->key_id, b->key_id);
}

static void assert_entries_equal(const nsrv_gossip_entry_t *a, const nsrv_gossip_entry_t *b,
                                 size_t n) {
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i].bkey, b[i].bkey);
        assert_true(nsrv_data_version_eq(&a[i].dv, &b[i].dv));
        assert_int_equal(a[i].age_ms, b[i].age_ms);
        assert_int_equal(a[i].flags, b[i].flags);
    }
}

/* Encodes m, decodes it back into d (arena a), checks the signature. */
static void roundtrip(const nsrv_gossip_msg_t *m, nsrv_arena_t *a, nsrv_gossip_msg_t *d,
                      nsrv_buf_t *out) {
    gt_key_t k = gt_key_1_1();
    nsrv_buf_reset(out);
    assert_int_equal(nsrv_gossip_msg_encode(m, k.sk, out), 0);
    assert_int_equal(nsrv_gossip_msg_decode((const uint8_t *)out->data, out->len, a, d), 0);
    assert_int_equal(d->signed_len, out->len - 64);
    assert_int_equal(nsrv_seal_verify(k.pk, out->data, d->signed_len, d->sig), 0);
    assert_env_equal(m, d);
}

static void test_roundtrip_every_type(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_msg_t d;
    nsrv_gossip_entry_t es[4] = {entry(5, 1, 0), entry(300, 2, 70000), entry(UINT64_MAX - 1, -9, 1),
                                 entry(UINT64_MAX, INT64_MIN, UINT32_MAX)};

    nsrv_gossip_msg_t m = base_msg(NSRV_GOSSIP_DIGEST_FULL);
    m.body.full.round = UINT32_MAX;
    m.body.full.part = 65534;
    m.body.full.nparts = 65535;
    m.body.full.key_lo = 5;
    m.body.full.key_hi = UINT64_MAX;
    m.body.full.entries = es;
    m.body.full.n = 4;
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.full.round, UINT32_MAX);
    assert_int_equal(d.body.full.part, 65534);
    assert_int_equal(d.body.full.nparts, 65535);
    assert_int_equal(d.body.full.key_lo, 5);
    assert_int_equal(d.body.full.key_hi, UINT64_MAX);
    assert_int_equal(d.body.full.n, 4);
    assert_entries_equal(d.body.full.entries, es, 4);

    /* An empty part. */
    m.body.full.n = 0;
    m.body.full.entries = NULL;
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.full.n, 0);

    m = base_msg(NSRV_GOSSIP_DIGEST_DELTA);
    m.body.delta.entries = es;
    m.body.delta.n = 4;
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.delta.n, 4);
    assert_entries_equal(d.body.delta.entries, es, 4);

    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.dst = NSRV_GOSSIP_DST_ANY;
    roundtrip(&m, &a, &d, &out);

    nsrv_gossip_tomb_t ts[2] = {{1, {1, 2, 3}, NSRV_GOSSIP_TOMB_UNREGISTER, 0},
                                {2, {-1, -2, -3}, NSRV_GOSSIP_TOMB_EVICT, UINT32_MAX}};
    m = base_msg(NSRV_GOSSIP_TOMBSTONE);
    m.body.tomb.tombs = ts;
    m.body.tomb.n = 2;
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.tomb.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(d.body.tomb.tombs[i].bkey, ts[i].bkey);
        assert_true(nsrv_data_version_eq(&d.body.tomb.tombs[i].dv, &ts[i].dv));
        assert_int_equal(d.body.tomb.tombs[i].reason, ts[i].reason);
        assert_int_equal(d.body.tomb.tombs[i].age_ms, ts[i].age_ms);
    }

    uint64_t keys[3] = {0, 77, UINT64_MAX};
    m = base_msg(NSRV_GOSSIP_PULL_REQ);
    for (int i = 0; i < 16; i++)
        m.body.pull.nonce[i] = (uint8_t)(i * 7);
    m.body.pull.keys = keys;
    m.body.pull.n = 3;
    roundtrip(&m, &a, &d, &out);
    assert_memory_equal(d.body.pull.nonce, m.body.pull.nonce, 16);
    assert_int_equal(d.body.pull.n, 3);
    assert_memory_equal(d.body.pull.keys, keys, sizeof keys);
    m.body.pull.n = 0;
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.pull.n, 0);

    /* Largest cluster name. */
    char big[65];
    memset(big, 'c', 64);
    big[64] = '\0';
    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.cluster = nsrv_str_c(big);
    roundtrip(&m, &a, &d, &out);

    nsrv_buf_deinit(&out);
    nsrv_arena_deinit(&a);
}

static void test_encode_rejects_invalid(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_entry_t es[2] = {entry(9, 1, 0), entry(3, 1, 0)}; /* unsorted */
    nsrv_gossip_msg_t m = base_msg(NSRV_GOSSIP_DIGEST_DELTA);
    m.body.delta.entries = es;
    m.body.delta.n = 2;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m.body.delta.n = 0;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);

    m = base_msg(NSRV_GOSSIP_DIGEST_FULL);
    m.body.full.nparts = 2;
    m.body.full.part = 2;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m.body.full.part = 0;
    m.body.full.key_lo = 10;
    m.body.full.key_hi = 20;
    m.body.full.entries = es;
    m.body.full.n = 1; /* bkey 9 outside [10, 20] */
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);

    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.cluster = NSRV_STR_LIT("");
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.src = 255;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.seq = 0;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m = base_msg(NSRV_GOSSIP_SYNC_REQ);
    m.type = 9;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    m = base_msg(NSRV_GOSSIP_PULL_REQ);
    m.dst = NSRV_GOSSIP_DST_ANY;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    nsrv_gossip_tomb_t t = {1, {0, 0, 0}, 3, 0};
    m = base_msg(NSRV_GOSSIP_TOMBSTONE);
    m.body.tomb.tombs = &t;
    m.body.tomb.n = 1;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    assert_int_equal(out.len, 0);
    nsrv_buf_deinit(&out);
}

/*
 * Hand-built datagrams: envelope bytes ‖ 64 zero bytes (the decoder does not
 * check signatures). h is the envelope prefix up to the body.
 */
static const uint8_t ENV[] = {0x9b, 0x01, 0x01, 0xa1, 'C',  0x03,
                              0x01, 0x01, 0x00, 0x00, 0x04, 0x01};

static int decode_env_body(const uint8_t *env, size_t env_len, const uint8_t *body, size_t body_len,
                           nsrv_arena_t *a, nsrv_gossip_msg_t *m) {
    uint8_t buf[512];
    assert_true(env_len + body_len + 64 <= sizeof buf);
    memcpy(buf, env, env_len);
    memcpy(buf + env_len, body, body_len);
    memset(buf + env_len + body_len, 0, 64);
    return nsrv_gossip_msg_decode(buf, env_len + body_len + 64, a, m);
}

static int decode_body(uint8_t type, const uint8_t *body, size_t body_len, nsrv_arena_t *a) {
    uint8_t env[sizeof ENV];
    memcpy(env, ENV, sizeof env);
    env[2] = type;
    nsrv_gossip_msg_t m;
    return decode_env_body(env, sizeof env, body, body_len, a, &m);
}

static void test_decode_strict(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;

    /* Baseline: a valid SYNC_REQ. */
    const uint8_t empty[] = {0x90};
    assert_int_equal(decode_body(NSRV_GOSSIP_SYNC_REQ, empty, 1, &a), 0);
    /* SYNC_REQ with a field. */
    const uint8_t one[] = {0x91, 0x00};
    assert_int_equal(decode_body(NSRV_GOSSIP_SYNC_REQ, one, 2, &a), NSRV_GOSSIP_EDECODE);
    /* Trailing byte after the body. */
    const uint8_t trail[] = {0x90, 0x00};
    assert_int_equal(decode_body(NSRV_GOSSIP_SYNC_REQ, trail, 2, &a), NSRV_GOSSIP_EDECODE);
    /* Unknown type. */
    assert_int_equal(decode_body(NSRV_GOSSIP_LEAVE + 1, empty, 1, &a), NSRV_GOSSIP_ETYPE);
    assert_int_equal(decode_body(NSRV_GOSSIP_ANNOUNCE, empty, 1, &a), NSRV_GOSSIP_EDECODE);
    assert_int_equal(decode_body(0, empty, 1, &a), NSRV_GOSSIP_ETYPE);

    /* Hostile counts: array32 of 2^32-1 entries in a tiny datagram. */
    const uint8_t hostile_delta[] = {0x91, 0xdd, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, hostile_delta, sizeof hostile_delta, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t hostile_tomb[] = {0x91, 0xdc, 0xff, 0xff, 0x96};
    assert_int_equal(decode_body(NSRV_GOSSIP_TOMBSTONE, hostile_tomb, sizeof hostile_tomb, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t hostile_keys[] = {0x92, 0xc4, 0x10, 0, 0, 0, 0, 0,    0,    0,    0,    0,
                                    0,    0,    0,    0, 0, 0, 0, 0xdd, 0x00, 0x01, 0x00, 0x00};
    assert_int_equal(decode_body(NSRV_GOSSIP_PULL_REQ, hostile_keys, sizeof hostile_keys, &a),
                     NSRV_GOSSIP_EDECODE);

    /* A valid delta: [[ [1, 2, 3, 4, 5, 6] ]] */
    const uint8_t delta_ok[] = {0x91, 0x91, 0x96, 1, 2, 3, 4, 5, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_ok, sizeof delta_ok, &a), 0);
    /* Empty delta list. */
    const uint8_t delta_empty[] = {0x91, 0x90};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_empty, 2, &a),
                     NSRV_GOSSIP_EDECODE);
    /* Entry with 5 fields; with a string bkey; with a negative age; flags 256. */
    const uint8_t delta_short[] = {0x91, 0x91, 0x95, 1, 2, 3, 4, 5};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_short, sizeof delta_short, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t delta_str[] = {0x91, 0x91, 0x96, 0xa1, 'x', 2, 3, 4, 5, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_str, sizeof delta_str, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t delta_neg_age[] = {0x91, 0x91, 0x96, 1, 2, 3, 4, 0xff, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_neg_age, sizeof delta_neg_age, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t delta_big_flags[] = {0x91, 0x91, 0x96, 1, 2, 3, 4, 5, 0xcd, 0x01, 0x00};
    assert_int_equal(
        decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_big_flags, sizeof delta_big_flags, &a),
        NSRV_GOSSIP_EDECODE);
    /* Age above u32. */
    const uint8_t delta_big_age[] = {0x91, 0x91, 0x96, 1, 2, 3, 4, 0xcf, 0, 0, 0x01, 0, 0, 0, 0, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_big_age, sizeof delta_big_age, &a),
                     NSRV_GOSSIP_EDECODE);
    /* Signed-family encodings of non-negative values are accepted (other encoders use them). */
    const uint8_t delta_signed[] = {0x91, 0x91, 0x96, 0xd0, 0x05, 0xd3, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xfe, 3,    4,    0xd1, 0x00, 0x10, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_signed, sizeof delta_signed, &a),
                     0);
    /* Duplicate and decreasing keys. */
    const uint8_t delta_dup[] = {0x91, 0x92, 0x96, 1, 2, 3, 4, 5, 6, 0x96, 1, 2, 3, 4, 5, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_DELTA, delta_dup, sizeof delta_dup, &a),
                     NSRV_GOSSIP_EDECODE);

    /* DIGEST_FULL: part >= nparts; lo > hi; entry outside the range. */
    const uint8_t full_part[] = {0x96, 1, 2, 2, 0, 9, 0x90};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_FULL, full_part, sizeof full_part, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t full_range[] = {0x96, 1, 0, 1, 9, 8, 0x90};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_FULL, full_range, sizeof full_range, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t full_out[] = {0x96, 1, 0, 1, 2, 8, 0x91, 0x96, 9, 2, 3, 4, 5, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_FULL, full_out, sizeof full_out, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t full_in[] = {0x96, 1, 0, 1, 2, 9, 0x91, 0x96, 9, 2, 3, 4, 5, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_DIGEST_FULL, full_in, sizeof full_in, &a), 0);

    /* TOMBSTONE with reason 3. */
    const uint8_t tomb_reason[] = {0x91, 0x91, 0x96, 1, 2, 3, 4, 3, 6};
    assert_int_equal(decode_body(NSRV_GOSSIP_TOMBSTONE, tomb_reason, sizeof tomb_reason, &a),
                     NSRV_GOSSIP_EDECODE);
    /* PULL_REQ: nonce of 15 bytes; nonce as str. */
    const uint8_t pull_short[] = {0x92, 0xc4, 0x0f, 0, 0, 0, 0, 0, 0,   0,
                                  0,    0,    0,    0, 0, 0, 0, 0, 0x90};
    assert_int_equal(decode_body(NSRV_GOSSIP_PULL_REQ, pull_short, sizeof pull_short, &a),
                     NSRV_GOSSIP_EDECODE);
    const uint8_t pull_ok[] = {0x92, 0xc4, 0x10, 0, 0, 0, 0, 0, 0,    0, 0,
                               0,    0,    0,    0, 0, 0, 0, 0, 0x92, 1, 2};
    assert_int_equal(decode_body(NSRV_GOSSIP_PULL_REQ, pull_ok, sizeof pull_ok, &a), 0);
    /* PULL_REQ to any node (dst 255 takes two bytes). */
    uint8_t env255[sizeof ENV + 1];
    memcpy(env255, ENV, 10);
    env255[2] = NSRV_GOSSIP_PULL_REQ;
    env255[10] = 0xcc;
    env255[11] = 0xff;
    env255[12] = 0x01;
    assert_int_equal(decode_env_body(env255, sizeof env255, pull_ok, sizeof pull_ok, &a, &m),
                     NSRV_GOSSIP_EDECODE);

    nsrv_arena_deinit(&a);
}

static void test_decode_header(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    const uint8_t empty[] = {0x90};
    /* Version 2 is reported as such, whatever follows. */
    uint8_t v2[] = {0x93, 0x02, 0x00, 0x00};
    assert_int_equal(decode_env_body(v2, sizeof v2, empty, 0, &a, &m), NSRV_GOSSIP_ESIZE);
    uint8_t v2long[20] = {0x93, 0x02};
    assert_int_equal(decode_env_body(v2long, sizeof v2long, empty, 0, &a, &m),
                     NSRV_GOSSIP_EVERSION);
    /* Version 1 with 10 fields. */
    uint8_t env[sizeof ENV];
    memcpy(env, ENV, sizeof env);
    env[0] = 0x9a;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    /* Not an array; a map. */
    memcpy(env, ENV, sizeof env);
    env[0] = 0x8b;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    /* Empty cluster. */
    uint8_t env_nocluster[] = {0x9b, 0x01, 0x03, 0xa0, 0x03, 0x01, 0x01,
                               0x00, 0x00, 0x04, 0x01, 0x90, 0x00};
    assert_int_equal(decode_env_body(env_nocluster, sizeof env_nocluster, empty, 0, &a, &m),
                     NSRV_GOSSIP_EDECODE);
    /* A cluster name (any msgpack str) holding a NUL or ill-formed UTF-8 is
     * malformed: no request we accept can have produced it. */
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), 0);
    env[4] = 0x00;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    env[4] = (uint8_t)0xFF;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    /* seq 0, inc 0. */
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    env[7] = 0x00;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    env[6] = 0x00;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    /* src 0 and src 255, dst 0 (found by fuzzing: the encoder refuses them). */
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    env[5] = 0x00; /* src 0 */
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    uint8_t env_src255[sizeof ENV + 1];
    memcpy(env_src255, ENV, 5);
    env_src255[2] = NSRV_GOSSIP_SYNC_REQ;
    env_src255[5] = 0xcc; /* src 255 takes two bytes */
    env_src255[6] = 0xff;
    memcpy(env_src255 + 7, ENV + 6, sizeof ENV - 6);
    assert_int_equal(decode_env_body(env_src255, sizeof env_src255, empty, 1, &a, &m),
                     NSRV_GOSSIP_EDECODE);
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    env[10] = 0x00; /* dst 0 */
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), NSRV_GOSSIP_EDECODE);
    /* The same envelope, fine. */
    memcpy(env, ENV, sizeof env);
    env[2] = NSRV_GOSSIP_SYNC_REQ;
    assert_int_equal(decode_env_body(env, sizeof env, empty, 1, &a, &m), 0);
    assert_int_equal(m.src, 3);
    assert_int_equal(m.dst, 4);
    /* Too short for a signature and an envelope. */
    uint8_t tiny[70] = {0};
    assert_int_equal(nsrv_gossip_msg_decode(tiny, 76, &a, &m), NSRV_GOSSIP_ESIZE);
    assert_int_equal(nsrv_gossip_msg_decode(tiny, 0, &a, &m), NSRV_GOSSIP_ESIZE);
    nsrv_arena_deinit(&a);
}

/* Every prefix of a valid datagram is rejected cleanly (truncation). */
static void test_truncations(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_gossip_entry_t es[3] = {entry(1, 1, 1), entry(2, 2, 2), entry(3, 3, 3)};
    nsrv_gossip_msg_t m = base_msg(NSRV_GOSSIP_DIGEST_DELTA);
    m.body.delta.entries = es;
    m.body.delta.n = 3;
    nsrv_buf_t out = NSRV_BUF_INIT;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), 0);
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    for (size_t n = 0; n < out.len; n++) {
        nsrv_gossip_msg_t d;
        uint8_t *copy = nsrv_malloc(n + 1);
        memcpy(copy, out.data, n);
        int rc = nsrv_gossip_msg_decode(copy, n, &a, &d);
        assert_true(rc == NSRV_GOSSIP_ESIZE || rc == NSRV_GOSSIP_EDECODE);
        nsrv_free(copy);
    }
    nsrv_arena_deinit(&a);
    nsrv_buf_deinit(&out);
}

static void test_bkey_and_reasons(void **state) {
    (void)state;
    uint64_t a = nsrv_gossip_bkey(NSRV_STR_LIT("c"), NSRV_STR_LIT("n"), 0, NSRV_STR_LIT("a"));
    uint64_t b = nsrv_gossip_bkey(NSRV_STR_LIT("c"), NSRV_STR_LIT("n"), 1, NSRV_STR_LIT("a"));
    uint64_t c = nsrv_gossip_bkey(NSRV_STR_LIT("c"), NSRV_STR_LIT("n0"), 0, NSRV_STR_LIT("a"));
    assert_true(a != b && a != c && b != c);
    /* The separators keep field boundaries: "cn" ‖ "" differs from "c" ‖ "n". */
    assert_true(nsrv_gossip_bkey(NSRV_STR_LIT("cn"), NSRV_STR_LIT(""), 0, NSRV_STR_LIT("a")) !=
                nsrv_gossip_bkey(NSRV_STR_LIT("c"), NSRV_STR_LIT("n"), 0, NSRV_STR_LIT("a")));

    assert_int_equal(nsrv_gossip_reason_index(NSRV_GOSSIP_ESIZE), 0);
    assert_int_equal(nsrv_gossip_reason_index(NSRV_GOSSIP_ETYPE), NSRV_GOSSIP_NREASONS - 1);
    assert_int_equal(nsrv_gossip_reason_index(0), -1);
    assert_int_equal(nsrv_gossip_reason_index(-EINVAL), -1);
    assert_string_equal(nsrv_gossip_reason_name(NSRV_GOSSIP_EREPLAY), "replay");
    assert_string_equal(nsrv_gossip_reason_name(NSRV_GOSSIP_EBAD_SIG), "bad_sig");
    assert_string_equal(nsrv_gossip_reason_name(NSRV_GOSSIP_EOLD_INC), "old_incarnation");
    assert_string_equal(nsrv_gossip_reason_name(12345), "?");
}

static nsrv_gossip_msg_t announce_msg(const char *ns_host, uint16_t ns_port, const char *st_host,
                                      uint16_t st_port) {
    nsrv_gossip_msg_t m = base_msg(NSRV_GOSSIP_ANNOUNCE);
    m.body.announce =
        (nsrv_gossip_announce_t){nsrv_str_c(ns_host), ns_port, nsrv_str_c(st_host), st_port};
    return m;
}

/* ANNOUNCE and LEAVE round-trip; LEAVE's body is the empty array. */
static void test_announce_and_leave(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_msg_t d;
    const char *hosts[] = {"", "10.1.2.3", "ns1.example-dc_2", "fe80::1", "::ffff:10.0.0.1"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(hosts); i++) {
        nsrv_gossip_msg_t m =
            announce_msg(hosts[i], 9876, hosts[NSRV_ARRAY_LEN(hosts) - 1 - i], (uint16_t)i);
        roundtrip(&m, &a, &d, &out);
        assert_true(nsrv_str_eq(d.body.announce.ns_host, m.body.announce.ns_host));
        assert_int_equal(d.body.announce.ns_port, 9876);
        assert_true(nsrv_str_eq(d.body.announce.status_host, m.body.announce.status_host));
        assert_int_equal(d.body.announce.status_port, i);
    }
    char longest[NSRV_GOSSIP_ANN_HOST_MAX + 1];
    memset(longest, 'h', NSRV_GOSSIP_ANN_HOST_MAX);
    longest[NSRV_GOSSIP_ANN_HOST_MAX] = '\0';
    nsrv_gossip_msg_t m = announce_msg(longest, 65535, "", 65535);
    roundtrip(&m, &a, &d, &out);
    assert_int_equal(d.body.announce.ns_host.len, NSRV_GOSSIP_ANN_HOST_MAX);

    m = base_msg(NSRV_GOSSIP_LEAVE);
    roundtrip(&m, &a, &d, &out);
    assert_int_equal((uint8_t)out.data[out.len - 65], 0x90);
    nsrv_buf_deinit(&out);
    nsrv_arena_deinit(&a);
}

/* What the encoder refuses to send and the decoder refuses to take: a port 0 for the
 * NameServer, a host that could break the address list (';', ',', space, '[') or is too
 * long, a wrong field count, a type beyond the known ones. */
static void test_announce_strict(void **state) {
    (void)state;
    gt_key_t k = gt_key_1_1();
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m = announce_msg("h", 0, "", 0), d;
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    const char *bad[] = {"a;b", "a,b", "a b", "[::1]", "a\nb", "a%eth0"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        m = announce_msg(bad[i], 1, "", 0);
        assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
        m = announce_msg("", 1, bad[i], 1);
        assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    }
    char toolong[NSRV_GOSSIP_ANN_HOST_MAX + 2];
    memset(toolong, 'h', sizeof toolong - 1);
    toolong[sizeof toolong - 1] = '\0';
    m = announce_msg(toolong, 1, "", 0);
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), -EINVAL);
    assert_int_equal(out.len, 0);

    /* Tampered copies of a good one (the decoder does not check signatures). */
    m = announce_msg("x", 7, "y", 8);
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), 0);
    uint8_t *p = (uint8_t *)out.data;
    size_t body = out.len - 64 - 7; /* [0x94, 0xa1 'x', 7, 0xa1 'y', 8] */
    assert_int_equal(p[body], 0x94);
    p[body + 2] = ';';
    assert_int_equal(nsrv_gossip_msg_decode(p, out.len, &a, &d), NSRV_GOSSIP_EDECODE);
    p[body + 2] = 'x';
    p[body + 3] = 0; /* NameServer port 0 */
    assert_int_equal(nsrv_gossip_msg_decode(p, out.len, &a, &d), NSRV_GOSSIP_EDECODE);
    p[body + 3] = 7;
    p[body] = 0x95; /* five fields declared, four present */
    assert_int_equal(nsrv_gossip_msg_decode(p, out.len, &a, &d), NSRV_GOSSIP_EDECODE);
    p[body] = 0x94;
    assert_int_equal(nsrv_gossip_msg_decode(p, out.len, &a, &d), 0);

    /* A LEAVE with a body, and a type this version does not know. */
    nsrv_buf_reset(&out);
    m = base_msg(NSRV_GOSSIP_LEAVE);
    assert_int_equal(nsrv_gossip_msg_encode(&m, k.sk, &out), 0);
    p = (uint8_t *)out.data;
    p[out.len - 65] = 0x91;
    assert_int_equal(nsrv_gossip_msg_decode(p, out.len, &a, &d), NSRV_GOSSIP_EDECODE);
    p[out.len - 65] = 0x90;
    size_t off;
    assert_int_equal(nsrv_gossip_msg_decode_header(p, out.len, &d, &off), 0);
    d.type = NSRV_GOSSIP_LEAVE + 1;
    assert_int_equal(nsrv_gossip_msg_decode_body(p, out.len, off, &a, &d), NSRV_GOSSIP_ETYPE);
    nsrv_buf_deinit(&out);
    nsrv_arena_deinit(&a);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_roundtrip_every_type),
               cmocka_unit_test(test_encode_rejects_invalid), cmocka_unit_test(test_decode_strict),
               cmocka_unit_test(test_decode_header), cmocka_unit_test(test_truncations),
               cmocka_unit_test(test_bkey_and_reasons), cmocka_unit_test(test_announce_and_leave),
               cmocka_unit_test(test_announce_strict))
