/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the registration body decoders (include/nsrv/register_body.h):
 * the documented JSON and compressed samples (proto/requests.md §2.5.1, §2.5.2), 4.9.x and
 * pre-3.0.11 shapes, form sniffing, the masked CRC, DataVersion and
 * queueDatas decoding, encoder round trips and hostile inputs.
 * The golden bodies here are also stored in proto/vectors/register/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <zlib.h>

#include "nsrv/common.h"
#include "nsrv/register_body.h"
#include "testlib.h"

static nsrv_arena_t arena;

static int setup(void **state) {
    (void)state;
    nsrv_arena_init(&arena, 64 * 1024);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv_arena_deinit(&arena);
    return 0;
}

/* proto/requests.md §2.5.1, verbatim. */
static const char SAMPLE_5X_JSON[] =
    "{\"filterServerList\":[],\n"
    " \"topicConfigSerializeWrapper\":{\n"
    "   \"dataVersion\":{\"counter\":5,\"stateVersion\":0,\"timestamp\":1700000000000},\n"
    "   \"mappingDataVersion\":{\"counter\":0,\"stateVersion\":0,\"timestamp\":1700000000000},\n"
    "   \"topicConfigTable\":{\n"
    "     \"TopicTest\":{\"attributes\":{},\"order\":false,\"perm\":6,\"readQueueNums\":4,\n"
    "                  \"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"TopicTest\",\n"
    "                  \"topicSysFlag\":0,\"writeQueueNums\":4}},\n"
    "   \"topicQueueMappingDetailMap\":{},\n"
    "   \"topicQueueMappingInfoMap\":{\n"
    "     \"TopicTest\":{\"bname\":\"broker-a\",\"currIdMap\":{0:0},\"dirty\":false,\"epoch\":3,\n"
    "                  \"scope\":\"__global__\",\"topic\":\"TopicTest\",\"totalQueues\":8}}}}";

/* A 4.9.x broker: no stateVersion, attributes or mapping fields. */
static const char SAMPLE_49X_JSON[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":2,"
    "\"timestamp\":1600000000000},\"topicConfigTable\":{\"%RETRY%please_rename\":{\"order\":false,"
    "\"perm\":6,\"readQueueNums\":1,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"%RETRY%"
    "please_rename\",\"topicSysFlag\":0,\"writeQueueNums\":1},\"TopicB\":{\"order\":true,\"perm\":"
    "7,\"readQueueNums\":8,\"topicFilterType\":\"MULTI_TAG\",\"topicName\":\"TopicB\","
    "\"topicSysFlag\":1,\"writeQueueNums\":2}}}}";

/* A pre-V3_0_11 body: the bare TopicConfigSerializeWrapper. */
static const char SAMPLE_BARE_WRAPPER[] =
    "{\"dataVersion\":{\"counter\":9,\"timestamp\":12345},\"topicConfigTable\":{\"OldTopic\":"
    "{\"perm\":4,\"readQueueNums\":2,\"topicName\":\"OldTopic\",\"writeQueueNums\":3}}}";

static void decode_ok(const void *body, size_t len, int32_t version, bool flag,
                      nsrv_register_body_t *out) {
    char err[256] = "";
    int rc = nsrv_register_body_decode(body, len, version, flag, &arena, out, err, sizeof err);
    if (rc != 0)
        print_error("decode failed: %s\n", err);
    assert_int_equal(rc, 0);
}

static void decode_bad(const void *body, size_t len, int32_t version, int want_rc) {
    char err[256] = "";
    nsrv_register_body_t out;
    memset(&out, 0x5A, sizeof out);
    int rc = nsrv_register_body_decode(body, len, version, false, &arena, &out, err, sizeof err);
    assert_int_equal(rc, want_rc);
    assert_true(strncmp(err, "Failed to decode RegisterBrokerBody: ", 37) == 0);
    assert_true(strlen(err) > 37);
    /* out is written only on success */
    assert_int_equal(((unsigned char *)&out)[0], 0x5A);
}

static void assert_topic(const nsrv_topic_config_t *t, const char *name, int r, int w, int perm,
                         int sys) {
    assert_string_equal(t->topic_name, name);
    assert_int_equal(t->read_queue_nums, r);
    assert_int_equal(t->write_queue_nums, w);
    assert_int_equal(t->perm, perm);
    assert_int_equal(t->topic_sys_flag, sys);
}

static void assert_sample_mapping(const nsrv_mapping_info_t *m) {
    assert_string_equal(m->topic, "TopicTest");
    assert_string_equal(m->bname, "broker-a");
    assert_non_null(m->scope);
    assert_string_equal(m->scope, "__global__");
    assert_int_equal(m->epoch, 3);
    assert_int_equal(m->total_queues, 8);
    assert_false(m->dirty);
    assert_int_equal(m->n_curr_id, 1);
    assert_int_equal(m->curr_id_map[0].key, 0);
    assert_int_equal(m->curr_id_map[0].val, 0);
}

/* ---- inflated-stream builder (independent of the encoder under test) ---- */

static void put_be32(nsrv_buf_t *b, uint32_t v) {
    nsrv_buf_append_be32(b, v);
}

static void put_item(nsrv_buf_t *b, const char *s) {
    put_be32(b, (uint32_t)strlen(s));
    nsrv_buf_append_c(b, s);
}

/* deflate with zlib compress2 at level 9, as Java's Deflater(BEST_COMPRESSION). */
static void zlib_pack(const nsrv_buf_t *raw, nsrv_buf_t *out) {
    uLongf n = compressBound(raw->len);
    nsrv_buf_reserve(out, n);
    assert_int_equal(compress2((Bytef *)out->data, &n, (const Bytef *)raw->data, raw->len, 9),
                     Z_OK);
    out->len = n;
}

static const char MAPPING_JSON[] =
    "{\"bname\":\"broker-a\",\"currIdMap\":{0:0},\"dirty\":false,\"epoch\":3,\"scope\":"
    "\"__global__\",\"topic\":\"TopicTest\",\"totalQueues\":8}";

/* The observed inflated payload of proto/requests.md §2.5.2, byte for byte. */
static void build_observed_479(nsrv_buf_t *raw) {
    static const char dv[] = "{\"counter\":0,\"stateVersion\":0,\"timestamp\":1}";
    static const char topic[] = "TopicTest 4 4 6 SINGLE_TAG {}";
    nsrv_buf_append(raw, "\x00\x00\x00\x2c", 4);
    nsrv_buf_append(raw, dv, sizeof dv - 1);
    nsrv_buf_append(raw, "\x00\x00\x00\x01", 4);
    nsrv_buf_append(raw, "\x00\x00\x00\x1d", 4);
    nsrv_buf_append(raw, topic, sizeof topic - 1);
    nsrv_buf_append(raw, "\x00\x00\x00\x02[]", 6);
    nsrv_buf_append(raw, "\x00\x00\x00\x01", 4);
    nsrv_buf_append(raw, "\x00\x00\x00\x77", 4);
    nsrv_buf_append(raw, MAPPING_JSON, sizeof MAPPING_JSON - 1);
    assert_int_equal(sizeof dv - 1, 0x2c);
    assert_int_equal(sizeof topic - 1, 0x1d);
    assert_int_equal(sizeof MAPPING_JSON - 1, 0x77);
}

/* ---- CRC ---- */

/* Reflected CRC-32 (poly 0xEDB88320), bit by bit: independent of zlib. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void test_crc32_masked(void **state) {
    (void)state;
    /* The CRC-32 check value: 0xCBF43926 has bit 31 set, so masking must clear it. */
    const char *check = "123456789";
    assert_int_equal(crc32_bitwise((const uint8_t *)check, 9), 0xCBF43926u);
    assert_int_equal(nsrv_body_crc32(check, 9), 0x4BF43926u);
    assert_int_equal(nsrv_body_crc32(NULL, 0), 0);
    /* Against the bitwise reference on a pseudo-random buffer and on the JSON sample. */
    uint8_t buf[4099];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t n = 0; n < sizeof buf; n += 97) {
        uint32_t c = nsrv_body_crc32(buf, n);
        assert_int_equal(c, crc32_bitwise(buf, n) & 0x7FFFFFFFu);
        assert_int_equal(c & 0x80000000u, 0);
    }
    assert_int_equal(nsrv_body_crc32(SAMPLE_5X_JSON, strlen(SAMPLE_5X_JSON)),
                     crc32_bitwise((const uint8_t *)SAMPLE_5X_JSON, strlen(SAMPLE_5X_JSON)) &
                         0x7FFFFFFFu);
}

