/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command codec: JSON and binary header decoding rules (defaults, lenient
 * types, dropped/absent values), every malformed-header error path, and
 * encode→decode round trips with many ext fields, unicode and awkward remarks.
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

static nsrv_arena_t arena;
static nsrv_buf_t frame_buf;

static int setup(void **state) {
    (void)state;
    nsrv_arena_init(&arena, 0);
    nsrv_buf_init(&frame_buf);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv_arena_deinit(&arena);
    nsrv_buf_deinit(&frame_buf);
    return 0;
}

/* Builds a frame around hdr/body in frame_buf (valid until the next call). */
static const uint8_t *mkframe(uint8_t type, const void *hdr, size_t hlen, const void *body,
                              size_t blen) {
    nsrv_buf_reset(&frame_buf);
    nsrv_buf_append_be32(&frame_buf, (uint32_t)(4 + hlen + blen));
    nsrv_buf_append_be32(&frame_buf, ((uint32_t)type << 24) | (uint32_t)hlen);
    nsrv_buf_append(&frame_buf, hdr, hlen);
    nsrv_buf_append(&frame_buf, body, blen);
    return (const uint8_t *)frame_buf.data;
}

static int decode_json(const char *hdr, nsrv_cmd_t *c) {
    const uint8_t *f = mkframe(NSRV_SER_JSON, hdr, strlen(hdr), NULL, 0);
    return nsrv_cmd_decode(f, frame_buf.len, &arena, c);
}

static int decode_bin(const nsrv_buf_t *hdr, nsrv_cmd_t *c) {
    const uint8_t *f = mkframe(NSRV_SER_ROCKETMQ, hdr->data, hdr->len, NULL, 0);
    return nsrv_cmd_decode(f, frame_buf.len, &arena, c);
}

static void assert_str(nsrv_str_t s, const char *want) {
    assert_non_null(s.ptr);
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.ptr, want, s.len);
    assert_int_equal(s.ptr[s.len], '\0');
}

/* ---- JSON header decoding ---- */

static void test_json_defaults(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json("{}", &c), 0);
    assert_int_equal(c.code, 0);
    assert_int_equal(c.flag, 0);
    assert_int_equal(c.version, 0);
    assert_int_equal(c.opaque, 0); /* missing opaque → 0 */
    assert_int_equal(c.language, NSRV_LANG_JAVA);
    assert_null(c.remark.ptr);
    assert_false(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_null(nsrv_cmd_ext(&c, "topic").ptr);
    assert_int_equal(c.ser_type, NSRV_SER_JSON);

    assert_int_equal(
        decode_json("{\"code\":106,\"flag\":0,\"language\":\"JAVA\",\"version\":479}", &c), 0);
    assert_int_equal(c.code, NSRV_REQ_GET_BROKER_CLUSTER_INFO);
    assert_int_equal(c.opaque, 0);
}

static void test_json_any_order_unknown_keys(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json(" { \"version\" : 401 , \"body\":[1,2,{\"x\":null}],"
                                 "\"opaque\":-5,\"extFields\":{\"b\":\"2\",\"a\":\"1\"},"
                                 "\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"suspended\":true,"
                                 "\"code\":105,\"flag\":3,\"language\":\"GO\"}\n",
                                 &c),
                     0);
    assert_int_equal(c.version, 401);
    assert_int_equal(c.opaque, -5);
    assert_int_equal(c.code, NSRV_REQ_GET_ROUTEINFO_BY_TOPIC);
    assert_int_equal(c.flag, 3);
    assert_true(nsrv_cmd_is_response(&c));
    assert_true(nsrv_cmd_is_oneway(&c));
    assert_int_equal(c.language, NSRV_LANG_GO);
    /* serializeTypeCurrentRPC is informational: the word's top byte rules. */
    assert_int_equal(c.ser_type, NSRV_SER_JSON);
    assert_int_equal(c.n_ext, 2);
    assert_str(c.ext[0].key, "b");
    assert_str(nsrv_cmd_ext(&c, "a"), "1");
    assert_str(nsrv_cmd_ext(&c, "b"), "2");
}

