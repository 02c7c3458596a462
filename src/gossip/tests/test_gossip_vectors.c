/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/vectors/gossip: every vector decodes to the documented fields,
 * re-encodes byte for byte, carries a valid signature, and passes the
 * receive pipeline. The vectors come from an independent Python encoder.
 */
#include "gossip_test.h"
#include "testlib.h"

static const uint64_t K_A0 = UINT64_C(0xf982bc60226fe098); /* broker-a id 0 */
static const uint64_t K_A1 = UINT64_C(0x66e8307966ae5b8e); /* broker-a id 1 */
static const uint64_t K_B0 = UINT64_C(0xc4f37f94e1aaf3a7); /* broker-b id 0 */

/* Decodes a vector, checks the common envelope, re-encodes it identically. */
static void load(const char *name, nsrv_arena_t *a, nsrv_gossip_msg_t *m, uint8_t **bytes,
                 size_t *len) {
    *bytes = gt_read_hex(name, len);
    assert_int_equal(nsrv_gossip_msg_decode(*bytes, *len, a, m), 0);
    assert_int_equal(m->ver, 1);
    assert_true(nsrv_str_eq_c(m->cluster, GT_CLUSTER));
    assert_int_equal(m->src, 1);
    assert_int_equal(m->src_inc, GT_INC);
    assert_int_equal(m->src_mono_ms, 123456);
    assert_int_equal(m->wall_ms, (uint64_t)GT_WALL);
    assert_int_equal(m->signed_len, *len - 64);

    gt_key_t k = m->key_id == 2 ? gt_key_1_2() : gt_key_1_1();
    assert_int_equal(nsrv_seal_verify(k.pk, *bytes, m->signed_len, m->sig), 0);
    nsrv_buf_t out = NSRV_BUF_INIT;
    assert_int_equal(nsrv_gossip_msg_encode(m, k.sk, &out), 0);
    assert_int_equal(out.len, *len);
    assert_memory_equal(out.data, *bytes, *len);
    nsrv_buf_deinit(&out);
}

static void test_keys_match_file(void **state) {
    (void)state;
    /* keys.txt: the public keys derived from the seeds. */
    char path[512];
    snprintf(path, sizeof path, "%s/keys.txt", NSRV_GOSSIP_VECTORS);
    char *text;
    size_t len;
    assert_int_equal(nsrv_file_read_all(path, 1 << 16, &text, &len), 0);
    gt_key_t ks[3] = {gt_key_1_1(), gt_key_2_1(), gt_key_1_2()};
    for (int i = 0; i < 3; i++) {
        char b64[64], hex[65];
        nsrv_seal_b64_encode(ks[i].pk, 32, b64, sizeof b64);
        for (int j = 0; j < 32; j++)
            snprintf(hex + 2 * j, 3, "%02x", ks[i].pk[j]);
        assert_non_null(strstr(text, hex));
        assert_non_null(strstr(text, b64));
    }
    nsrv_free(text);
}

static void test_bkey_file(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/bkey.txt", NSRV_GOSSIP_VECTORS);
    char *text;
    size_t len;
    assert_int_equal(nsrv_file_read_all(path, 1 << 16, &text, &len), 0);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        char *f[5];
        char *p = line;
        for (int i = 0; i < 5; i++) {
            f[i] = p;
            char *bar = strchr(p, '|');
            if (i < 4) {
                assert_non_null(bar);
                *bar = '\0';
                p = bar + 1;
            }
        }
        int64_t id = strtoll(f[2], NULL, 10);
        uint64_t want = strtoull(f[4], NULL, 16);
        assert_int_equal(nsrv_gossip_bkey(nsrv_str_c(f[0]), nsrv_str_c(f[1]), id, nsrv_str_c(f[3])),
                         want);
        lines++;
    }
    assert_int_equal(lines, 5);
    nsrv_free(text);
    assert_int_equal(nsrv_gossip_bkey(NSRV_STR_LIT("DefaultCluster"), NSRV_STR_LIT("broker-a"), 0,
                                      NSRV_STR_LIT("10.120.33.107:10911")),
                     K_A0);
}