/* ---- JSON form ---- */

static void test_json_sample_5x(void **state) {
    (void)state;
    nsrv_register_body_t b;
    decode_ok(SAMPLE_5X_JSON, strlen(SAMPLE_5X_JSON), NSRV_MQ_V5_3_3, false, &b);
    assert_int_equal(b.data_version.counter, 5);
    assert_int_equal(b.data_version.state_version, 0);
    assert_int_equal(b.data_version.timestamp, 1700000000000LL);
    assert_int_equal(b.n_topics, 1);
    assert_topic(&b.topics[0], "TopicTest", 4, 4, 6, 0);
    assert_true(b.has_filter_servers);
    assert_int_equal(b.n_filter_servers, 0);
    assert_int_equal(b.n_mappings, 1);
    assert_sample_mapping(&b.mappings[0]);
}

static void test_json_sample_49x(void **state) {
    (void)state;
    nsrv_register_body_t b;
    decode_ok(SAMPLE_49X_JSON, strlen(SAMPLE_49X_JSON), NSRV_MQ_V4_9_7, false, &b);
    assert_int_equal(b.data_version.counter, 2);
    assert_int_equal(b.data_version.state_version, 0);
    assert_int_equal(b.data_version.timestamp, 1600000000000LL);
    assert_int_equal(b.n_topics, 2);
    assert_topic(&b.topics[0], "%RETRY%please_rename", 1, 1, 6, 0);
    assert_topic(&b.topics[1], "TopicB", 8, 2, 7, 1);
    assert_true(b.has_filter_servers);
    assert_int_equal(b.n_mappings, 0);
    assert_null(b.mappings);
}

static void test_json_defaults_and_names(void **state) {
    (void)state;
    /* The name is topicName, not the key; the key is only a fallback. Missing
     * fields take 16/16/6/0; numeric strings and nulls are accepted; unknown
     * keys, whitespace and quoted currIdMap keys too. */
    const char *body =
        "  \n{ \"topicConfigSerializeWrapper\" : { \"topicConfigTable\": {"
        " \"key1\": {\"topicName\":\"Real1\",\"readQueueNums\":\"8\",\"perm\":null},"
        " \"NoName\": {\"writeQueueNums\":2, \"topicSysFlag\":\"3\", \"extra\":[1,{}]},"
        " \"Empty\": {} },"
        " \"dataVersion\": {\"counter\":\"7\",\"timestamp\":9223372036854775807},"
        " \"topicQueueMappingInfoMap\": {\"MapKey\": {\"bname\":\"b\",\"topic\":\"Other\","
        "   \"currIdMap\":{\"0\":0, 1:3, -2:\"4\"},\"dirty\":\"true\",\"epoch\":\"11\"}},"
        " \"someFutureField\": {\"x\":1}},"
        " \"filterServerList\": [\"1.1.1.1:1\", null, \"2.2.2.2:2\"] }\n";
    nsrv_register_body_t b;
    decode_ok(body, strlen(body), NSRV_MQ_V5_3_3, false, &b);
    assert_int_equal(b.n_topics, 3);
    assert_topic(&b.topics[0], "Real1", 8, 16, 6, 0);
    assert_topic(&b.topics[1], "NoName", 16, 2, 6, 3);
    assert_topic(&b.topics[2], "Empty", 16, 16, 6, 0);
    assert_int_equal(b.data_version.counter, 7);
    assert_int_equal(b.data_version.timestamp, INT64_MAX);
    assert_int_equal(b.n_mappings, 1);
    const nsrv_mapping_info_t *m = &b.mappings[0];
    assert_string_equal(m->topic, "MapKey"); /* Java stores it under the map key */
    assert_string_equal(m->bname, "b");
    assert_null(m->scope);
    assert_true(m->dirty);
    assert_int_equal(m->epoch, 11);
    assert_int_equal(m->total_queues, 0);
    assert_int_equal(m->n_curr_id, 3);
    assert_int_equal(m->curr_id_map[1].key, 1);
    assert_int_equal(m->curr_id_map[1].val, 3);
    assert_int_equal(m->curr_id_map[2].key, -2);
    assert_int_equal(m->curr_id_map[2].val, 4);
    assert_true(b.has_filter_servers);
    assert_int_equal(b.n_filter_servers, 2);
    assert_string_equal(b.filter_servers[0], "1.1.1.1:1");
    assert_string_equal(b.filter_servers[1], "2.2.2.2:2");

    /* Absent and null parts: no filter list, zero DataVersion, no topics. */
    const char *bare = "{\"filterServerList\":null,\"topicConfigSerializeWrapper\":"
                       "{\"dataVersion\":null,\"topicConfigTable\":null}}";
    decode_ok(bare, strlen(bare), NSRV_MQ_V5_3_3, false, &b);
    assert_false(b.has_filter_servers);
    assert_int_equal(b.n_topics, 0);
    assert_int_equal(b.data_version.timestamp, 0);
    decode_ok("{}", 2, NSRV_MQ_V5_3_3, false, &b);
    assert_false(b.has_filter_servers);
    assert_int_equal(b.n_topics, 0);
}

