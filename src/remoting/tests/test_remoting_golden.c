/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Golden frames from proto/vectors/remoting (written by hand from the
 * reference, not by this encoder): each is decoded and checked field by
 * field, and the matching command is encoded and compared byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/remoting.h"
#include "testlib.h"

#define NSRV_REMOTING_VECTORS NSRV_SOURCE_DIR "/proto/vectors/remoting"

typedef struct {
    uint8_t *data;
    size_t len;
} blob_t;

static blob_t load_vector(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", NSRV_REMOTING_VECTORS, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    blob_t b = {nsrv_malloc(1 << 16), 0};
    b.len = fread(b.data, 1, 1 << 16, f);
    fclose(f);
    assert_true(b.len > 8);
    return b;
}

static void assert_encodes_to(const nsrv_cmd_t *cmd, const uint8_t *want, size_t want_len) {
    nsrv_buf_t out = NSRV_BUF_INIT;
    assert_int_equal(nsrv_cmd_encode(&out, cmd), 0);
    assert_int_equal(out.len, want_len);
    assert_memory_equal(out.data, want, want_len);
    nsrv_buf_deinit(&out);
}

static void assert_str(nsrv_str_t s, const char *want) {
    assert_non_null(s.ptr);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
    assert_int_equal(s.ptr[s.len], '\0');
}

/* Decodes a whole vector into c, its strings in arena (which this initialises). */
static void decode_vector(const blob_t *v, nsrv_arena_t *arena, nsrv_cmd_t *c) {
    nsrv_arena_init(arena, 0);
    assert_int_equal(nsrv_cmd_decode(v->data, v->len, arena, c), 0);
}

/* The fixed header fields of a decoded command against want's, named where they differ. */
static void assert_header(const nsrv_cmd_t *c, const nsrv_cmd_t *want) {
    static const char *const names[] = {"ser_type", "code",   "language",
                                        "version",  "opaque", "flag"};
    const long long got[] = {c->ser_type, c->code, c->language, c->version, c->opaque, c->flag};
    const long long exp[] = {want->ser_type, want->code,   want->language,
                             want->version,  want->opaque, want->flag};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(names); i++)
        if (got[i] != exp[i])
            fail_msg("%s: %lld, expected %lld", names[i], got[i], exp[i]);
}

/* Each name of kv[] (name, value pairs) is an ext field holding exactly its value. */
static void assert_exts(const nsrv_cmd_t *c, const char *const *kv, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2)
        assert_str(nsrv_cmd_ext(c, kv[i]), kv[i + 1]);
}

/* proto/remoting.md §4, typed in from the document. */
static const uint8_t spec_1_4_frame[49] = {
    0x00, 0x00, 0x00, 0x2d, 0x01, 0x00, 0x00, 0x29, 0x00, 0x69, 0x00, 0x01, 0xdf,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x14, 0x00, 0x05, 0x74, 0x6f, 0x70, 0x69, 0x63, 0x00, 0x00, 0x00,
    0x09, 0x54, 0x6f, 0x70, 0x69, 0x63, 0x54, 0x65, 0x73, 0x74,
};

static void test_spec_binary_example(void **state) {
    (void)state;
    blob_t v = load_vector("rmq_get_route_request.bin");
    assert_int_equal(v.len, sizeof spec_1_4_frame);
    assert_memory_equal(v.data, spec_1_4_frame, sizeof spec_1_4_frame);

    size_t flen = 0;
    assert_int_equal(nsrv_frame_peek(v.data, v.len, NSRV_FRAME_MAX_DEFAULT, &flen), 0);
    assert_int_equal(flen, 49);

    /* The command the document describes; encoding it from scratch gives its bytes. */
    nsrv_ext_field_t ext[] = {{NSRV_STR_LIT("topic"), NSRV_STR_LIT("TopicTest")}};
    nsrv_cmd_t built = {.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                        .language = NSRV_LANG_JAVA,
                        .version = 479,
                        .opaque = 1,
                        .has_ext = true,
                        .ext = ext,
                        .n_ext = 1,
                        .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_arena_t arena;
    nsrv_cmd_t c;
    decode_vector(&v, &arena, &c);
    assert_header(&c, &built);
    assert_null(c.remark.ptr);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 1);
    assert_str(c.ext[0].key, "topic");
    assert_str(c.ext[0].val, "TopicTest");
    assert_str(nsrv_cmd_ext(&c, "topic"), "TopicTest");
    assert_null(c.body);
    assert_int_equal(c.body_len, 0);

    assert_encodes_to(&built, spec_1_4_frame, sizeof spec_1_4_frame);
    assert_encodes_to(&c, spec_1_4_frame, sizeof spec_1_4_frame);

    nsrv_arena_deinit(&arena);
    nsrv_free(v.data);
}