static void test_json_language(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json("{\"language\":9}", &c), 0);
    assert_int_equal(c.language, NSRV_LANG_GO);
    assert_int_equal(decode_json("{\"language\":0}", &c), 0);
    assert_int_equal(c.language, NSRV_LANG_JAVA);
    assert_int_equal(decode_json("{\"language\":13}", &c), 0);
    assert_int_equal(c.language, NSRV_LANG_NODE_JS);
    assert_int_equal(decode_json("{\"language\":\"NODE_JS\"}", &c), 0);
    assert_int_equal(c.language, NSRV_LANG_NODE_JS);
    /* Unknown values decode to "null" (-1), never to an error. */
    static const char *const unknown[] = {
        "{\"language\":\"KOTLIN\"}", "{\"language\":\"java\"}", "{\"language\":\"\"}",
        "{\"language\":14}",         "{\"language\":-1}",       "{\"language\":null}",
        "{\"language\":true}",       "{\"language\":[0]}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(unknown); i++) {
        assert_int_equal(decode_json(unknown[i], &c), 0);
        assert_int_equal(c.language, -1);
    }
    assert_string_equal(nsrv_language_name(NSRV_LANG_JAVA), "JAVA");
    assert_string_equal(nsrv_language_name(NSRV_LANG_RUST), "RUST");
    assert_null(nsrv_language_name(-1));
    assert_null(nsrv_language_name(14));
    assert_int_equal(nsrv_language_from_name("CPP", 3), NSRV_LANG_CPP);
    assert_int_equal(nsrv_language_from_name("CPPX", 3), NSRV_LANG_CPP);
    assert_int_equal(nsrv_language_from_name("CPPX", 4), -1);
    assert_int_equal(nsrv_language_from_name(NULL, 0), -1);
}

static void test_json_int_fields_lenient(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json("{\"code\":\"105\",\"opaque\":\"-7\",\"flag\":\"1\","
                                 "\"version\":\"479\"}",
                                 &c),
                     0);
    assert_int_equal(c.code, NSRV_REQ_GET_ROUTEINFO_BY_TOPIC);
    assert_int_equal(c.opaque, -7);
    assert_int_equal(c.flag, 1);
    assert_int_equal(c.version, 479);
    assert_int_equal(decode_json("{\"opaque\":2147483647,\"code\":-2147483648}", &c), 0);
    assert_int_equal(c.opaque, INT32_MAX);
    assert_int_equal(c.code, INT32_MIN);
    assert_int_equal(decode_json("{\"code\":null,\"flag\":true,\"version\":12.9}", &c), 0);
    assert_int_equal(c.code, 0);
    assert_int_equal(c.flag, 1);
    assert_int_equal(c.version, 12);
    /* fastjson's smartMatch: case and '_'/'-' do not matter for properties. */
    assert_int_equal(decode_json("{\"Code\":7,\"OPAQUE\":8,\"ext_fields\":{\"k\":\"v\"},"
                                 "\"isFlag\":2,\"ver-sion\":3,\"codes\":9}",
                                 &c),
                     0);
    assert_int_equal(c.code, 7);
    assert_int_equal(c.opaque, 8);
    assert_int_equal(c.flag, 2);
    assert_int_equal(c.version, 3);
    assert_str(nsrv_cmd_ext(&c, "k"), "v");
    /* A repeated key: the last one wins. */
    assert_int_equal(decode_json("{\"code\":1,\"code\":2}", &c), 0);
    assert_int_equal(c.code, 2);

    static const char *const bad[] = {
        "{\"code\":\"abc\"}",     "{\"opaque\":2147483648}", "{\"opaque\":\"2147483648\"}",
        "{\"code\":-2147483649}", "{\"flag\":[1]}",          "{\"version\":{}}",
        "{\"code\":\"\"}",        "{\"code\":1e300}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++)
        assert_int_equal(decode_json(bad[i], &c), NSRV_EHEADER);
}

static void test_json_remark(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json("{\"remark\":\"\"}", &c), 0);
    assert_null(c.remark.ptr);
    assert_int_equal(decode_json("{\"remark\":null}", &c), 0);
    assert_null(c.remark.ptr);
    assert_int_equal(decode_json("{\"remark\":\"a\\\"b\\nc\\u00e9\"}", &c), 0);
    assert_str(c.remark, "a\"b\nc\xc3\xa9");
    assert_int_equal(decode_json("{\"remark\":42}", &c), 0);
    assert_str(c.remark, "42");
    assert_int_equal(decode_json("{\"remark\":{\"a\":1}}", &c), NSRV_EHEADER);
}

static void test_json_ext_values(void **state) {
    (void)state;
    nsrv_cmd_t c;
    assert_int_equal(decode_json("{\"extFields\":{\"topic\":\"T\",\"gone\":null,\"n\":123,"
                                 "\"neg\":-4,\"f\":1.5e3,\"t\":true,\"fa\":false,\"e\":\"\"}}",
                                 &c),
                     0);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 7); /* the null one is dropped */
    assert_null(nsrv_cmd_ext(&c, "gone").ptr);
    assert_str(nsrv_cmd_ext(&c, "topic"), "T");
    assert_str(nsrv_cmd_ext(&c, "n"), "123");
    assert_str(nsrv_cmd_ext(&c, "neg"), "-4");
    assert_str(nsrv_cmd_ext(&c, "f"), "1.5e3");
    assert_str(nsrv_cmd_ext(&c, "t"), "true");
    assert_str(nsrv_cmd_ext(&c, "fa"), "false");
    /* An empty string stays an empty (present) value in JSON, as in Java. */
    assert_str(nsrv_cmd_ext(&c, "e"), "");

    assert_int_equal(decode_json("{\"extFields\":{}}", &c), 0);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_int_equal(decode_json("{\"extFields\":{\"x\":null}}", &c), 0);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_int_equal(decode_json("{\"extFields\":null}", &c), 0);
    assert_false(c.has_ext);

    /* Duplicate ext keys: lookups see the last, like HashMap.put. */
    assert_int_equal(decode_json("{\"extFields\":{\"k\":\"1\",\"k\":\"2\"}}", &c), 0);
    assert_str(nsrv_cmd_ext(&c, "k"), "2");
    /* Lenient syntax fastjson also reads: bare keys. */
    assert_int_equal(decode_json("{code:105,extFields:{0:\"zero\"}}", &c), 0);
    assert_int_equal(c.code, NSRV_REQ_GET_ROUTEINFO_BY_TOPIC);
    assert_str(nsrv_cmd_ext(&c, "0"), "zero");
}