static void test_json_bare_wrapper_v36(void **state) {
    (void)state;
    nsrv_register_body_t b;
    decode_ok(SAMPLE_BARE_WRAPPER, strlen(SAMPLE_BARE_WRAPPER), 36, false, &b);
    assert_int_equal(b.data_version.counter, 9);
    assert_int_equal(b.data_version.timestamp, 12345);
    assert_int_equal(b.n_topics, 1);
    assert_topic(&b.topics[0], "OldTopic", 2, 3, 4, 0);
    assert_false(b.has_filter_servers);
    assert_int_equal(b.n_mappings, 0);
    /* From V3_0_11 (37) on the same bytes are a RegisterBrokerBody with unknown keys. */
    decode_ok(SAMPLE_BARE_WRAPPER, strlen(SAMPLE_BARE_WRAPPER), 37, false, &b);
    assert_int_equal(b.n_topics, 0);
    assert_int_equal(b.data_version.counter, 0);
}

static void test_empty_body(void **state) {
    (void)state;
    nsrv_register_body_t b;
    memset(&b, 0x77, sizeof b);
    decode_ok(NULL, 0, NSRV_MQ_V5_3_3, true, &b);
    assert_int_equal(b.data_version.counter, 0);
    assert_int_equal(b.data_version.timestamp, 0);
    assert_int_equal(b.data_version.state_version, 0);
    assert_int_equal(b.n_topics, 0);
    assert_false(b.has_filter_servers);
    assert_int_equal(b.n_mappings, 0);
}

static void test_json_encoder_matches_sample(void **state) {
    (void)state;
    nsrv_register_body_t b;
    decode_ok(SAMPLE_5X_JSON, strlen(SAMPLE_5X_JSON), NSRV_MQ_V5_3_3, false, &b);
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_register_body_encode_json(&b, &out);
    /* The sample without whitespace; mappingDataVersion, which we do not keep, is written
     * empty, as by a broker without static topics (rocketmq-rust's NameServer requires it). */
    const char *want =
        "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":5,"
        "\"stateVersion\":0,\"timestamp\":1700000000000},\"mappingDataVersion\":{\"counter\":0,"
        "\"stateVersion\":0,\"timestamp\":0},\"topicConfigTable\":{\"TopicTest\":{"
        "\"attributes\":{},\"order\":false,\"perm\":6,\"readQueueNums\":4,\"topicFilterType\":"
        "\"SINGLE_TAG\",\"topicName\":\"TopicTest\",\"topicSysFlag\":0,\"writeQueueNums\":4}},"
        "\"topicQueueMappingDetailMap\":{},\"topicQueueMappingInfoMap\":{\"TopicTest\":{"
        "\"bname\":\"broker-a\",\"currIdMap\":{0:0},\"dirty\":false,\"epoch\":3,\"scope\":"
        "\"__global__\",\"topic\":\"TopicTest\",\"totalQueues\":8}}}}";
    assert_string_equal(out.data, want);
    nsrv_buf_deinit(&out);
}

/* ---- compressed form ---- */

static nsrv_register_body_t make_body(nsrv_topic_config_t *topics, nsrv_mapping_info_t *maps,
                                      const char **filters) {
    static nsrv_int_pair_t ids[] = {{0, 0}, {1, 3}, {7, -1}};
    topics[0] = (nsrv_topic_config_t){"TopicA", 4, 4, 6, 0};
    topics[1] = (nsrv_topic_config_t){"%RETRY%g1", 1, 1, 6, 0};
    topics[2] = (nsrv_topic_config_t){"\xE4\xB8\xAD/\"x\"", 8, 16, 2, 0};
    maps[0] = (nsrv_mapping_info_t){"TopicA", "broker-a", "__global__", 5, 8, true, ids, 3};
    maps[1] = (nsrv_mapping_info_t){"TopicB", "broker-b", NULL, -1, 0, false, NULL, 0};
    filters[0] = "10.0.0.1:1";
    nsrv_register_body_t b = {{42, 1700000000123LL, 7}, topics, 3, true, filters, 1, maps, 2};
    return b;
}

