/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route query's fast path (nsrv_processor_route_fast) against the generic
 * decode and handler, frame by frame on two tables built alike
 * (fuzz/route_fast_pair.h): the common frames must be answered, with the
 * generic path's reply bytes; every other shape, and every one-byte change of
 * a common frame, must be declined or answered identically.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fuzz/route_fast_pair.h"
#include "nsrv/alloc.h"
#include "testlib.h"

#define N_TOPICS (sizeof rf_topics / sizeof *rf_topics)

/* A request as a client builds one; the tests vary its fields. */
typedef struct {
    nsrv_cmd_t cmd;
    nsrv_ext_field_t ext[4];
} req_t;

static void req_init(req_t *r, const char *topic) {
    memset(r, 0, sizeof *r);
    r->cmd.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC;
    r->cmd.language = NSRV_LANG_JAVA;
    r->cmd.version = NSRV_MQ_CURRENT;
    r->cmd.opaque = 42;
    r->cmd.ser_type = NSRV_SER_ROCKETMQ;
    r->cmd.has_ext = true;
    r->cmd.ext = r->ext;
    if (topic) {
        r->ext[0] = (nsrv_ext_field_t){NSRV_STR_LIT("topic"), nsrv_str_c(topic)};
        r->cmd.n_ext = 1;
    }
}

static void req_add(req_t *r, const char *key, const char *val) {
    r->ext[r->cmd.n_ext++] = (nsrv_ext_field_t){nsrv_str_c(key), nsrv_str_c(val)};
}

static rf_result_t run_frame(rf_pair_t *pr, const nsrv_buf_t *f) {
    rf_result_t res = rf_run(pr, (const uint8_t *)f->data, f->len);
    if (res == RF_MISMATCH)
        fail_msg("%s", pr->why);
    return res;
}

static rf_result_t run_req(rf_pair_t *pr, const req_t *r) {
    nsrv_buf_t f = NSRV_BUF_INIT;
    assert_int_equal(nsrv_cmd_encode(&f, &r->cmd), 0);
    rf_result_t res = run_frame(pr, &f);
    nsrv_buf_deinit(&f);
    return res;
}

static void assert_answered(rf_pair_t *pr, const req_t *r) {
    assert_int_equal(run_req(pr, r), RF_ANSWERED);
}

static void assert_declined(rf_pair_t *pr, const req_t *r) {
    assert_int_equal(run_req(pr, r), RF_DECLINED);
}

/* The per-test fixture: a pair of tables built alike, plain or with the order config. */
static int pair_new(void **state, unsigned flags) {
    rf_pair_t *pr = nsrv_malloc(sizeof *pr);
    rf_pair_init(pr, flags);
    *state = pr;
    return 0;
}

static int plain_pair(void **state) {
    return pair_new(state, 0);
}

static int order_pair(void **state) {
    return pair_new(state, RF_ORDER);
}

static int pair_free(void **state) {
    rf_pair_free(*state);
    nsrv_free(*state);
    return 0;
}

#define PLAIN_TEST(fn) cmocka_unit_test_setup_teardown(fn, plain_pair, pair_free)
#define ORDER_TEST(fn) cmocka_unit_test_setup_teardown(fn, order_pair, pair_free)

/* Every registered ASCII topic, in every version, language and opaque a client may send,
 * is answered with the generic path's bytes; versions on both sides of 4.9.4 pick the
 * two JSON forms of the body. */
static void test_common_frames_answered(void **state) {
    rf_pair_t *pr = *state;
    static const int32_t versions[] = {
        NSRV_MQ_CURRENT, NSRV_MQ_V4_9_4, NSRV_MQ_V4_9_4 - 1, 0, -1, 317, INT16_MAX, INT16_MIN};
    static const int32_t opaques[] = {0, 1, -1, INT32_MAX, INT32_MIN};
    for (size_t t = 0; t < N_TOPICS - 1; t++) /* the last one is not ASCII */
        for (size_t v = 0; v < NSRV_ARRAY_LEN(versions); v++)
            for (int32_t lang = 0; lang <= NSRV_LANG_NODE_JS + 1; lang++)
                for (size_t o = 0; o < NSRV_ARRAY_LEN(opaques); o++) {
                    req_t r;
                    req_init(&r, rf_topics[t]);
                    r.cmd.version = versions[v];
                    r.cmd.language = lang;
                    r.cmd.opaque = opaques[o];
                    assert_answered(pr, &r);
                }
    /* The cache was built once per topic and mode, then hit, alike on both sides. */
    nsrv_route_stats_t st;
    nsrv_route_get_stats(pr->fast.rt, &st);
    assert_int_equal(st.route_cache_builds, 2 * (N_TOPICS - 1));
}