static void test_json_bad_headers(void **state) {
    (void)state;
    nsrv_cmd_t c;
    static const char *const bad[] = {
        "[]",
        "[{\"code\":1}]",
        "\"str\"",
        "123",
        "null",
        "true",
        "{",
        "{\"code\":1,}x",
        "{\"code\":1} trailing",
        "not json",
        " ",
        "{\"extFields\":[]}",
        "{\"extFields\":[\"a\",\"b\"]}",
        "{\"extFields\":\"topic=T\"}",
        "{\"extFields\":5}",
        "{\"extFields\":{\"a\":{\"b\":\"c\"}}}",
        "{\"extFields\":{\"a\":[1]}}",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        int rc = decode_json(bad[i], &c);
        if (rc != NSRV_EHEADER)
            fail_msg("'%s' gave %d", bad[i], rc);
    }
    /* H = 0 with the JSON type. */
    const uint8_t *f = mkframe(NSRV_SER_JSON, "", 0, "body", 4);
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EHEADER);
}

/* ---- frame-level errors ---- */

static void test_frame_errors(void **state) {
    (void)state;
    nsrv_cmd_t c;
    static const char hdr[] = "{\"code\":1}";
    const size_t hl = sizeof hdr - 1;

    /* Header length past the frame. */
    uint8_t *f = (uint8_t *)mkframe(NSRV_SER_JSON, hdr, hl, "xy", 2);
    f[7] = (uint8_t)(hl + 3);
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EFRAME);
    f[7] = (uint8_t)(hl + 2); /* exactly to the end: no body, still parses */
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EHEADER);
    f[5] = 1; /* H gains 64 KiB: still past */
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EFRAME);

    /* Serialize types other than 0 and 1. */
    static const uint8_t types[] = {2, 3, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(types); i++) {
        f = (uint8_t *)mkframe(types[i], hdr, hl, NULL, 0);
        assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_ESERTYPE);
    }
    /* The length check comes first, as in Java. */
    f = (uint8_t *)mkframe(2, hdr, hl, NULL, 0);
    f[7]++;
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EFRAME);

    /* frame_len must match N + 4 and hold the header-length word. */
    f = (uint8_t *)mkframe(NSRV_SER_JSON, hdr, hl, NULL, 0);
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len - 1, &arena, &c), NSRV_EFRAME);
    assert_int_equal(nsrv_cmd_decode(f, 7, &arena, &c), NSRV_EFRAME);
    assert_int_equal(nsrv_cmd_decode(f, 0, &arena, &c), NSRV_EFRAME);
    f[0] = 0x80;
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_EFRAME);

    /* Output untouched on error. */
    memset(&c, 0xab, sizeof c);
    f = (uint8_t *)mkframe(2, hdr, hl, NULL, 0);
    assert_int_equal(nsrv_cmd_decode(f, frame_buf.len, &arena, &c), NSRV_ESERTYPE);
    assert_int_equal(c.code, (int32_t)0xabababab);
}

/* ---- binary header decoding ---- */

typedef struct {
    int16_t code;
    uint8_t lang;
    int16_t version;
    int32_t opaque;
    int32_t flag;
} bin_fixed_t;

static void put_fixed(nsrv_buf_t *b, bin_fixed_t f) {
    nsrv_buf_append_be16(b, (uint16_t)f.code);
    nsrv_buf_append_u8(b, f.lang);
    nsrv_buf_append_be16(b, (uint16_t)f.version);
    nsrv_buf_append_be32(b, (uint32_t)f.opaque);
    nsrv_buf_append_be32(b, (uint32_t)f.flag);
}

static void put_entry(nsrv_buf_t *b, const char *k, const char *v) {
    nsrv_buf_append_be16(b, (uint16_t)strlen(k));
    nsrv_buf_append_c(b, k);
    nsrv_buf_append_be32(b, (uint32_t)strlen(v));
    nsrv_buf_append_c(b, v);
}

/* The ext map m as the header's last part: its length, then its entries. */
static void put_map(nsrv_buf_t *h, const nsrv_buf_t *m) {
    nsrv_buf_append_be32(h, (uint32_t)m->len);
    nsrv_buf_append(h, m->data, m->len);
}