static void assert_same_body(const nsrv_register_body_t *a, const nsrv_register_body_t *b,
                             bool want_mappings) {
    assert_true(nsrv_data_version_eq(&a->data_version, &b->data_version));
    assert_int_equal(a->n_topics, b->n_topics);
    for (size_t i = 0; i < a->n_topics; i++)
        assert_topic(&b->topics[i], a->topics[i].topic_name, a->topics[i].read_queue_nums,
                     a->topics[i].write_queue_nums, a->topics[i].perm, a->topics[i].topic_sys_flag);
    assert_int_equal(a->has_filter_servers, b->has_filter_servers);
    assert_int_equal(a->n_filter_servers, b->n_filter_servers);
    for (size_t i = 0; i < a->n_filter_servers; i++)
        assert_string_equal(a->filter_servers[i], b->filter_servers[i]);
    if (!want_mappings) {
        assert_int_equal(b->n_mappings, 0);
        return;
    }
    assert_int_equal(a->n_mappings, b->n_mappings);
    for (size_t i = 0; i < a->n_mappings; i++) {
        const nsrv_mapping_info_t *x = &a->mappings[i], *y = &b->mappings[i];
        assert_string_equal(x->topic, y->topic);
        assert_string_equal(x->bname, y->bname);
        if (x->scope)
            assert_string_equal(x->scope, y->scope);
        else
            assert_null(y->scope);
        assert_int_equal(x->epoch, y->epoch);
        assert_int_equal(x->total_queues, y->total_queues);
        assert_int_equal(x->dirty, y->dirty);
        assert_int_equal(x->n_curr_id, y->n_curr_id);
        for (size_t k = 0; k < x->n_curr_id; k++) {
            assert_int_equal(x->curr_id_map[k].key, y->curr_id_map[k].key);
            assert_int_equal(x->curr_id_map[k].val, y->curr_id_map[k].val);
        }
    }
}

static void test_encoders_round_trip(void **state) {
    (void)state;
    nsrv_topic_config_t topics[3];
    nsrv_mapping_info_t maps[2];
    const char *filters[1];
    nsrv_register_body_t src = make_body(topics, maps, filters);
    nsrv_register_body_t b;

    nsrv_buf_t z = NSRV_BUF_INIT;
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V5_3_3, &z), 0);
    assert_int_equal((uint8_t)z.data[0], 0x78);
    assert_int_equal((uint8_t)z.data[1], 0xDA);
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, true, &b);
    assert_same_body(&src, &b, true);
    /* 5.x brokers label it compressed=false; the bytes decide. */
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, false, &b);
    assert_same_body(&src, &b, true);
    /* A 4.9.x-version request does not read the mapping section. */
    decode_ok(z.data, z.len, NSRV_MQ_V4_9_7, true, &b);
    assert_same_body(&src, &b, false);

    /* Encoded for 4.9.7: no mapping section; a 5.3.3 reader tolerates its absence. */
    nsrv_buf_reset(&z);
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V4_9_7, &z), 0);
    decode_ok(z.data, z.len, NSRV_MQ_V4_9_7, true, &b);
    assert_same_body(&src, &b, false);
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, true, &b);
    assert_same_body(&src, &b, false);

    /* topicSysFlag is not carried by the text form. */
    topics[0].topic_sys_flag = 1;
    nsrv_buf_reset(&z);
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V5_3_3, &z), 0);
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, true, &b);
    assert_int_equal(b.topics[0].topic_sys_flag, 0);

    /* JSON encoder round trip keeps topicSysFlag too. */
    nsrv_buf_t j = NSRV_BUF_INIT;
    nsrv_register_body_encode_json(&src, &j);
    decode_ok(j.data, j.len, NSRV_MQ_V5_3_3, false, &b);
    assert_same_body(&src, &b, true);
    src.has_filter_servers = false;
    src.n_filter_servers = 0;
    nsrv_buf_reset(&j);
    nsrv_register_body_encode_json(&src, &j);
    decode_ok(j.data, j.len, NSRV_MQ_V5_3_3, false, &b);
    assert_same_body(&src, &b, true);

    /* A name with a space cannot be written in the text form. */
    topics[1].topic_name = "has space";
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V5_3_3, &z), -EINVAL);
    nsrv_buf_deinit(&j);
    nsrv_buf_deinit(&z);
}

static void test_compressed_observed_479(void **state) {
    (void)state;
    nsrv_buf_t raw = NSRV_BUF_INIT, z = NSRV_BUF_INIT;
    build_observed_479(&raw);
    zlib_pack(&raw, &z);
    for (int flag = 0; flag < 2; flag++) {
        nsrv_register_body_t b;
        decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, flag, &b);
        assert_int_equal(b.data_version.counter, 0);
        assert_int_equal(b.data_version.state_version, 0);
        assert_int_equal(b.data_version.timestamp, 1);
        assert_int_equal(b.n_topics, 1);
        assert_topic(&b.topics[0], "TopicTest", 4, 4, 6, 0);
        assert_true(b.has_filter_servers);
        assert_int_equal(b.n_filter_servers, 0);
        assert_int_equal(b.n_mappings, 1);
        assert_sample_mapping(&b.mappings[0]);
    }
    nsrv_buf_deinit(&raw);
    nsrv_buf_deinit(&z);
}

static void test_compressed_observed_407(void **state) {
    (void)state;
    /* 4.9.x: DataVersion without stateVersion, 5-field text, no mapping section. */
    nsrv_buf_t raw = NSRV_BUF_INIT, z = NSRV_BUF_INIT;
    put_item(&raw, "{\"counter\":3,\"timestamp\":1700000000000}");
    put_be32(&raw, 2);
    put_item(&raw, "TopicTest 4 4 6 SINGLE_TAG");
    put_item(&raw, "Tagged 2 1 7 MULTI_TAG");
    put_item(&raw, "[\"1.2.3.4:5\"]");
    zlib_pack(&raw, &z);
    nsrv_register_body_t b;
    decode_ok(z.data, z.len, NSRV_MQ_V4_9_7, true, &b);
    assert_int_equal(b.data_version.counter, 3);
    assert_int_equal(b.data_version.state_version, 0);
    assert_int_equal(b.data_version.timestamp, 1700000000000LL);
    assert_int_equal(b.n_topics, 2);
    assert_topic(&b.topics[0], "TopicTest", 4, 4, 6, 0);
    assert_topic(&b.topics[1], "Tagged", 2, 1, 7, 0);
    assert_true(b.has_filter_servers);
    assert_int_equal(b.n_filter_servers, 1);
    assert_string_equal(b.filter_servers[0], "1.2.3.4:5");
    assert_int_equal(b.n_mappings, 0);
    /* The same bytes from a 5.x-version sender: the missing section is tolerated. */
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, false, &b);
    assert_int_equal(b.n_topics, 2);
    assert_int_equal(b.n_mappings, 0);
    nsrv_buf_deinit(&raw);
    nsrv_buf_deinit(&z);
}