/* The order config (orderMessageEnable) is part of the reply: the fast path reads it as the
 * handler does. */
static void test_order_config_answered(void **state) {
    rf_pair_t *pr = *state;
    req_t r;
    for (size_t t = 0; t < N_TOPICS - 1; t++) {
        req_init(&r, rf_topics[t]);
        assert_answered(pr, &r);
    }
    req_init(&r, RF_ORDERED_TOPIC);
    nsrv_buf_t f = NSRV_BUF_INIT;
    nsrv_cmd_encode(&f, &r.cmd);
    assert_int_equal(run_frame(pr, &f), RF_ANSWERED);
    assert_non_null(memmem(pr->fast.out.data, pr->fast.out.len, "broker-a:4", 10));
    nsrv_buf_deinit(&f);
}

/* Requests whose reply the generic path builds differently, or that need more than the
 * topic read, are declined. */
static void test_declines_other_shapes(void **state) {
    rf_pair_t *pr = *state;
    req_t r;
    req_init(&r, "no-such-topic"); /* TOPIC_NOT_EXIST with its remark */
    assert_declined(pr, &r);
    req_init(&r, rf_topics[N_TOPICS - 1]); /* not ASCII */
    assert_declined(pr, &r);
    req_init(&r, NULL); /* no topic */
    assert_declined(pr, &r);
    r.cmd.has_ext = false;
    assert_declined(pr, &r);
    static const char *const extra[][2] = {
        {"acceptStandardJsonOnly", "true"},
        {"acceptStandardJsonOnly", "false"},
        {"__ZONE_MODE", "true"},
        {"__ZONE_NAME", "zone-a"},
        {"topic", "T1"},
        {"other", "x"},
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(extra); i++) {
        req_init(&r, "TopicTest");
        req_add(&r, extra[i][0], extra[i][1]);
        assert_declined(pr, &r);
        /* The same fields before the topic. */
        req_init(&r, NULL);
        req_add(&r, extra[i][0], extra[i][1]);
        req_add(&r, "topic", "TopicTest");
        assert_declined(pr, &r);
    }
    req_init(&r, "TopicTest");
    r.ext[0].key = NSRV_STR_LIT("Topic");
    assert_declined(pr, &r);
    req_init(&r, "TopicTest");
    r.cmd.remark = NSRV_STR_LIT("a remark");
    assert_declined(pr, &r);
    static const uint8_t body[] = "{}";
    r.cmd.remark = NSRV_STR_NULL;
    r.cmd.body = body;
    r.cmd.body_len = 2;
    assert_declined(pr, &r);
    static const int32_t flags[] = {NSRV_FLAG_RESPONSE, NSRV_FLAG_ONEWAY, 3, 4};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(flags); i++) {
        req_init(&r, "TopicTest");
        r.cmd.flag = flags[i];
        assert_declined(pr, &r);
    }
    static const int32_t codes[] = {NSRV_REQ_GET_ROUTEINFO_BY_TOPIC + 1, 0, -1,
                                    NSRV_REQ_GET_ROUTEINFO_BY_TOPIC + 256};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(codes); i++) {
        req_init(&r, "TopicTest");
        r.cmd.code = codes[i];
        assert_declined(pr, &r);
    }
}

/* A NUL inside the topic: the generic path refuses it with an error reply. */
static void test_declines_nul_topic(void **state) {
    rf_pair_t *pr = *state;
    req_t r;
    req_init(&r, "T1");
    r.ext[0].val = (nsrv_str_t){"T1\0T2", 5};
    assert_declined(pr, &r);
    r.ext[0].val = (nsrv_str_t){"\0", 1};
    assert_declined(pr, &r);
}

/* Topic lengths around the fast path's limit (255 bytes), both registered: answered up
 * to it, declined past it. */
static void test_topic_length_limit(void **state) {
    rf_pair_t *pr = *state;
    char at[256], past[257];
    memset(at, 'x', sizeof at - 1);
    at[sizeof at - 1] = '\0';
    memset(past, 'y', sizeof past - 1);
    past[sizeof past - 1] = '\0';
    nsrv_route_t *rts[] = {pr->fast.rt, pr->gen.rt};
    nsrv_queue_data_t qd = {"broker-a", 4, 4, 6, 0};
    for (size_t i = 0; i < 2; i++) {
        nsrv_route_register_topic(rts[i], at, &qd, 1);
        nsrv_route_register_topic(rts[i], past, &qd, 1);
    }
    req_t r;
    req_init(&r, at);
    assert_answered(pr, &r);
    req_init(&r, past);
    assert_declined(pr, &r);
}