static void test_bin_fields(void **state) {
    (void)state;
    nsrv_buf_t h = NSRV_BUF_INIT;
    put_fixed(&h, (bin_fixed_t){-32768, 200, -1, -2, 3});
    nsrv_buf_append_be32(&h, 3);
    nsrv_buf_append_c(&h, "r\"\n");
    nsrv_buf_t m = NSRV_BUF_INIT;
    put_entry(&m, "a", "1");
    put_entry(&m, "", "dropped: empty key");
    put_entry(&m, "empty", "");
    put_entry(&m, "b", "\xe4\xb8\xad");
    put_map(&h, &m);
    nsrv_cmd_t c;
    assert_int_equal(decode_bin(&h, &c), 0);
    assert_int_equal(c.ser_type, NSRV_SER_ROCKETMQ);
    assert_int_equal(c.code, -32768); /* signed int16 */
    assert_int_equal(c.language, -1); /* unknown byte */
    assert_int_equal(c.version, -1);
    assert_int_equal(c.opaque, -2);
    assert_int_equal(c.flag, 3);
    assert_str(c.remark, "r\"\n");
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 2);
    assert_str(nsrv_cmd_ext(&c, "a"), "1");
    assert_str(nsrv_cmd_ext(&c, "b"), "\xe4\xb8\xad");
    assert_null(nsrv_cmd_ext(&c, "empty").ptr);
    assert_null(nsrv_cmd_ext(&c, "").ptr);

    /* All entries dropped: the map was there (has_ext) but holds nothing. */
    nsrv_buf_reset(&h);
    put_fixed(&h, (bin_fixed_t){1, 9, 2, 3, 0});
    nsrv_buf_append_be32(&h, 0);
    nsrv_buf_append_be32(&h, 6);
    nsrv_buf_append_be16(&h, 0);
    nsrv_buf_append_be32(&h, 0);
    assert_int_equal(decode_bin(&h, &c), 0);
    assert_int_equal(c.language, NSRV_LANG_GO);
    assert_true(c.has_ext);
    assert_int_equal(c.n_ext, 0);
    assert_null(c.remark.ptr);

    /* Trailing bytes after the map inside H are ignored, as in Java. */
    nsrv_buf_append_c(&h, "junk");
    assert_int_equal(decode_bin(&h, &c), 0);

    nsrv_buf_deinit(&h);
    nsrv_buf_deinit(&m);
}

/* Decoded strings are valid UTF-8 (U+FFFD per maximal ill-formed subpart,
 * as Java's decoder), in both header types; a NUL survives decoding with its
 * exact length so that nsrv_cmd_find_nul can refuse the request. */