static void test_compressed_text_form_edges(void **state) {
    (void)state;
    /* Attributes with spaces (Java ignores the sixth part's parse error), a
     * trailing space, a "+" sign, an empty name, and a bad filter-list JSON
     * (Java logs it and keeps an empty list). */
    const char *texts[] = {"A 1 2 6 SINGLE_TAG {\"k\": \"v w\"}", "B 3 4 6 SINGLE_TAG ",
                           "C +5 -1 6 MULTI_TAG", " 1 1 6 SINGLE_TAG"};
    nsrv_buf_t raw = NSRV_BUF_INIT, z = NSRV_BUF_INIT;
    put_item(&raw, "{\"counter\":1}");
    put_be32(&raw, 4);
    for (size_t i = 0; i < 4; i++)
        put_item(&raw, texts[i]);
    put_item(&raw, "not json");
    put_be32(&raw, 0); /* zero mappings */
    nsrv_buf_append_c(&raw, "trailing bytes are ignored");
    zlib_pack(&raw, &z);
    nsrv_register_body_t b;
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, true, &b);
    assert_int_equal(b.n_topics, 4);
    assert_topic(&b.topics[0], "A", 1, 2, 6, 0);
    assert_topic(&b.topics[1], "B", 3, 4, 6, 0);
    assert_topic(&b.topics[2], "C", 5, -1, 6, 0);
    assert_topic(&b.topics[3], "", 1, 1, 6, 0);
    assert_true(b.has_filter_servers);
    assert_int_equal(b.n_filter_servers, 0);
    assert_int_equal(b.n_mappings, 0);

    /* The shortest valid topic text and mapping info, last in the stream:
     * the count bounds (derived from these minimal sizes) must accept them. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 1);
    put_item(&raw, " 0 0 0 MULTI_TAG");
    put_item(&raw, "[]");
    put_be32(&raw, 1);
    put_item(&raw, "{topic:0,bname:0}");
    nsrv_buf_reset(&z);
    zlib_pack(&raw, &z);
    decode_ok(z.data, z.len, NSRV_MQ_V5_3_3, true, &b);
    assert_int_equal(b.n_topics, 1);
    assert_topic(&b.topics[0], "", 0, 0, 0, 0);
    assert_int_equal(b.n_mappings, 1);
    assert_string_equal(b.mappings[0].topic, "0");
    assert_string_equal(b.mappings[0].bname, "0");

    /* "null" filter list: no list at all. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 0);
    put_item(&raw, "null");
    nsrv_buf_reset(&z);
    zlib_pack(&raw, &z);
    decode_ok(z.data, z.len, NSRV_MQ_V4_9_7, true, &b);
    assert_false(b.has_filter_servers);
    nsrv_buf_deinit(&raw);
    nsrv_buf_deinit(&z);
}

/* ---- errors ---- */

/* Packs raw and expects a decode error. */
static void compressed_bad(const nsrv_buf_t *raw, int32_t version) {
    nsrv_buf_t z = NSRV_BUF_INIT;
    zlib_pack(raw, &z);
    decode_bad(z.data, z.len, version, NSRV_EBODY);
    nsrv_buf_deinit(&z);
}

static void one_topic_stream(nsrv_buf_t *raw, const char *topic_text) {
    nsrv_buf_reset(raw);
    put_item(raw, "{\"counter\":1}");
    put_be32(raw, 1);
    put_item(raw, topic_text);
    put_item(raw, "[]");
}

