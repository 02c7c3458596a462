/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pull response codec: round trip in any chunking, signature binding to the
 * nonce, the responder's key and its clock reading (the anchor), strict
 * frames, and limits enforced before any allocation follows a declared
 * length.
 */
#include "gossip_test.h"
#include "testlib.h"

static const uint8_t NONCE[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
/* The responder's clock as its end frame carries it. */
#define R_INC (GT_INC + 7)
#define R_MONO 424242

static nsrv_gossip_pull_item_t item(const char *name, int64_t id, const char *addr,
                                    const char *reg) {
    nsrv_gossip_pull_item_t it;
    memset(&it, 0, sizeof it);
    it.addr = nsrv_str_c(addr);
    it.cluster = nsrv_str_c(GT_CLUSTER);
    it.name = nsrv_str_c(name);
    it.id = id;
    it.ha_addr = nsrv_str_c("10.0.0.1:10912");
    it.zone_name = id % 2 ? nsrv_str_c("z1") : NSRV_STR_NULL;
    it.acting_master = (int8_t)(id % 3 - 1);
    it.timeout_ms = 120000;
    it.dv = (nsrv_data_version_t){id + 1, 1717999999000, id};
    it.age_ms = (uint32_t)(id * 1000);
    it.reg = (const uint8_t *)reg;
    it.reg_len = strlen(reg);
    it.bkey = nsrv_gossip_bkey(it.cluster, it.name, it.id, it.addr);
    return it;
}

static nsrv_gossip_key_t key2(void) {
    gt_key_t k = gt_key_2_1();
    nsrv_gossip_key_t key = {1, {0}};
    memcpy(key.pk, k.pk, 32);
    return key;
}

/* A response with n brokers signed by node 2's key 1. */
static void build(nsrv_buf_t *out, size_t n) {
    gt_key_t k = gt_key_2_1();
    nsrv_gossip_pull_enc_t e;
    nsrv_gossip_pull_enc_init(&e, NONCE);
    for (size_t i = 0; i < n; i++) {
        char name[48], addr[48];
        snprintf(name, sizeof name, "broker-%zu", i);
        snprintf(addr, sizeof addr, "10.0.%zu.%zu:10911", i / 250, i % 250);
        nsrv_gossip_pull_item_t it = item(name, (int64_t)i, addr, "{\"topicConfigTable\":{}}");
        assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, out), 0);
    }
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, R_INC, R_MONO, out), 0);
}

static int decode_all(const void *p, size_t len, const uint8_t *nonce, size_t *nitems) {
    nsrv_gossip_key_t k = key2();
    nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(nonce, &k, 1);
    int rc = nsrv_gossip_pull_dec_feed(d, p, len);
    const nsrv_gossip_pull_item_t *items;
    *nitems = nsrv_gossip_pull_dec_items(d, &items);
    nsrv_gossip_pull_dec_destroy(&d);
    assert_null(d);
    return rc;
}