static void test_strings_valid_utf8_and_nul_found(void **state) {
    (void)state;
    nsrv_buf_t h = NSRV_BUF_INIT;
    put_fixed(&h, (bin_fixed_t){NSRV_REQ_GET_ROUTEINFO_BY_TOPIC, 0, 479, 1, 0});
    nsrv_buf_append_be32(&h, 2);
    nsrv_buf_append(&h, "r\xff", 2);
    nsrv_buf_t m = NSRV_BUF_INIT;
    put_entry(&m, "topic", "T\xff\xfe");
    put_entry(&m, "k\xf0\x9f\x98", "\xed\xa0\x80");
    put_map(&h, &m);
    nsrv_cmd_t c;
    assert_int_equal(decode_bin(&h, &c), 0);
    assert_str(c.remark, "r\xef\xbf\xbd");
    assert_str(nsrv_cmd_ext(&c, "topic"), "T\xef\xbf\xbd\xef\xbf\xbd");
    assert_str(nsrv_cmd_ext(&c, "k\xef\xbf\xbd"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    assert_null(nsrv_cmd_find_nul(&c));

    /* A raw NUL in a binary value, and a \u0000 in a JSON one. */
    nsrv_buf_reset(&h);
    nsrv_buf_reset(&m);
    put_fixed(&h, (bin_fixed_t){NSRV_REQ_PUT_KV_CONFIG, 0, 479, 1, 0});
    nsrv_buf_append_be32(&h, 0);
    put_entry(&m, "namespace", "NS");
    nsrv_buf_append_be16(&m, 3);
    nsrv_buf_append(&m, "key", 3);
    nsrv_buf_append_be32(&m, 8);
    nsrv_buf_append(&m, "victim\0x", 8);
    put_map(&h, &m);
    assert_int_equal(decode_bin(&h, &c), 0);
    const nsrv_ext_field_t *f = nsrv_cmd_find_nul(&c);
    assert_non_null(f);
    assert_str(f->key, "key");
    assert_int_equal(f->val.len, 8);

    assert_int_equal(decode_json("{\"code\":100,\"extFields\":{\"namespace\":\"NS\","
                                 "\"key\":\"victim\\u0000x\",\"value\":\"v\xc3\"}}",
                                 &c),
                     0);
    f = nsrv_cmd_find_nul(&c);
    assert_non_null(f);
    assert_str(f->key, "key");
    assert_int_equal(f->val.len, 8);
    assert_str(nsrv_cmd_ext(&c, "value"), "v\xef\xbf\xbd");
    assert_int_equal(decode_json("{\"code\":100,\"extFields\":{\"k\\u0000\":\"v\"}}", &c), 0);
    assert_non_null(nsrv_cmd_find_nul(&c));

    nsrv_buf_deinit(&h);
    nsrv_buf_deinit(&m);
}

/* Decodes one binary entry key=val (lengths given: they may hold NULs). */
static int decode_bin_entry(const char *k, size_t klen, const char *v, size_t vlen, nsrv_cmd_t *c) {
    nsrv_buf_t h = NSRV_BUF_INIT;
    put_fixed(&h, (bin_fixed_t){NSRV_REQ_GET_ROUTEINFO_BY_TOPIC, 0, 479, 1, 0});
    nsrv_buf_append_be32(&h, 0);
    nsrv_buf_append_be32(&h, (uint32_t)(2 + klen + 4 + vlen));
    nsrv_buf_append_be16(&h, (uint16_t)klen);
    nsrv_buf_append(&h, k, klen);
    nsrv_buf_append_be32(&h, (uint32_t)vlen);
    nsrv_buf_append(&h, v, vlen);
    int rc = decode_bin(&h, c);
    nsrv_buf_deinit(&h);
    return rc;
}

/* The binary decoder copies plain ASCII names without the UTF-8 pass and
 * records that they hold no NUL (ext_nul_free) and which keys it saw
 * (ext_keys): a NUL or a byte >= 0x80 at any position of a word or of the
 * tail must still be seen, and lookups must find exactly what a scan finds. */
static void test_bin_plain_names_fast_path(void **state) {
    (void)state;
    nsrv_cmd_t c;
    char v[24];
    for (size_t len = 1; len <= sizeof v; len++) {
        memset(v, 'a', sizeof v);
        assert_int_equal(decode_bin_entry("topic", 5, v, len, &c), 0);
        assert_true(c.ext_nul_free);
        assert_int_equal(nsrv_cmd_ext(&c, "topic").len, len);
        assert_null(nsrv_cmd_find_nul(&c));
        for (size_t at = 0; at < len; at++) {
            v[at] = '\0';
            assert_int_equal(decode_bin_entry("topic", 5, v, len, &c), 0);
            assert_false(c.ext_nul_free);
            assert_non_null(nsrv_cmd_find_nul(&c));
            assert_int_equal(nsrv_cmd_ext(&c, "topic").len, len);
            v[at] = '\xff'; /* replaced by U+FFFD: 2 bytes longer */
            assert_int_equal(decode_bin_entry("topic", 5, v, len, &c), 0);
            assert_int_equal(nsrv_cmd_ext(&c, "topic").len, len + 2);
            assert_null(nsrv_cmd_find_nul(&c));
            v[at] = 'a';
        }
    }
    assert_int_equal(decode_bin_entry("top\0c", 5, "v", 1, &c), 0);
    assert_non_null(nsrv_cmd_find_nul(&c));

    /* Many keys: each found with its own value, absent ones (however their
     * bits collide with present ones) not found, the last duplicate wins. */
    nsrv_buf_t h = NSRV_BUF_INIT, m = NSRV_BUF_INIT;
    put_fixed(&h, (bin_fixed_t){NSRV_REQ_GET_ROUTEINFO_BY_TOPIC, 0, 479, 1, 0});
    nsrv_buf_append_be32(&h, 0);
    char k[16], want[16];
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(want, sizeof want, "v%d", i);
        put_entry(&m, k, want);
    }
    put_entry(&m, "key7", "last");
    put_map(&h, &m);
    assert_int_equal(decode_bin(&h, &c), 0);
    assert_true(c.ext_keys != 0);
    for (int i = 0; i < 80; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(want, sizeof want, "v%d", i);
        if (i == 7)
            assert_str(nsrv_cmd_ext(&c, k), "last");
        else if (i < 40)
            assert_str(nsrv_cmd_ext(&c, k), want);
        else
            assert_null(nsrv_cmd_ext(&c, k).ptr);
    }
    /* A command built by hand (ext_keys 0) is scanned. */
    nsrv_ext_field_t f = {NSRV_STR_LIT("topic"), NSRV_STR_LIT("T")};
    nsrv_cmd_t built = {.ext = &f, .n_ext = 1};
    assert_str(nsrv_cmd_ext(&built, "topic"), "T");
    nsrv_buf_deinit(&h);
    nsrv_buf_deinit(&m);
}

/* Builds a binary header with a raw tail after the fixed 17 bytes. */
static int decode_bin_tail(const void *tail, size_t tail_len) {
    nsrv_buf_t h = NSRV_BUF_INIT;
    put_fixed(&h, (bin_fixed_t){NSRV_REQ_GET_ROUTEINFO_BY_TOPIC, 0, 479, 1, 0});
    nsrv_buf_append(&h, tail, tail_len);
    nsrv_cmd_t c;
    int rc = decode_bin(&h, &c);
    nsrv_buf_deinit(&h);
    return rc;
}

static void test_bin_bad_headers(void **state) {
    (void)state;
    /* Shorter than the 21-byte fixed part, including H = 0. */
    for (size_t n = 0; n < 21; n++) {
        uint8_t zero[21] = {0};
        nsrv_buf_t h = {(char *)zero, n, 0};
        nsrv_cmd_t c;
        assert_int_equal(decode_bin(&h, &c), NSRV_EHEADER);
    }
    static const struct {
        const char *what;
        const char *tail;
        size_t len;
    } cases[] = {
        {"remark len > remaining",
         "\x00\x00\x00\x09"
         "abcd"
         "\x00\x00\x00\x00",
         12},
        {"remark len huge",
         "\x7f\xff\xff\xff"
         "\x00\x00\x00\x00",
         8},
        {"remark len negative",
         "\xff\xff\xff\xff"
         "\x00\x00\x00\x00",
         8},
        {"no ext len after remark",
         "\x00\x00\x00\x02"
         "ab"
         "\x00\x00",
         8},
        {"ext len > remaining",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x07"
         "\x00\x01k\x00\x00",
         13},
        {"ext len negative",
         "\x00\x00\x00\x00"
         "\x80\x00\x00\x00",
         8},
        {"key len past map",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x03"
         "\x00\x05k",
         11},
        {"negative key len",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x06"
         "\x80\x00\x00\x00\x00\x00",
         14},
        {"key len -1",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x07"
         "\xff\xff"
         "k\x00\x00\x00\x00",
         15},
        {"half a key len",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x01"
         "\x00",
         9},
        {"no value len",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x05"
         "\x00\x01k\x00\x00",
         13},
        {"value len past map",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x08"
         "\x00\x01k\x00\x00\x00\x02v"
         "v",
         17},
        {"value len negative",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x07"
         "\x00\x01k\xff\xff\xff\xff",
         15},
        {"second entry truncated",
         "\x00\x00\x00\x00"
         "\x00\x00\x00\x0a"
         "\x00\x01k\x00\x00\x00\x01v"
         "\x00\x01",
         18},
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(cases); i++) {
        int rc = decode_bin_tail(cases[i].tail, cases[i].len);
        if (rc != NSRV_EHEADER)
            fail_msg("%s: got %d", cases[i].what, rc);
    }
    /* Sanity: the same shape with consistent lengths decodes. */
    assert_int_equal(decode_bin_tail("\x00\x00\x00\x00"
                                     "\x00\x00\x00\x08"
                                     "\x00\x01k\x00\x00\x00\x01v",
                                     16),
                     0);
}

/* ---- encoding and round trips ---- */

static void assert_same_cmd(const nsrv_cmd_t *a, const nsrv_cmd_t *b) {
    assert_int_equal(a->code, b->code);
    assert_int_equal(a->language, b->language);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->opaque, b->opaque);
    assert_int_equal(a->flag, b->flag);
    assert_true(nsrv_str_eq(a->remark, b->remark));
    assert_int_equal(a->has_ext, b->has_ext);
    assert_int_equal(a->n_ext, b->n_ext);
    for (size_t i = 0; i < a->n_ext; i++) {
        assert_true(nsrv_str_eq(a->ext[i].key, b->ext[i].key));
        assert_true(nsrv_str_eq(a->ext[i].val, b->ext[i].val));
    }
    assert_int_equal(a->body_len, b->body_len);
    if (a->body_len)
        assert_memory_equal(a->body, b->body, a->body_len);
    assert_int_equal(a->ser_type, b->ser_type);
}