static void test_compressed_errors(void **state) {
    (void)state;
    nsrv_buf_t raw = NSRV_BUF_INIT, z = NSRV_BUF_INIT;

    /* Truncated zlib stream, at several cut points. */
    build_observed_479(&raw);
    zlib_pack(&raw, &z);
    for (size_t cut = 1; cut < z.len; cut += (cut < 8 ? 1 : 9))
        decode_bad(z.data, z.len - cut, NSRV_MQ_V5_3_3, NSRV_EBODY);
    /* Corrupted deflate data and a bad Adler-32 trailer. */
    z.data[z.len - 1] ^= 0x55;
    decode_bad(z.data, z.len, NSRV_MQ_V5_3_3, NSRV_EBODY);
    decode_bad("\x78\xDA\xFF\xFF\xFF\xFF", 6, NSRV_MQ_V5_3_3, NSRV_EBODY);
    /* A zlib header asking for a preset dictionary (FDICT). */
    decode_bad("\x78\xBB\x00\x00\x00\x01", 6, NSRV_MQ_V5_3_3, NSRV_EBODY);

    /* Item lengths: past the end, negative, and a short length word. */
    nsrv_buf_reset(&raw);
    put_be32(&raw, 100);
    nsrv_buf_append_c(&raw, "{\"counter\":1}");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    nsrv_buf_reset(&raw);
    put_be32(&raw, 0xFFFFFFFFu);
    nsrv_buf_append_c(&raw, "{}");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    nsrv_buf_reset(&raw);
    nsrv_buf_append(&raw, "\x00\x00", 2);
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 1);
    put_be32(&raw, 0x80000000u); /* negative topic length */
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);

    /* Topic counts: huge, negative, and one more than present. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 0x7FFFFFFF);
    put_item(&raw, "A 1 1 6 SINGLE_TAG");
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 0xFFFFFFFEu);
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 2);
    put_item(&raw, "A 1 1 6 SINGLE_TAG");
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V4_9_7);
    /* Five zero-length topic items: present, but too short to be topics. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 5);
    for (int i = 0; i < 5; i++)
        put_be32(&raw, 0);
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V4_9_7);
    /* Stream ends before the filter list. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{}");
    put_be32(&raw, 0);
    compressed_bad(&raw, NSRV_MQ_V4_9_7);

    /* TopicConfig text: too few parts, non-numeric or overflowing ints, bad filter type. */
    const char *bad_texts[] = {"TopicTest 4 4 6",
                               "TopicTest",
                               "",
                               "TopicTest four 4 6 SINGLE_TAG {}",
                               "TopicTest 4 4x 6 SINGLE_TAG",
                               "TopicTest 4 4 6.0 SINGLE_TAG",
                               "TopicTest 4294967296 4 6 SINGLE_TAG",
                               "TopicTest - 4 6 SINGLE_TAG",
                               "TopicTest  4 4 6 SINGLE_TAG",
                               "TopicTest 4 4 6 single_tag",
                               "TopicTest 4 4 6  {}"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad_texts); i++) {
        one_topic_stream(&raw, bad_texts[i]);
        compressed_bad(&raw, NSRV_MQ_V4_9_7);
    }

    /* DataVersion that is not JSON, or not an object. */
    nsrv_buf_reset(&raw);
    put_item(&raw, "{counter");
    put_be32(&raw, 0);
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V4_9_7);
    nsrv_buf_reset(&raw);
    put_item(&raw, "[1]");
    put_be32(&raw, 0);
    put_item(&raw, "[]");
    compressed_bad(&raw, NSRV_MQ_V4_9_7);

    /* Mapping section: partial count word, count past end, info without topic or bname. */
    one_topic_stream(&raw, "A 1 1 6 SINGLE_TAG");
    nsrv_buf_append(&raw, "\x00\x00", 2);
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    one_topic_stream(&raw, "A 1 1 6 SINGLE_TAG");
    put_be32(&raw, 3);
    put_item(&raw, MAPPING_JSON);
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    one_topic_stream(&raw, "A 1 1 6 SINGLE_TAG");
    put_be32(&raw, 1);
    put_item(&raw, "{\"bname\":\"b\",\"currIdMap\":{}}");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    one_topic_stream(&raw, "A 1 1 6 SINGLE_TAG");
    put_be32(&raw, 1);
    put_item(&raw, "{\"topic\":\"T\"}");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);
    one_topic_stream(&raw, "A 1 1 6 SINGLE_TAG");
    put_be32(&raw, 1);
    put_item(&raw, "{\"topic\":\"T\",\"bname\":\"b\",\"currIdMap\":{x:1}}");
    compressed_bad(&raw, NSRV_MQ_V5_3_3);

    nsrv_buf_deinit(&raw);
    nsrv_buf_deinit(&z);
}

static void test_zlib_bomb_capped(void **state) {
    (void)state;
    /* Deflate NSRV_REGISTER_BODY_MAX_INFLATED + 1 MiB of zeros, streamed. */
    static uint8_t zeros[1 << 20];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit(&zs, 9), Z_OK);
    nsrv_buf_t z = NSRV_BUF_INIT;
    size_t chunks = NSRV_REGISTER_BODY_MAX_INFLATED / sizeof zeros + 1;
    uint8_t out[1 << 16];
    for (size_t i = 0; i <= chunks; i++) {
        zs.next_in = zeros;
        zs.avail_in = sizeof zeros;
        int flush = i == chunks ? Z_FINISH : Z_NO_FLUSH;
        do {
            zs.next_out = out;
            zs.avail_out = sizeof out;
            deflate(&zs, flush);
            nsrv_buf_append(&z, out, sizeof out - zs.avail_out);
        } while (zs.avail_out == 0);
    }
    deflateEnd(&zs);
    assert_true(z.len < 1024 * 1024);
    decode_bad(z.data, z.len, NSRV_MQ_V5_3_3, NSRV_ETOOBIG);
    nsrv_buf_deinit(&z);
}

static void test_json_errors(void **state) {
    (void)state;
    const char *bad[] = {
        "[{}]", /* not an object */
        "null",
        "hello",
        "\x01\x02\x03garbage",
        "   ",
        "{",
        "{\"topicConfigSerializeWrapper\":5}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":[]}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":null}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{\"perm\":\"rw\"}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{\"perm\":4294967296}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"A\":{\"topicName\":{}}}}}",
        "{\"topicConfigSerializeWrapper\":{\"dataVersion\":[]}}",
        "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":\"x\"}}}",
        "{\"filterServerList\":\"a\"}",
        "{\"filterServerList\":[[1]]}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":{\"currIdMap\":{}}}}"
        "}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":{\"bname\":\"b\","
        "\"currIdMap\":{a:1}}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":{\"bname\":\"b\","
        "\"currIdMap\":{0:null}}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":{\"T\":{\"bname\":\"b\","
        "\"dirty\":\"maybe\"}}}}",
        "{\"topicConfigSerializeWrapper\":{\"topicQueueMappingInfoMap\":[]}}",
        "{\"a\":1} trailing",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++)
        decode_bad(bad[i], strlen(bad[i]), NSRV_MQ_V5_3_3, NSRV_EBODY);
    /* Non-object bare wrapper for an old broker. */
    decode_bad("{\"dataVersion\":1}", 17, 36, NSRV_EBODY);
    /* The error text names the cause. */
    char err[256];
    nsrv_register_body_t b;
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)"xyz", 3, NSRV_MQ_V5_3_3, true,
                                               &arena, &b, err, sizeof err),
                     NSRV_EBODY);
    assert_string_equal(err, "Failed to decode RegisterBrokerBody: neither JSON nor a zlib stream "
                             "(compressed=true)");
    /* A tiny error buffer is safe; NULL err too. */
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)"xyz", 3, NSRV_MQ_V5_3_3, true,
                                               &arena, &b, err, 4),
                     NSRV_EBODY);
    assert_int_equal(strlen(err), 3);
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)"xyz", 3, NSRV_MQ_V5_3_3, true,
                                               &arena, &b, NULL, 0),
                     NSRV_EBODY);
}