static void test_roundtrip_chunked(void **state) {
    (void)state;
    nsrv_buf_t out = NSRV_BUF_INIT;
    build(&out, 5);
    nsrv_gossip_key_t k = key2();
    /* Whole, byte by byte, and in chunks of 7. */
    for (size_t chunk = 0; chunk <= 7; chunk += 7) {
        nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(NONCE, &k, 1);
        size_t step = chunk ? chunk : out.len;
        int rc = NSRV_AGAIN;
        for (size_t off = 0; off < out.len; off += step) {
            assert_int_equal(rc, NSRV_AGAIN);
            rc = nsrv_gossip_pull_dec_feed(d, out.data + off, NSRV_MIN(step, out.len - off));
        }
        assert_int_equal(rc, 0);
        uint64_t inc = 0, mono = 0;
        nsrv_gossip_pull_dec_origin(d, &inc, &mono);
        assert_int_equal(inc, R_INC);
        assert_int_equal(mono, R_MONO);
        nsrv_gossip_pull_dec_origin(d, NULL, NULL);
        const nsrv_gossip_pull_item_t *it;
        assert_int_equal(nsrv_gossip_pull_dec_items(d, &it), 5);
        for (int i = 0; i < 5; i++) {
            char name[32];
            snprintf(name, sizeof name, "broker-%d", i);
            assert_true(nsrv_str_eq_c(it[i].name, name));
            assert_int_equal(it[i].id, i);
            assert_int_equal(it[i].dv.counter, i + 1);
            assert_int_equal(it[i].age_ms, i * 1000);
            assert_int_equal(it[i].acting_master, i % 3 - 1);
            if (i % 2)
                assert_true(nsrv_str_eq_c(it[i].zone_name, "z1"));
            else
                assert_null(it[i].zone_name.ptr);
            assert_int_equal(it[i].reg_len, strlen("{\"topicConfigTable\":{}}"));
            assert_memory_equal(it[i].reg, "{\"topicConfigTable\":{}}", it[i].reg_len);
        }
        /* Nothing may follow the end frame; an empty feed is fine. */
        assert_int_equal(nsrv_gossip_pull_dec_feed(d, "", 0), 0);
        assert_int_equal(nsrv_gossip_pull_dec_feed(d, "x", 1), NSRV_GOSSIP_EDECODE);
        assert_int_equal(nsrv_gossip_pull_dec_items(d, &it), 0);
        nsrv_gossip_pull_dec_origin(d, &inc, &mono); /* failed now: no origin */
        assert_int_equal(inc, 0);
        assert_int_equal(mono, 0);
        nsrv_gossip_pull_dec_destroy(&d);
    }
    /* Byte by byte, exhaustively. */
    nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(NONCE, &k, 1);
    for (size_t i = 0; i < out.len; i++)
        assert_int_equal(nsrv_gossip_pull_dec_feed(d, out.data + i, 1),
                         i + 1 == out.len ? 0 : NSRV_AGAIN);
    nsrv_gossip_pull_dec_destroy(&d);
    nsrv_gossip_pull_dec_destroy(&d); /* NULL is fine */

    /* An empty response: only the end frame. */
    nsrv_buf_reset(&out);
    build(&out, 0);
    size_t n;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);
    assert_int_equal(n, 0);
    nsrv_buf_deinit(&out);
}

static void test_signature_binding(void **state) {
    (void)state;
    nsrv_buf_t out = NSRV_BUF_INIT;
    build(&out, 3);
    size_t n;
    /* Another request's nonce (an old response replayed). */
    uint8_t other[16];
    memcpy(other, NONCE, 16);
    other[15] ^= 1;
    assert_int_equal(decode_all(out.data, out.len, other, &n), NSRV_GOSSIP_EBAD_SIG);
    assert_int_equal(n, 0);
    /* Every single-bit flip inside the broker frames breaks the signature or the frame. */
    for (size_t i = 0; i + 80 < out.len; i += 3) {
        out.data[i] ^= 0x04;
        int rc = decode_all(out.data, out.len, NONCE, &n);
        assert_true(rc == NSRV_GOSSIP_EBAD_SIG || rc == NSRV_GOSSIP_EDECODE || rc == NSRV_AGAIN ||
                    rc == NSRV_ETOOBIG);
        assert_int_equal(n, 0);
        out.data[i] ^= 0x04;
    }
    /* The signature byte itself. */
    out.data[out.len - 5] ^= 0x80;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), NSRV_GOSSIP_EBAD_SIG);
    out.data[out.len - 5] ^= 0x80;
    /* Unknown key id in the end frame (last byte). */
    out.data[out.len - 1] = 9;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), NSRV_GOSSIP_EKEY_ID);
    out.data[out.len - 1] = 1;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);
    assert_int_equal(n, 3);
    /* Signed by another node's key. */
    gt_key_t k1 = gt_key_1_1();
    nsrv_gossip_pull_enc_t e;
    nsrv_buf_reset(&out);
    nsrv_gossip_pull_enc_init(&e, NONCE);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k1.sk, 1, R_INC, R_MONO, &out), 0);
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), NSRV_GOSSIP_EBAD_SIG);
    nsrv_buf_deinit(&out);
}