/* Encodes, frames, decodes, compares, and re-encodes to the same bytes. */
static void roundtrip(const nsrv_cmd_t *in) {
    nsrv_buf_t out = NSRV_BUF_INIT;
    assert_int_equal(nsrv_cmd_encode(&out, in), 0);
    size_t flen = 0;
    assert_int_equal(
        nsrv_frame_peek((const uint8_t *)out.data, out.len, NSRV_FRAME_MAX_DEFAULT, &flen), 0);
    assert_int_equal(flen, out.len);
    nsrv_cmd_t back;
    assert_int_equal(nsrv_cmd_decode((const uint8_t *)out.data, out.len, &arena, &back), 0);
    assert_same_cmd(in, &back);
    nsrv_buf_t again = NSRV_BUF_INIT;
    assert_int_equal(nsrv_cmd_encode(&again, &back), 0);
    assert_int_equal(again.len, out.len);
    assert_memory_equal(again.data, out.data, out.len);
    nsrv_buf_deinit(&again);
    nsrv_buf_deinit(&out);
}

static void test_roundtrip_many_ext(void **state) {
    (void)state;
    enum { N = 300 };
    nsrv_ext_field_t *ext = nsrv_calloc(N, sizeof *ext);
    char *keys = nsrv_calloc(N, 32);
    char *vals = nsrv_calloc(N, 64);
    for (size_t i = 0; i < N; i++) {
        int kl = snprintf(keys + 32 * i, 32, "key_%zu", i);
        int vl = snprintf(vals + 64 * i, 64, "v\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 %zu \"q\"\t\\",
                          i * 7919);
        ext[i].key = (nsrv_str_t){keys + 32 * i, (size_t)kl};
        ext[i].val = (nsrv_str_t){vals + 64 * i, (size_t)vl};
    }
    static const uint8_t body[] = {0, 1, 2, 0xff, '{', '}'};
    for (uint8_t type = 0; type < 2; type++) {
        nsrv_cmd_t c = {
            .code = NSRV_REQ_REGISTER_BROKER,
            .language = NSRV_LANG_CPP,
            .version = 413,
            .opaque = 0x7fffffff,
            .flag = NSRV_FLAG_ONEWAY,
            .remark = NSRV_STR_LIT("line1\nline2 \"quoted\" back\\slash \x01\x7f \xe2\x80\xa8 end"),
            .has_ext = true,
            .ext = ext,
            .n_ext = N,
            .body = body,
            .body_len = sizeof body,
            .ser_type = type,
        };
        roundtrip(&c);
        nsrv_cmd_t back;
        nsrv_buf_t out = NSRV_BUF_INIT;
        assert_int_equal(nsrv_cmd_encode(&out, &c), 0);
        assert_int_equal(nsrv_cmd_decode((const uint8_t *)out.data, out.len, &arena, &back), 0);
        assert_str(nsrv_cmd_ext(&back, "key_299"), vals + 64 * 299);
        assert_str(nsrv_cmd_ext(&back, "key_0"), vals);
        nsrv_buf_deinit(&out);
        nsrv_arena_reset(&arena);
    }
    nsrv_free(ext);
    nsrv_free(keys);
    nsrv_free(vals);
}