/* ---- DataVersion ---- */

static void test_data_version_decode(void **state) {
    (void)state;
    nsrv_data_version_t dv;
    const char *full = "{\"counter\":5,\"stateVersion\":2,\"timestamp\":1700000000000}";
    assert_int_equal(nsrv_data_version_decode((const uint8_t *)full, strlen(full), &arena, &dv), 0);
    assert_int_equal(dv.counter, 5);
    assert_int_equal(dv.state_version, 2);
    assert_int_equal(dv.timestamp, 1700000000000LL);

    const char *old = " {\"timestamp\":\"17\", \"counter\":null, \"other\":[1]} ";
    assert_int_equal(nsrv_data_version_decode((const uint8_t *)old, strlen(old), &arena, &dv), 0);
    assert_int_equal(dv.counter, 0);
    assert_int_equal(dv.state_version, 0);
    assert_int_equal(dv.timestamp, 17);
    assert_int_equal(nsrv_data_version_decode((const uint8_t *)"{}", 2, &arena, &dv), 0);
    assert_int_equal(dv.timestamp, 0);

    const char *bad[] = {"", "null", "[1]", "5", "{", "{\"counter\":\"x\"}", "{\"counter\":{}}"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        dv.counter = 99;
        assert_int_equal(
            nsrv_data_version_decode((const uint8_t *)bad[i], strlen(bad[i]), &arena, &dv),
            NSRV_EBODY);
        assert_int_equal(dv.counter, 99);
    }
}

/* ---- queueDatas ---- */

static void test_queue_datas_decode(void **state) {
    (void)state;
    nsrv_queue_data_t *q = (nsrv_queue_data_t *)1;
    size_t n = 99;
    char err[128];
    /* proto/route.md §9 default-mode sample. */
    const char *route =
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"192.168.0.2:10911\"},"
        "\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],"
        "\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
        "\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4},{\"brokerName\":\"broker-b\","
        "\"perm\":\"2\",\"readQueueNums\":\"1\",\"topicSysFlag\":3}]}";
    assert_int_equal(nsrv_topic_route_queue_datas_decode((const uint8_t *)route, strlen(route),
                                                         &arena, &q, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(q[0].broker_name, "broker-a");
    assert_int_equal(q[0].perm, 6);
    assert_int_equal(q[0].read_queue_nums, 4);
    assert_int_equal(q[0].write_queue_nums, 4);
    assert_int_equal(q[0].topic_sys_flag, 0);
    assert_string_equal(q[1].broker_name, "broker-b");
    assert_int_equal(q[1].perm, 2);
    assert_int_equal(q[1].read_queue_nums, 1);
    assert_int_equal(q[1].write_queue_nums, 0); /* Java primitive default */
    assert_int_equal(q[1].topic_sys_flag, 3);

    /* Nothing to do: empty body, null, no/null/empty queueDatas. */
    const char *empty[] = {"", "null", "{}", "{\"queueDatas\":null}", "{\"queueDatas\":[]}"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(empty); i++) {
        n = 99;
        assert_int_equal(nsrv_topic_route_queue_datas_decode((const uint8_t *)empty[i],
                                                             strlen(empty[i]), &arena, &q, &n, err,
                                                             sizeof err),
                         0);
        assert_int_equal(n, 0);
    }

    /* The list ends at a null entry or an entry without brokerName (Java stops there). */
    const char *stop =
        "{\"queueDatas\":[{\"brokerName\":\"a\"},{\"perm\":6},{\"brokerName\":\"c\"}]}";
    assert_int_equal(nsrv_topic_route_queue_datas_decode((const uint8_t *)stop, strlen(stop),
                                                         &arena, &q, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 1);
    assert_string_equal(q[0].broker_name, "a");
    stop = "{\"queueDatas\":[null,{\"brokerName\":\"c\"}]}";
    assert_int_equal(nsrv_topic_route_queue_datas_decode((const uint8_t *)stop, strlen(stop),
                                                         &arena, &q, &n, err, sizeof err),
                     0);
    assert_int_equal(n, 0);

    const char *bad[] = {"[1]",
                         "{",
                         "\x78\xDA",
                         "{\"queueDatas\":{}}",
                         "{\"queueDatas\":[1]}",
                         "{\"queueDatas\":[{\"brokerName\":\"a\",\"perm\":\"x\"}]}",
                         "{\"queueDatas\":[{\"brokerName\":\"a\"},{\"brokerName\":[]}]}"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        n = 99;
        err[0] = '\0';
        assert_int_equal(nsrv_topic_route_queue_datas_decode((const uint8_t *)bad[i],
                                                             strlen(bad[i]), &arena, &q, &n, err,
                                                             sizeof err),
                         NSRV_EBODY);
        assert_int_equal(n, 99);
        assert_true(strncmp(err, "Failed to decode TopicRouteData: ", 33) == 0);
    }
}

/* ---- what one registration may cost (registerMaxTopics, registerMaxDecodedBytes) ---- */

/* Decodes with limits; returns the rc and the decoded bytes charged on success. */
static int decode_limited(const nsrv_buf_t *body, size_t max_topics, size_t max_bytes,
                          nsrv_register_body_t *b, char *err, size_t err_len) {
    const nsrv_register_body_limits_t lim = {max_topics, max_bytes};
    nsrv_arena_reset(&arena);
    err[0] = '\0';
    return nsrv_register_body_decode_bounded((const uint8_t *)body->data, body->len, NSRV_MQ_V5_3_3,
                                             false, &lim, &arena, b, err, err_len);
}

static void test_registration_limits(void **state) {
    (void)state;
    enum { N = 5000 };
    nsrv_arena_t src_arena;
    nsrv_arena_init(&src_arena, 1 << 20);
    nsrv_topic_config_t *topics = nsrv_arena_alloc(&src_arena, N * sizeof *topics);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "T%06d", i);
        topics[i] =
            (nsrv_topic_config_t){nsrv_arena_strndup(&src_arena, name, strlen(name)), 8, 8, 6, 0};
    }
    nsrv_register_body_t src = {{1, 2, 3}, topics, N, true, NULL, 0, NULL, 0};
    nsrv_buf_t forms[2] = {NSRV_BUF_INIT, NSRV_BUF_INIT};
    nsrv_register_body_encode_json(&src, &forms[0]);
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V5_3_3, &forms[1]), 0);
    nsrv_register_body_t b;
    char err[256];
    for (int f = 0; f < 2; f++) {
        /* Exactly at the topic limit: accepted; one below: refused, naming the key. */
        assert_int_equal(decode_limited(&forms[f], N, 0, &b, err, sizeof err), 0);
        assert_int_equal(b.n_topics, N);
        size_t used = arena.allocated;
        assert_int_equal(decode_limited(&forms[f], N - 1, 0, &b, err, sizeof err), NSRV_ETOOBIG);
        assert_string_equal(err, "Failed to decode RegisterBrokerBody: 5000 topics exceed "
                                 "registerMaxTopics=4999");
        /* 0: no topic limit. */
        assert_int_equal(decode_limited(&forms[f], 0, 0, &b, err, sizeof err), 0);
        /* A byte budget the decode needs is enough; one well under it is refused. */
        size_t need = used + (f == 1 ? 256 * 1024 : 0); /* + inflated text */
        int rc = decode_limited(&forms[f], 0, need, &b, err, sizeof err);
        if (rc)
            print_error("%s\n", err);
        assert_int_equal(rc, 0);
        assert_int_equal(decode_limited(&forms[f], 0, used / 2, &b, err, sizeof err), NSRV_ETOOBIG);
        assert_non_null(strstr(err, "registerMaxDecodedBytes="));
        /* The refused decode stopped near the budget instead of decoding it all. */
        assert_true(arena.allocated <= used / 2 + 64 * 1024);
        print_message("%s form: %zu bytes body, %zu bytes decoded\n", f ? "compressed" : "JSON",
                      forms[f].len, used);
    }
    nsrv_buf_deinit(&forms[0]);
    nsrv_buf_deinit(&forms[1]);
    nsrv_arena_deinit(&src_arena);
}