static void test_truncation_and_frames(void **state) {
    (void)state;
    nsrv_buf_t out = NSRV_BUF_INIT;
    build(&out, 2);
    size_t n;
    /* Every prefix only asks for more. */
    for (size_t len = 0; len < out.len; len++)
        assert_int_equal(decode_all(out.data, len, NONCE, &n), NSRV_AGAIN);

    /* Dropping the first broker frame: count mismatch. */
    uint32_t f0 = nsrv_load_be32(out.data);
    assert_int_equal(decode_all(out.data + 4 + f0, out.len - 4 - f0, NONCE, &n),
                     NSRV_GOSSIP_EDECODE);

    /* Zero-length frame. */
    const uint8_t zero[4] = {0, 0, 0, 0};
    assert_int_equal(decode_all(zero, 4, NONCE, &n), NSRV_GOSSIP_EDECODE);
    /* Declared frame above 16 MiB: refused from the 4 prefix bytes alone. */
    const uint8_t huge[4] = {0x01, 0x00, 0x00, 0x01};
    assert_int_equal(decode_all(huge, 4, NONCE, &n), NSRV_ETOOBIG);
    /* Declared 16 MiB with 10 bytes: only asks for more (and holds 10 bytes). */
    const uint8_t big[14] = {0x01, 0x00, 0x00, 0x00, 0x95};
    assert_int_equal(decode_all(big, sizeof big, NONCE, &n), NSRV_AGAIN);

    /* Frames that are not what they should be. */
    struct {
        uint8_t b[16];
        size_t len;
    } bad[] = {
        {{0, 0, 0, 1, 0xc0}, 5},                          /* nil */
        {{0, 0, 0, 1, 0x90}, 5},                          /* empty array */
        {{0, 0, 0, 2, 0x94, 0x01}, 6},                    /* 4 fields, not nil first */
        {{0, 0, 0, 6, 0x95, 0x01, 0x90, 0x93, 0, 0}, 10}, /* identity of 0 fields */
        {{0, 0, 0, 3, 0x96, 0xc0, 0x00}, 7},              /* 6 fields */
        {{0, 0, 0, 5, 0x94, 0xc0, 0x00, 0xc4, 0x00}, 9},  /* old 4-field end frame, empty sig */
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++)
        assert_int_equal(decode_all(bad[i].b, bad[i].len, NONCE, &n), NSRV_GOSSIP_EDECODE);
    nsrv_buf_deinit(&out);
}

static void test_bkey_must_match(void **state) {
    (void)state;
    gt_key_t k = gt_key_2_1();
    nsrv_gossip_pull_enc_t e;
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_pull_enc_init(&e, NONCE);
    nsrv_gossip_pull_item_t it = item("broker-a", 0, "10.0.0.1:10911", "{}");
    it.bkey ^= 1;
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), -EINVAL);
    it.bkey ^= 1;
    it.name = NSRV_STR_LIT("bro\0ker");
    it.bkey = nsrv_gossip_bkey(it.cluster, it.name, it.id, it.addr);
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), -EINVAL); /* NUL inside */
    it = item("broker-a", 0, "10.0.0.1:10911", "{}");
    it.acting_master = 2;
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), -EINVAL);
    it = item("broker-a", 0, "", "{}");
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), -EINVAL); /* empty address */
    assert_int_equal(out.len, 0);

    /* A signed frame whose bkey does not match its identity is refused too. */
    it = item("broker-a", 0, "10.0.0.1:10911", "{}");
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), 0);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, R_INC, R_MONO, &out), 0);
    /* bkey is the first value after "[5 fields" and the prefix: a uint64 (0xcf + 8 bytes). */
    assert_int_equal((uint8_t)out.data[5], 0xcf);
    out.data[13] ^= 1;
    size_t n;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), NSRV_GOSSIP_EDECODE);
    nsrv_buf_deinit(&out);
}