static void test_digest_full(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    uint8_t *b;
    size_t len;
    load("digest_full.hex", &a, &m, &b, &len);
    assert_int_equal(m.type, NSRV_GOSSIP_DIGEST_FULL);
    assert_int_equal(m.seq, 1);
    assert_int_equal(m.dst, 2);
    assert_int_equal(m.key_id, 1);
    assert_int_equal(m.body.full.round, 7);
    assert_int_equal(m.body.full.part, 0);
    assert_int_equal(m.body.full.nparts, 1);
    assert_int_equal(m.body.full.key_lo, 0);
    assert_int_equal(m.body.full.key_hi, UINT64_MAX);
    assert_int_equal(m.body.full.n, 3);
    const nsrv_gossip_entry_t *e = m.body.full.entries;
    assert_int_equal(e[0].bkey, K_A1);
    assert_int_equal(e[0].dv.counter, 7);
    assert_int_equal(e[0].dv.timestamp, 1717999999000);
    assert_int_equal(e[0].age_ms, 1500);
    assert_int_equal(e[1].bkey, K_B0);
    assert_int_equal(e[1].dv.counter, 12);
    assert_int_equal(e[1].dv.timestamp, 1717999000123);
    assert_int_equal(e[1].dv.state_version, 2);
    assert_int_equal(e[1].age_ms, 29000);
    assert_int_equal(e[2].bkey, K_A0);
    assert_int_equal(e[2].age_ms, 0);
    assert_int_equal(e[2].flags, 0);
    nsrv_free(b);

    load("digest_full_part.hex", &a, &m, &b, &len);
    assert_int_equal(m.body.full.round, 8);
    assert_int_equal(m.body.full.part, 1);
    assert_int_equal(m.body.full.nparts, 3);
    assert_int_equal(m.body.full.key_lo, K_A1 + 1);
    assert_int_equal(m.body.full.key_hi, K_A0);
    assert_int_equal(m.body.full.n, 2);
    nsrv_free(b);
    nsrv_arena_deinit(&a);
}

static void test_delta_sync_tomb(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    uint8_t *b;
    size_t len;
    load("digest_delta.hex", &a, &m, &b, &len);
    assert_int_equal(m.type, NSRV_GOSSIP_DIGEST_DELTA);
    assert_int_equal(m.body.delta.n, 1);
    assert_int_equal(m.body.delta.entries[0].bkey, K_B0);
    assert_int_equal(m.body.delta.entries[0].dv.counter, -1);
    assert_int_equal(m.body.delta.entries[0].dv.state_version, 300);
    nsrv_free(b);

    load("sync_req.hex", &a, &m, &b, &len);
    assert_int_equal(m.type, NSRV_GOSSIP_SYNC_REQ);
    assert_int_equal(m.dst, 255);
    nsrv_free(b);

    load("sync_req_key2.hex", &a, &m, &b, &len);
    assert_int_equal(m.key_id, 2);
    nsrv_free(b);

    load("tombstone.hex", &a, &m, &b, &len);
    assert_int_equal(m.type, NSRV_GOSSIP_TOMBSTONE);
    assert_int_equal(m.body.tomb.n, 2);
    assert_int_equal(m.body.tomb.tombs[0].bkey, K_A1);
    assert_int_equal(m.body.tomb.tombs[0].reason, NSRV_GOSSIP_TOMB_UNREGISTER);
    assert_int_equal(m.body.tomb.tombs[0].age_ms, 250);
    assert_int_equal(m.body.tomb.tombs[0].dv.counter, 7);
    assert_int_equal(m.body.tomb.tombs[1].bkey, K_A0);
    assert_int_equal(m.body.tomb.tombs[1].reason, NSRV_GOSSIP_TOMB_EVICT);
    assert_int_equal(m.body.tomb.tombs[1].age_ms, 120001);
    assert_int_equal(m.body.tomb.tombs[1].dv.state_version, 1);
    nsrv_free(b);
    nsrv_arena_deinit(&a);
}

static void test_pull_req(void **state) {
    (void)state;
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    nsrv_gossip_msg_t m;
    uint8_t *b;
    size_t len;
    load("pull_req.hex", &a, &m, &b, &len);
    assert_int_equal(m.type, NSRV_GOSSIP_PULL_REQ);
    for (int i = 0; i < 16; i++)
        assert_int_equal(m.body.pull.nonce[i], 0xa0 + i);
    assert_int_equal(m.body.pull.n, 2);
    assert_int_equal(m.body.pull.keys[0], K_A1);
    assert_int_equal(m.body.pull.keys[1], K_A0);
    nsrv_free(b);
    load("pull_req_all.hex", &a, &m, &b, &len);
    assert_int_equal(m.body.pull.n, 0);
    nsrv_free(b);
    nsrv_arena_deinit(&a);
}