/* ---- scale: a 20,000-topic broker ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_large_bodies(void **state) {
    (void)state;
    enum { N = 20000 };
    nsrv_topic_config_t *topics = nsrv_arena_alloc(&arena, N * sizeof *topics);
    for (int i = 0; i < N; i++) {
        char name[48];
        snprintf(name, sizeof name, "topic-with-a-realistic-name-%06d", i);
        topics[i] =
            (nsrv_topic_config_t){nsrv_arena_strndup(&arena, name, strlen(name)), 8, 8, 6, i % 4};
    }
    nsrv_register_body_t src = {{1, 2, 3}, topics, N, true, NULL, 0, NULL, 0};
    nsrv_buf_t j = NSRV_BUF_INIT, z = NSRV_BUF_INIT;
    nsrv_register_body_encode_json(&src, &j);
    assert_int_equal(nsrv_register_body_encode_compressed(&src, NSRV_MQ_V5_3_3, &z), 0);
    assert_true(j.len > 3 * 1000 * 1000);

    nsrv_arena_t a2;
    nsrv_arena_init(&a2, 1 << 20);
    nsrv_register_body_t b;
    char err[128];
    double t0 = now_s();
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)j.data, j.len, NSRV_MQ_V5_3_3,
                                               false, &a2, &b, err, sizeof err),
                     0);
    double t1 = now_s();
    assert_int_equal(b.n_topics, N);
    assert_topic(&b.topics[N - 1], topics[N - 1].topic_name, 8, 8, 6, (N - 1) % 4);
    nsrv_arena_reset(&a2);
    double t2 = now_s();
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)z.data, z.len, NSRV_MQ_V5_3_3,
                                               false, &a2, &b, err, sizeof err),
                     0);
    double t3 = now_s();
    assert_int_equal(b.n_topics, N);
    assert_topic(&b.topics[12345], topics[12345].topic_name, 8, 8, 6, 0);
    print_message("20k topics: JSON %zu bytes in %.1f ms, compressed %zu bytes in %.1f ms\n", j.len,
                  (t1 - t0) * 1e3, z.len, (t3 - t2) * 1e3);
    /* Generous bound that still catches quadratic behaviour (even under sanitizers). */
    assert_true(t1 - t0 < 5.0 && t3 - t2 < 5.0);
    nsrv_arena_deinit(&a2);
    nsrv_buf_deinit(&j);
    nsrv_buf_deinit(&z);
}

NSRV_TEST_MAIN(NULL, NULL, NSRV_FIXTURE_TEST(test_crc32_masked),
               NSRV_FIXTURE_TEST(test_json_sample_5x), NSRV_FIXTURE_TEST(test_json_sample_49x),
               NSRV_FIXTURE_TEST(test_json_defaults_and_names),
               NSRV_FIXTURE_TEST(test_json_bare_wrapper_v36), NSRV_FIXTURE_TEST(test_empty_body),
               NSRV_FIXTURE_TEST(test_json_encoder_matches_sample),
               NSRV_FIXTURE_TEST(test_encoders_round_trip),
               NSRV_FIXTURE_TEST(test_compressed_observed_479),
               NSRV_FIXTURE_TEST(test_compressed_observed_407),
               NSRV_FIXTURE_TEST(test_compressed_text_form_edges),
               NSRV_FIXTURE_TEST(test_compressed_errors), NSRV_FIXTURE_TEST(test_zlib_bomb_capped),
               NSRV_FIXTURE_TEST(test_json_errors), NSRV_FIXTURE_TEST(test_data_version_decode),
               NSRV_FIXTURE_TEST(test_queue_datas_decode), NSRV_FIXTURE_TEST(test_large_bodies),
               NSRV_FIXTURE_TEST(test_registration_limits))