/* The encoder refuses what the decoder would refuse, and the stream stays valid. */
static void test_encoder_limits(void **state) {
    (void)state;
    gt_key_t k = gt_key_2_1();
    nsrv_gossip_pull_enc_t e;
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_pull_enc_init(&e, NONCE);
    size_t big_len = NSRV_GOSSIP_PULL_FRAME_MAX; /* plus the frame's other bytes: too big */
    char *big = nsrv_malloc(big_len + 1);
    memset(big, 'x', big_len);
    big[big_len] = '\0';
    nsrv_gossip_pull_item_t it = item("broker-a", 0, "10.0.0.1:10911", "{}");
    it.reg = (const uint8_t *)big;
    it.reg_len = big_len;
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), NSRV_ETOOBIG);
    assert_int_equal(out.len, 0);
    /* Four frames of 15 MiB fit under the 64 MiB total; the fifth does not. */
    it.reg_len = 15u << 20;
    for (int i = 0; i < 4; i++)
        assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), 0);
    size_t before = out.len;
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), NSRV_ETOOBIG);
    assert_int_equal(out.len, before);

    /* The decoder's total cap: after these 60 MiB, a 5 MiB frame is refused at its prefix. */
    nsrv_gossip_key_t key = key2();
    nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(NONCE, &key, 1);
    assert_int_equal(nsrv_gossip_pull_dec_feed(d, out.data, out.len), NSRV_AGAIN);
    const uint8_t pre[4] = {0x00, 0x50, 0x00, 0x00};
    assert_int_equal(nsrv_gossip_pull_dec_feed(d, pre, 4), NSRV_ETOOBIG);
    assert_int_equal(nsrv_gossip_pull_dec_feed(d, pre, 4), NSRV_ETOOBIG); /* sticky */
    nsrv_gossip_pull_dec_destroy(&d);

    it.reg_len = 2;
    assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it, &out), 0);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, R_INC, R_MONO, &out), 0);
    assert_true(out.len <= NSRV_GOSSIP_PULL_TOTAL_MAX);
    size_t n;
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);
    assert_int_equal(n, 5);
    nsrv_free(big);
    nsrv_buf_deinit(&out);

    /* A 16 MiB frame of zeros is malformed once complete. */
    d = nsrv_gossip_pull_dec_create(NONCE, &key, 1);
    uint8_t *chunk = nsrv_calloc(1, 1u << 20);
    const uint8_t pre16[4] = {0x01, 0x00, 0x00, 0x00};
    int rc = nsrv_gossip_pull_dec_feed(d, pre16, 4);
    assert_int_equal(rc, NSRV_AGAIN);
    for (int i = 0; i < 16 && rc == NSRV_AGAIN; i++)
        rc = nsrv_gossip_pull_dec_feed(d, chunk, 1u << 20);
    assert_int_equal(rc, NSRV_GOSSIP_EDECODE);
    nsrv_gossip_pull_dec_destroy(&d);
    nsrv_free(chunk);
}

/* Finds the end frame of a response: its offset (at the length prefix). */
static size_t end_frame_at(const nsrv_buf_t *out) {
    size_t off = 0;
    for (;;) {
        uint32_t len = nsrv_load_be32(out->data + off);
        if (off + 4 + len == out->len)
            return off;
        off += 4 + len;
    }
}

/*
 * The end frame's clock: [nil, count, src_inc, src_mono_ms, sig, key_id].
 * It is covered by the signature (a man in the middle cannot make the
 * requester's anchor tighter than the truth), and range-checked on both
 * sides; the old 4-field end frame is refused.
 */