/* A JSON GET_ROUTEINFO_BY_TOPIC request as the Java client writes it. */
static nsrv_cmd_t json_request(int32_t opaque) {
    return (nsrv_cmd_t){.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                        .opaque = opaque,
                        .version = 453,
                        .ser_type = NSRV_SER_JSON};
}

/* proto/remoting.md §3, the observed fastjson header. */
static const char spec_1_3_header[] =
    "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
    "\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":453}";

static void test_spec_json_request(void **state) {
    (void)state;
    blob_t v = load_vector("json_get_route_request.bin");
    assert_int_equal(v.len, 8 + strlen(spec_1_3_header));
    assert_memory_equal(v.data + 8, spec_1_3_header, strlen(spec_1_3_header));

    nsrv_arena_t arena;
    nsrv_cmd_t c;
    decode_vector(&v, &arena, &c);
    nsrv_cmd_t want = json_request(7);
    want.language = NSRV_LANG_JAVA;
    assert_header(&c, &want);
    assert_false(nsrv_cmd_is_response(&c));
    assert_false(nsrv_cmd_is_oneway(&c));
    assert_null(c.remark.ptr);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 1);
    assert_str(nsrv_cmd_ext(&c, "topic"), "TopicTest");
    assert_null(c.body);

    /* Our encoder writes fastjson's exact form, so the request re-encodes as is. */
    assert_encodes_to(&c, v.data, v.len);
    nsrv_arena_deinit(&arena);
    nsrv_free(v.data);
}

static void check_response_vector(const nsrv_cmd_t *resp, const char *file,
                                  const char *want_header) {
    blob_t v = load_vector(file);
    size_t hlen = strlen(want_header);
    /* The file and the hand-written string in this test agree... */
    assert_int_equal(nsrv_load_be32(v.data + 4), hlen);
    assert_memory_equal(v.data + 8, want_header, hlen);
    /* ...and the encoder produces exactly that frame. */
    assert_encodes_to(resp, v.data, v.len);

    nsrv_arena_t arena;
    nsrv_cmd_t back;
    decode_vector(&v, &arena, &back);
    assert_true(nsrv_cmd_is_response(&back));
    assert_int_equal(back.code, resp->code);
    assert_int_equal(back.opaque, resp->opaque);
    assert_int_equal(back.version, NSRV_MQ_CURRENT);
    assert_int_equal(back.has_ext, resp->has_ext);
    assert_int_equal(back.n_ext, resp->n_ext);
    assert_int_equal(back.body_len, resp->body_len);
    if (resp->remark.ptr)
        assert_true(nsrv_str_eq(back.remark, resp->remark));
    else
        assert_null(back.remark.ptr);
    nsrv_arena_deinit(&arena);
    nsrv_free(v.data);
}