static void test_roundtrip_small_cases(void **state) {
    (void)state;
    nsrv_ext_field_t one[] = {{NSRV_STR_LIT("k"), NSRV_STR_LIT("\xf0\x9f\x98\x80")}};
    for (uint8_t type = 0; type < 2; type++) {
        nsrv_cmd_t c = {.language = NSRV_LANG_JAVA, .ser_type = type};
        roundtrip(&c); /* all defaults, no ext, no remark, no body */
        c.code = -1;
        c.version = -2;
        c.opaque = INT32_MIN;
        c.flag = -1;
        c.language = NSRV_LANG_NODE_JS;
        c.has_ext = true;
        c.ext = one;
        c.n_ext = 1;
        roundtrip(&c);
        /* JSON keeps "extFields":{} for has_ext with no fields. */
        if (type == NSRV_SER_JSON) {
            c.n_ext = 0;
            roundtrip(&c);
        }
        nsrv_arena_reset(&arena);
    }
}

static void test_encode_json_form(void **state) {
    (void)state;
    nsrv_ext_field_t ext[] = {
        {NSRV_STR_LIT("z"), NSRV_STR_LIT("1")},
        {NSRV_STR_LIT("skipped"), NSRV_STR_NULL},
        {NSRV_STR_LIT("a/b"), NSRV_STR_LIT("\xc3\xa9\"\n\x7f")},
    };
    nsrv_cmd_t c = {
        .code = 1,
        .language = -1, /* unknown: omitted, as fastjson omits null */
        .version = 479,
        .opaque = 9,
        .flag = 1,
        .remark = {"", 0}, /* present but empty: written as "" */
        .has_ext = true,
        .ext = ext,
        .n_ext = 3,
        .ser_type = NSRV_SER_JSON,
    };
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_buf_append_c(&out, "PREFIX"); /* encode appends */
    assert_int_equal(nsrv_cmd_encode(&out, &c), 0);
    static const char want[] = "{\"code\":1,\"extFields\":{\"z\":\"1\",\"a/b\":\"\xc3\xa9\\\"\\n"
                               "\\u007F\"},\"flag\":1,\"opaque\":9,\"remark\":\"\","
                               "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
    assert_int_equal(out.len, 6 + 8 + strlen(want));
    assert_memory_equal(out.data, "PREFIX", 6);
    assert_int_equal(nsrv_load_be32(out.data + 6), 4 + strlen(want));
    assert_int_equal(nsrv_load_be32(out.data + 10), strlen(want));
    assert_memory_equal(out.data + 14, want, strlen(want));
    /* Decoding restores language to the JAVA default, remark "" to absent. */
    nsrv_cmd_t back;
    assert_int_equal(nsrv_cmd_decode((const uint8_t *)out.data + 6, out.len - 6, &arena, &back), 0);
    assert_int_equal(back.language, NSRV_LANG_JAVA);
    assert_null(back.remark.ptr);
    assert_int_equal(back.n_ext, 2);
    nsrv_buf_deinit(&out);

    /* Binary: unknown language written as JAVA (0). */
    c.ser_type = NSRV_SER_ROCKETMQ;
    assert_int_equal(nsrv_cmd_encode(&out, &c), 0);
    assert_int_equal((uint8_t)out.data[8 + 2], NSRV_LANG_JAVA);
    nsrv_buf_deinit(&out);
}