static void test_pull_resp(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = gt_read_hex("pull_resp.hex", &len);
    uint8_t nonce[16];
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(0xa0 + i);
    gt_key_t k2 = gt_key_2_1();
    nsrv_gossip_key_t key = {1, {0}};
    memcpy(key.pk, k2.pk, 32);
    nsrv_gossip_pull_dec_t *d = nsrv_gossip_pull_dec_create(nonce, &key, 1);
    assert_int_equal(nsrv_gossip_pull_dec_feed(d, b, len), 0);
    const nsrv_gossip_pull_item_t *it;
    assert_int_equal(nsrv_gossip_pull_dec_items(d, &it), 2);
    assert_int_equal(it[0].bkey, K_B0);
    assert_true(nsrv_str_eq_c(it[0].addr, "10.120.33.109:10911"));
    assert_true(nsrv_str_eq_c(it[0].name, "broker-b"));
    assert_int_equal(it[0].ha_addr.len, 0);
    assert_null(it[0].zone_name.ptr);
    assert_int_equal(it[0].acting_master, -1);
    assert_int_equal(it[0].timeout_ms, 30000);
    assert_int_equal(it[0].age_ms, 65000);
    assert_int_equal(it[0].reg_len, 2);
    assert_int_equal(it[1].bkey, K_A0);
    assert_true(nsrv_str_eq_c(it[1].ha_addr, "10.120.33.107:10912"));
    assert_true(nsrv_str_eq_c(it[1].zone_name, "zone-a"));
    assert_int_equal(it[1].acting_master, 1);
    assert_int_equal(it[1].id, 0);
    assert_int_equal(it[1].dv.counter, 7);
    assert_int_equal(it[1].dv.timestamp, 1717999999000);
    uint64_t inc, mono;
    nsrv_gossip_pull_dec_origin(d, &inc, &mono);
    assert_int_equal(inc, 1717999990000);
    assert_int_equal(mono, 987654);

    /* Re-encode: the same bytes. */
    nsrv_gossip_pull_enc_t e;
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_gossip_pull_enc_init(&e, nonce);
    for (int i = 0; i < 2; i++)
        assert_int_equal(nsrv_gossip_pull_enc_item(&e, &it[i], &out), 0);
    assert_int_equal(nsrv_gossip_pull_enc_finish(&e, k2.sk, 1, inc, mono, &out), 0);
    assert_int_equal(out.len, len);
    assert_memory_equal(out.data, b, len);
    nsrv_buf_deinit(&out);
    nsrv_gossip_pull_dec_destroy(&d);
    nsrv_free(b);
}

/* Every datagram vector passes the pipeline at node 2 (node 1 has both keys). */
static void test_vectors_pass_pipeline(void **state) {
    (void)state;
    gt_key_t k11 = gt_key_1_1(), k12 = gt_key_1_2();
    nsrv_gossip_key_t keys[2] = {{1, {0}}, {2, {0}}};
    memcpy(keys[0].pk, k11.pk, 32);
    memcpy(keys[1].pk, k12.pk, 32);
    nsrv_gossip_peer_conf_t conf = {1, "10.0.0.1:7946", keys, 2};
    nsrv_gossip_peers_t *t = nsrv_gossip_peers_create(1200);
    assert_int_equal(nsrv_gossip_peers_configure(t, &conf, 1), 0);
    struct sockaddr_in from = gt_sin("10.0.0.1", 40000);
    nsrv_arena_t a;
    nsrv_arena_init(&a, 0);
    const char *udp[] = {"digest_full.hex", "digest_full_part.hex", "digest_delta.hex",
                         "sync_req.hex",    "tombstone.hex",        "sync_req_key2.hex"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(udp); i++) {
        size_t len;
        uint8_t *b = gt_read_hex(udp[i], &len);
        nsrv_gossip_msg_t m;
        nsrv_gossip_peer_t *p = NULL;
        assert_int_equal(nsrv_gossip_peer_check(t, 2, GT_CLUSTER, b, len,
                                                (const struct sockaddr *)&from, 5000, GT_WALL, &m,
                                                &a, &p),
                         0);
        assert_ptr_equal(p, nsrv_gossip_peers_find(t, 1));
        nsrv_arena_reset(&a);
        nsrv_free(b);
    }
    const char *tcp[] = {"pull_req.hex", "pull_req_all.hex"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(tcp); i++) {
        size_t len;
        uint8_t *b = gt_read_hex(tcp[i], &len);
        nsrv_gossip_msg_t m;
        nsrv_gossip_peer_t *p = NULL;
        assert_int_equal(nsrv_gossip_peer_check_pull(t, 2, GT_CLUSTER, b, len,
                                                     (const struct sockaddr *)&from, 5000, GT_WALL,
                                                     &m, &a, &p),
                         0);
        nsrv_arena_reset(&a);
        nsrv_free(b);
    }
    nsrv_arena_deinit(&a);
    nsrv_gossip_peers_destroy(&t);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_keys_match_file), cmocka_unit_test(test_bkey_file),
               cmocka_unit_test(test_digest_full), cmocka_unit_test(test_delta_sync_tomb),
               cmocka_unit_test(test_pull_req), cmocka_unit_test(test_pull_resp),
               cmocka_unit_test(test_vectors_pass_pipeline))