/* Configurations whose reply or checks the fast path leaves to the generic one. */
static void test_declines_configs(void **state) {
    (void)state;
    static const unsigned configs[] = {RF_NOT_READY, RF_ACL, RF_ACL | RF_ORDER};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(configs); i++) {
        rf_pair_t pr;
        rf_pair_init(&pr, configs[i]);
        req_t r;
        req_init(&r, "TopicTest");
        assert_declined(&pr, &r);
        rf_pair_free(&pr);
    }
}

/* A JSON-header frame of the given header text. */
static rf_result_t run_json(rf_pair_t *pr, const char *hdr) {
    nsrv_buf_t f = NSRV_BUF_INIT;
    static const uint8_t prefix[8] = {0};
    size_t n = strlen(hdr);
    nsrv_buf_append(&f, prefix, sizeof prefix);
    nsrv_buf_append(&f, hdr, n);
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(n + 4));
    nsrv_buf_put_be32_at(&f, 4, (uint32_t)n);
    rf_result_t res = run_frame(pr, &f);
    nsrv_buf_deinit(&f);
    return res;
}

/* JSON headers as the Java client (fastjson: sorted keys) and the Go client write them, and
 * as nsrv_cmd_encode writes a request: answered with the generic path's bytes. */
static void test_json_headers_answered(void **state) {
    rf_pair_t *pr = *state;
    static const char *const headers[] = {
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
        "\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":453}",
        "{\"code\":105,\"extFields\":{\"topic\":\"T1\"},\"flag\":0,\"language\":\"JAVA\","
        "\"opaque\":-2147483648,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":317}",
        "{\"code\":105,\"language\":\"GO\",\"version\":317,\"opaque\":2147483647,\"flag\":0,"
        "\"remark\":\"\",\"extFields\":{\"topic\":\"%RETRY%group-a\"}}",
        "{\"extFields\":{\"topic\":\"T2\"},\"code\":105}",
        "{\"code\":105,\"extFields\":{\"topic\":\"a\"},\"version\":401,\"language\":\"NOPE\"}",
        "{\"code\":105,\"extFields\":{\"topic\":\"a\"},\"version\":-1,\"opaque\":0}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(headers); i++)
        assert_int_equal(run_json(pr, headers[i]), RF_ANSWERED);
    for (size_t t = 0; t < N_TOPICS - 1; t++) {
        req_t r;
        req_init(&r, rf_topics[t]);
        r.cmd.ser_type = NSRV_SER_JSON;
        r.cmd.version = t % 2 ? NSRV_MQ_V4_9_4 - 1 : NSRV_MQ_CURRENT;
        assert_answered(pr, &r);
    }
}

/* JSON the scanner does not take: the generic path answers (or refuses) it. */
static void test_json_headers_declined(void **state) {
    rf_pair_t *pr = *state;
    static const char *const headers[] = {
        /* whitespace, an escape, a duplicate, an unknown member, a missing code */
        "{ \"code\":105,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"Topic\\u0054est\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"code\":105}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"other\":1}",
        "{\"Code\":105,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"extFields\":{\"topic\":\"TopicTest\"}}",
        /* numbers written otherwise, or out of range */
        "{\"code\":105.0,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":1.05e2,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":0105,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":\"105\",\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"opaque\":2147483648}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"opaque\":-0}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"version\":99999999999}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"language\":0}",
        /* other flags, a remark, more ext fields, no topic, another code, bytes after */
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":2}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":1}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"remark\":\"r\"}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\",\"__ZONE_MODE\":\"true\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"\"}}",
        "{\"code\":105,\"extFields\":{}}",
        "{\"code\":105,\"extFields\":null}",
        "{\"code\":106,\"extFields\":{\"topic\":\"TopicTest\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"}} ",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"}}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},}",
        "{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"}",
        "{\"code\":105,\"extFields\":{\"topic\":\"no-such-topic\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"t\xc3\xb3pico\"}}",
        "{\"code\":105,\"extFields\":{\"topic\":\"Topic\x01Test\"}}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(headers); i++)
        if (run_json(pr, headers[i]) != RF_DECLINED)
            fail_msg("answered: %s", headers[i]);
}