/* The head and then the body are byte for byte the whole frame, in both serializations. */
static void test_encode_head_then_body(void **state) {
    (void)state;
    static const uint8_t body[] = "{\"brokerDatas\":[]}";
    nsrv_ext_field_t ext = {NSRV_STR_LIT("k"), NSRV_STR_LIT("v")};
    for (uint8_t ser = 0; ser <= 1; ser++) {
        nsrv_cmd_t cmd = {.code = 0,
                          .opaque = 7,
                          .flag = NSRV_FLAG_RESPONSE,
                          .has_ext = true,
                          .ext = &ext,
                          .n_ext = 1,
                          .body = body,
                          .body_len = sizeof body - 1,
                          .ser_type = ser};
        nsrv_buf_t whole = NSRV_BUF_INIT, head = NSRV_BUF_INIT;
        assert_int_equal(nsrv_cmd_encode(&whole, &cmd), 0);
        assert_int_equal(nsrv_cmd_encode_head(&head, &cmd), 0);
        assert_int_equal(head.len + cmd.body_len, whole.len);
        nsrv_buf_append(&head, body, cmd.body_len);
        assert_memory_equal(head.data, whole.data, whole.len);
        nsrv_buf_deinit(&whole);
        nsrv_buf_deinit(&head);
    }
}

static void test_encode_too_big(void **state) {
    (void)state;
    size_t rl = NSRV_HDR_LEN_MAX - NSRV_HDR_ROCKETMQ_FIXED + 1;
    char *remark = nsrv_calloc(1, rl);
    memset(remark, 'r', rl);
    nsrv_cmd_t c = {.remark = {remark, rl}, .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv_buf_append_c(&out, "keep");
    assert_int_equal(nsrv_cmd_encode(&out, &c), NSRV_ETOOBIG);
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "keep");
    c.ser_type = NSRV_SER_JSON;
    assert_int_equal(nsrv_cmd_encode(&out, &c), NSRV_ETOOBIG);
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "keep");
    /* One byte less fits the 24-bit header length exactly (binary). */
    c.remark.len = rl - 1;
    c.ser_type = NSRV_SER_ROCKETMQ;
    assert_int_equal(nsrv_cmd_encode(&out, &c), 0);
    assert_int_equal(nsrv_load_be32(out.data + 8), (1u << 24) | NSRV_HDR_LEN_MAX);
    nsrv_buf_deinit(&out);
    nsrv_free(remark);
}

static void test_init_response(void **state) {
    (void)state;
    nsrv_cmd_t req = {.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                      .language = NSRV_LANG_GO,
                      .version = 300,
                      .opaque = 77,
                      .flag = NSRV_FLAG_ONEWAY,
                      .remark = NSRV_STR_LIT("x"),
                      .ser_type = NSRV_SER_ROCKETMQ};
    nsrv_cmd_t r;
    nsrv_cmd_init_response(&r, &req, 3);
    assert_int_equal(r.code, 3);
    assert_int_equal(r.flag, NSRV_FLAG_RESPONSE); /* exactly 1, oneway bit not copied */
    assert_int_equal(r.opaque, 77);
    assert_int_equal(r.language, NSRV_LANG_JAVA);
    assert_int_equal(r.version, NSRV_MQ_CURRENT);
    assert_int_equal(r.ser_type, NSRV_SER_ROCKETMQ);
    assert_null(r.remark.ptr);
    assert_false(r.has_ext);
    assert_null(r.body);
}

NSRV_TEST_MAIN(setup, teardown, cmocka_unit_test(test_json_defaults),
               cmocka_unit_test(test_json_any_order_unknown_keys),
               cmocka_unit_test(test_json_language), cmocka_unit_test(test_json_int_fields_lenient),
               cmocka_unit_test(test_json_remark), cmocka_unit_test(test_json_ext_values),
               cmocka_unit_test(test_json_bad_headers), cmocka_unit_test(test_frame_errors),
               cmocka_unit_test(test_bin_fields),
               cmocka_unit_test(test_strings_valid_utf8_and_nul_found),
               cmocka_unit_test(test_bin_plain_names_fast_path),
               cmocka_unit_test(test_bin_bad_headers), cmocka_unit_test(test_roundtrip_many_ext),
               cmocka_unit_test(test_roundtrip_small_cases),
               cmocka_unit_test(test_encode_json_form),
               cmocka_unit_test(test_encode_head_then_body), cmocka_unit_test(test_encode_too_big),
               cmocka_unit_test(test_init_response))