static void test_origin_signed(void **state) {
    (void)state;
    gt_key_t k = gt_key_2_1();
    nsrv_buf_t out = NSRV_BUF_INIT;
    build(&out, 2);
    size_t end = end_frame_at(&out);
    const uint8_t *f = (const uint8_t *)out.data + end + 4;
    assert_int_equal(f[0], 0x96);  /* array of 6 */
    assert_int_equal(f[1], 0xc0);  /* nil */
    assert_int_equal(f[2], 2);     /* count */
    assert_int_equal(f[3], 0xcf);  /* src_inc, u64 */
    assert_int_equal(f[12], 0xce); /* src_mono_ms 424242, u32 */
    assert_int_equal(nsrv_load_be32(f + 13), R_MONO);
    size_t n;
    /* Any change to either clock field breaks the signature. */
    for (size_t i = 4; i < 17; i++) {
        if (i == 12)
            continue; /* the u32 marker: a type change is malformed, not mis-signed */
        out.data[end + 4 + i] ^= 0x01;
        assert_int_equal(decode_all(out.data, out.len, NONCE, &n), NSRV_GOSSIP_EBAD_SIG);
        assert_int_equal(n, 0);
        out.data[end + 4 + i] ^= 0x01;
    }
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);

    /* The encoder refuses what the decoder would, and appends nothing. */
    nsrv_gossip_pull_enc_t e;
    nsrv_buf_reset(&out);
    nsrv_gossip_pull_enc_init(&e, NONCE);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, 0, 1, &out), -EINVAL);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, NSRV_GOSSIP_TIME_MAX + 1, 1, &out),
                     -EINVAL);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, 1, NSRV_GOSSIP_TIME_MAX + 1, &out),
                     -EINVAL);
    assert_int_equal(out.len, 0);
    /* The extremes are fine: src_mono_ms 0 (right at start), both at 2^62. */
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k.sk, 1, 1, 0, &out), 0);
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);
    nsrv_buf_reset(&out);
    nsrv_gossip_pull_enc_init(&e, NONCE);
    assert_int_equal(
        nsrv_gossip_pull_enc_finish(&e, k.sk, 1, NSRV_GOSSIP_TIME_MAX, NSRV_GOSSIP_TIME_MAX, &out),
        0);
    assert_int_equal(decode_all(out.data, out.len, NONCE, &n), 0);

    /* Hand-made end frames (no valid signature needed: the ranges fail first). */
    uint8_t sig64[64] = {0};
    struct {
        uint8_t pre[16];
        size_t len;
    } bad[] = {
        {{0x96, 0xc0, 0x00, 0x00, 0x01}, 5}, /* src_inc 0 */
        {{0x96, 0xc0, 0x00, 0xff, 0x01}, 5}, /* src_inc -1 */
        {{0x96, 0xc0, 0x00, 0x01, 0xcf, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01},
         13},                                /* src_mono_ms 2^62 + 1 */
        {{0x96, 0xc0, 0x00, 0x01, 0xc0}, 5}, /* src_mono_ms nil */
        {{0x94, 0xc0, 0x00}, 3},             /* the version-1 4-field layout */
        {{0x97, 0xc0, 0x00, 0x01, 0x01}, 5}, /* 7 fields */
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        nsrv_buf_t b = NSRV_BUF_INIT;
        nsrv_buf_append_be32(&b, 0);
        nsrv_buf_append(&b, bad[i].pre, bad[i].len);
        if (bad[i].pre[0] != 0x97) {
            const uint8_t hdr[2] = {0xc4, 64};
            nsrv_buf_append(&b, hdr, 2);
            nsrv_buf_append(&b, sig64, 64);
            nsrv_buf_append(&b, "\x01", 1);
        }
        nsrv_buf_put_be32_at(&b, 0, (uint32_t)(b.len - 4));
        assert_int_equal(decode_all(b.data, b.len, NONCE, &n), NSRV_GOSSIP_EDECODE);
        nsrv_buf_deinit(&b);
    }
    nsrv_buf_deinit(&out);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_roundtrip_chunked),
               cmocka_unit_test(test_signature_binding),
               cmocka_unit_test(test_truncation_and_frames), cmocka_unit_test(test_bkey_must_match),
               cmocka_unit_test(test_encoder_limits), cmocka_unit_test(test_origin_signed))