static void test_json_topic_not_exist_response(void **state) {
    (void)state;
    nsrv_cmd_t req = json_request(7);
    nsrv_cmd_t resp;
    nsrv_cmd_init_response(&resp, &req, 17);
    resp.remark = NSRV_STR_LIT("No topic route info in name server for the topic: TopicTest\n"
                               "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for "
                               "further details.");
    check_response_vector(
        &resp, "json_topic_not_exist_response.bin",
        "{\"code\":17,\"flag\":1,\"language\":\"JAVA\",\"opaque\":7,\"remark\":\"No topic route "
        "info in name server for the topic: TopicTest\\nSee "
        "https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.\","
        "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
}

static void test_json_kv_not_found_response(void **state) {
    (void)state;
    nsrv_cmd_t req = json_request(3);
    nsrv_cmd_t resp;
    nsrv_cmd_init_response(&resp, &req, 22);
    resp.remark = NSRV_STR_LIT("No config item, Namespace: ORDER_TOPIC_CONFIG Key: TopicA");
    resp.has_ext = true; /* a response header class with all fields null: "{}" */
    check_response_vector(&resp, "json_kv_not_found_response.bin",
                          "{\"code\":22,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\","
                          "\"opaque\":3,\"remark\":\"No config item, Namespace: "
                          "ORDER_TOPIC_CONFIG Key: TopicA\",\"serializeTypeCurrentRPC\":"
                          "\"JSON\",\"version\":479}");
}

static void test_json_query_data_version_response(void **state) {
    (void)state;
    static const char body[] = "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000}";
    nsrv_cmd_t req = json_request(12);
    nsrv_cmd_t resp;
    nsrv_cmd_init_response(&resp, &req, 0);
    nsrv_ext_field_t ext[] = {{NSRV_STR_LIT("changed"), NSRV_STR_LIT("false")}};
    resp.has_ext = true;
    resp.ext = ext;
    resp.n_ext = 1;
    resp.body = (const uint8_t *)body;
    resp.body_len = sizeof body - 1;
    check_response_vector(&resp, "json_query_data_version_response.bin",
                          "{\"code\":0,\"extFields\":{\"changed\":\"false\"},\"flag\":1,"
                          "\"language\":\"JAVA\",\"opaque\":12,\"serializeTypeCurrentRPC\":"
                          "\"JSON\",\"version\":479}");
}

static void test_binary_register_oneway(void **state) {
    (void)state;
    blob_t v = load_vector("rmq_register_broker_oneway.bin");
    nsrv_arena_t arena;
    nsrv_cmd_t c;
    decode_vector(&v, &arena, &c);
    assert_header(&c, &(nsrv_cmd_t){.ser_type = NSRV_SER_ROCKETMQ,
                                    .code = NSRV_REQ_REGISTER_BROKER,
                                    .language = NSRV_LANG_JAVA,
                                    .version = 479,
                                    .opaque = 42,
                                    .flag = NSRV_FLAG_ONEWAY});
    assert_true(nsrv_cmd_is_oneway(&c));
    assert_false(nsrv_cmd_is_response(&c));
    assert_str(c.remark, "hello \"remark\"\nline2");
    assert_int_equal(c.n_ext, 8);
    static const char *const exts[] = {
        "brokerName",   "broker-a",
        "brokerAddr",   "10.0.0.1:10911",
        "clusterName",  "DefaultCluster",
        "haServerAddr", "10.0.0.1:10912",
        "brokerId",     "0",
        "compressed",   "false",
        "bodyCrc32",    "0",
        "__ZONE_NAME",  "zone-\xc3\xa9\xe4\xb8\xad",
    };
    assert_exts(&c, exts, NSRV_ARRAY_LEN(exts));
    assert_null(nsrv_cmd_ext(&c, "brokername").ptr);
    assert_int_equal(c.body_len, strlen("{\"topicConfigSerializeWrapper\":{}}"));
    assert_memory_equal(c.body, "{\"topicConfigSerializeWrapper\":{}}", c.body_len);
    assert_ptr_equal(c.body, v.data + v.len - c.body_len);
    assert_encodes_to(&c, v.data, v.len);
    nsrv_arena_deinit(&arena);
    nsrv_free(v.data);
}

static void test_binary_success_response(void **state) {
    (void)state;
    blob_t v = load_vector("rmq_success_response.bin");
    nsrv_cmd_t req = {
        .code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC, .opaque = 1, .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_cmd_t resp;
    nsrv_cmd_init_response(&resp, &req, 0);
    assert_encodes_to(&resp, v.data, v.len);
    /* An empty (non-NULL) remark is also written with length 0. */
    resp.remark = (nsrv_str_t){"", 0};
    assert_encodes_to(&resp, v.data, v.len);

    nsrv_arena_t arena;
    nsrv_cmd_t c;
    decode_vector(&v, &arena, &c);
    assert_int_equal(c.flag, NSRV_FLAG_RESPONSE);
    assert_false(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_null(c.remark.ptr);
    nsrv_arena_deinit(&arena);
    nsrv_free(v.data);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_spec_binary_example),
               cmocka_unit_test(test_spec_json_request),
               cmocka_unit_test(test_json_topic_not_exist_response),
               cmocka_unit_test(test_json_kv_not_found_response),
               cmocka_unit_test(test_json_query_data_version_response),
               cmocka_unit_test(test_binary_register_oneway),
               cmocka_unit_test(test_binary_success_response))