/* Frame-level oddities: trailing bytes after the map, an empty entry after the topic
 * (which the generic decoder drops), lengths that do not add up. */
static void test_declines_odd_frames(void **state) {
    rf_pair_t *pr = *state;
    req_t r;
    req_init(&r, "TopicTest");
    nsrv_buf_t f = NSRV_BUF_INIT;
    nsrv_cmd_encode(&f, &r.cmd);
    size_t n = f.len;

    /* Bytes after the map inside the header: the generic decoder ignores them. */
    nsrv_buf_append(&f, "abc", 3);
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(f.len - 4));
    nsrv_buf_put_be32_at(&f, 4, (uint32_t)NSRV_SER_ROCKETMQ << 24 | (uint32_t)(f.len - 8));
    assert_int_equal(run_frame(pr, &f), RF_DECLINED);

    /* An empty entry (key length 0, value length 0) inside the map. */
    f.len = n;
    static const uint8_t empty[6] = {0};
    nsrv_buf_append(&f, empty, sizeof empty);
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(f.len - 4));
    nsrv_buf_put_be32_at(&f, 4, (uint32_t)NSRV_SER_ROCKETMQ << 24 | (uint32_t)(f.len - 8));
    nsrv_buf_put_be32_at(&f, 8 + 17, (uint32_t)(f.len - 8 - NSRV_HDR_ROCKETMQ_FIXED));
    assert_int_equal(run_frame(pr, &f), RF_DECLINED);

    /* A length prefix one off either way, and a frame cut short. */
    f.len = n;
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(n - 3));
    assert_int_equal(run_frame(pr, &f), RF_DECLINED);
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(n - 5));
    assert_int_equal(run_frame(pr, &f), RF_DECLINED);
    nsrv_buf_put_be32_at(&f, 0, (uint32_t)(n - 4));
    for (size_t cut = 0; cut < n; cut++)
        assert_int_equal(rf_run(pr, (const uint8_t *)f.data, cut), RF_DECLINED);
    nsrv_buf_deinit(&f);
}

/* Every byte of a common frame (both header types) set to other values: each variant is
 * declined, or answered with the generic path's bytes (the version, language and opaque
 * bytes, the topic's letters); the plain frame itself still answered after all of them. */
static void assert_every_byte_changed(uint8_t ser_type) {
    static const uint8_t values[] = {0x00, 0x01, 0x05, 0x0b, 0x20, 0x22, 0x2c, 0x30,
                                     0x31, 0x54, 0x5c, 0x7b, 0x7d, 0x7f, 0x80, 0xff};
    rf_pair_t pr;
    rf_pair_init(&pr, RF_ORDER);
    req_t r;
    req_init(&r, "T1");
    r.cmd.ser_type = ser_type;
    nsrv_buf_t f = NSRV_BUF_INIT;
    nsrv_cmd_encode(&f, &r.cmd);
    size_t answered = 0;
    for (size_t i = 0; i < f.len; i++) {
        uint8_t orig = (uint8_t)f.data[i];
        for (size_t v = 0; v < NSRV_ARRAY_LEN(values); v++) {
            f.data[i] = (char)values[v];
            answered += run_frame(&pr, &f) == RF_ANSWERED;
        }
        f.data[i] = (char)(orig ^ 0x01);
        answered += run_frame(&pr, &f) == RF_ANSWERED;
        f.data[i] = (char)orig;
    }
    assert_true(answered > 0);
    assert_int_equal(run_frame(&pr, &f), RF_ANSWERED);
    nsrv_buf_deinit(&f);
    rf_pair_free(&pr);
}

static void test_every_byte_changed(void **state) {
    (void)state;
    assert_every_byte_changed(NSRV_SER_ROCKETMQ);
    assert_every_byte_changed(NSRV_SER_JSON);
}

NSRV_TEST_MAIN(NULL, NULL, PLAIN_TEST(test_common_frames_answered),
               ORDER_TEST(test_order_config_answered), PLAIN_TEST(test_declines_other_shapes),
               PLAIN_TEST(test_declines_nul_topic), PLAIN_TEST(test_topic_length_limit),
               cmocka_unit_test(test_declines_configs), ORDER_TEST(test_json_headers_answered),
               PLAIN_TEST(test_json_headers_declined), PLAIN_TEST(test_declines_odd_frames),
               cmocka_unit_test(test_every_byte_changed))
