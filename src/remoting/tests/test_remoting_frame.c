/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing: nsrv_frame_peek limits (exactly the cap, one over, negative,
 * N < 4, partial prefix) and a stream of several frames fed one byte at a
 * time and in pseudo-random splits, decoding each frame as it completes.
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

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void test_partial_prefix(void **state) {
    (void)state;
    const uint8_t p[4] = {0, 0, 0, 8};
    size_t flen = 12345;
    assert_int_equal(nsrv_frame_peek(NULL, 0, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_AGAIN);
    for (size_t n = 0; n < 4; n++)
        assert_int_equal(nsrv_frame_peek(p, n, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_AGAIN);
    /* Prefix complete but the frame is not. */
    assert_int_equal(nsrv_frame_peek(p, 4, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_AGAIN);
    assert_int_equal(flen, 12345); /* untouched unless 0 is returned */
    /* Even a bad prefix cannot be judged from 3 bytes. */
    const uint8_t neg[3] = {0xff, 0xff, 0xff};
    assert_int_equal(nsrv_frame_peek(neg, 3, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_AGAIN);
}

static void test_bad_lengths(void **state) {
    (void)state;
    uint8_t p[8] = {0};
    size_t flen;
    static const uint32_t bad[] = {0x80000000u, 0xffffffffu, 0xfffffffcu, 0, 1, 2, 3};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        put_be32(p, bad[i]);
        /* Decided from the prefix alone. */
        assert_int_equal(nsrv_frame_peek(p, 4, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_EFRAME);
        assert_int_equal(nsrv_frame_peek(p, 8, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_EFRAME);
    }
    /* N = 4: the smallest legal frame, just the header-length word. */
    put_be32(p, 4);
    assert_int_equal(nsrv_frame_peek(p, 7, NSRV_FRAME_MAX_DEFAULT, &flen), NSRV_AGAIN);
    assert_int_equal(nsrv_frame_peek(p, 8, NSRV_FRAME_MAX_DEFAULT, &flen), 0);
    assert_int_equal(flen, 8);
}

static void test_cap_small(void **state) {
    (void)state;
    uint8_t p[64] = {0};
    size_t flen = 0;
    put_be32(p, 60); /* 4 + 60 = 64 = the cap */
    assert_int_equal(nsrv_frame_peek(p, 4, 64, &flen), NSRV_AGAIN);
    assert_int_equal(nsrv_frame_peek(p, 63, 64, &flen), NSRV_AGAIN);
    assert_int_equal(nsrv_frame_peek(p, 64, 64, &flen), 0);
    assert_int_equal(flen, 64);
    put_be32(p, 61); /* one over */
    assert_int_equal(nsrv_frame_peek(p, 4, 64, &flen), NSRV_EFRAME);
    assert_int_equal(nsrv_frame_peek(p, 64, 64, &flen), NSRV_EFRAME);
}

/* The Java default: N = 16 777 212 is the largest legal length. */
static void test_cap_default(void **state) {
    (void)state;
    size_t cap = NSRV_FRAME_MAX_DEFAULT;
    uint8_t *p = nsrv_calloc(1, cap);
    size_t flen = 0;
    put_be32(p, (uint32_t)(cap - 4));
    assert_int_equal(nsrv_frame_peek(p, 4, cap, &flen), NSRV_AGAIN);
    assert_int_equal(nsrv_frame_peek(p, cap - 1, cap, &flen), NSRV_AGAIN);
    assert_int_equal(nsrv_frame_peek(p, cap, cap, &flen), 0);
    assert_int_equal(flen, cap);

    /* A JSON header with the whole rest as body decodes at the cap. */
    static const char hdr[] = "{\"code\":0}";
    put_be32(p + 4, (uint32_t)(sizeof hdr - 1));
    memcpy(p + 8, hdr, sizeof hdr - 1);
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 0);
    nsrv_cmd_t c;
    assert_int_equal(nsrv_cmd_decode(p, cap, &arena, &c), 0);
    assert_int_equal(c.body_len, cap - 8 - (sizeof hdr - 1));
    assert_ptr_equal(c.body, p + 8 + sizeof hdr - 1);
    nsrv_arena_deinit(&arena);

    put_be32(p, (uint32_t)(cap - 3));
    assert_int_equal(nsrv_frame_peek(p, 4, cap, &flen), NSRV_EFRAME);
    nsrv_free(p);
}

/* A stream of mixed frames, and the commands they should decode to. */
typedef struct {
    nsrv_buf_t stream;
    int32_t opaques[16];
    size_t n;
} stream_t;

static void build_stream(stream_t *s) {
    nsrv_buf_init(&s->stream);
    s->n = 0;
    static const char body[] = "some body bytes \x00\x01\x02";
    for (int i = 0; i < 12; i++) {
        char val[32];
        int vl = snprintf(val, sizeof val, "value-%d", i);
        nsrv_ext_field_t ext[] = {{NSRV_STR_LIT("k"), {val, (size_t)vl}},
                                  {NSRV_STR_LIT("topic"), NSRV_STR_LIT("T\xc3\xa9st")}};
        nsrv_cmd_t c = {
            .code = 100 + i,
            .language = i % 14,
            .version = 479,
            .opaque = 1000 + i,
            .flag = i % 3 == 0 ? NSRV_FLAG_ONEWAY : 0,
            .remark = i % 2 ? NSRV_STR_LIT("r\"\n") : NSRV_STR_NULL,
            .has_ext = i % 4 != 0,
            .ext = i % 4 != 0 ? ext : NULL,
            .n_ext = i % 4 != 0 ? 2 : 0,
            .body = i % 5 ? (const uint8_t *)body : NULL,
            .body_len = i % 5 ? sizeof body - 1 : 0,
            .ser_type = (uint8_t)(i % 2),
        };
        assert_int_equal(nsrv_cmd_encode(&s->stream, &c), 0);
        s->opaques[s->n++] = c.opaque;
    }
}

/* Feeds the stream in chunks whose sizes come from next_chunk. */
static void feed_stream(const stream_t *s, size_t (*next_chunk)(uint32_t *), uint32_t seed) {
    nsrv_buf_t rx = NSRV_BUF_INIT;
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 0);
    size_t sent = 0, got = 0;
    while (sent < s->stream.len) {
        size_t want = next_chunk(&seed); /* NSRV_MIN evaluates its arguments twice */
        size_t chunk = NSRV_MIN(want, s->stream.len - sent);
        nsrv_buf_append(&rx, s->stream.data + sent, chunk);
        sent += chunk;
        for (;;) {
            size_t flen;
            int rc =
                nsrv_frame_peek((const uint8_t *)rx.data, rx.len, NSRV_FRAME_MAX_DEFAULT, &flen);
            if (rc == NSRV_AGAIN)
                break;
            if (rc != 0)
                fail_msg("peek %d: rx.len %zu sent %zu got %zu first %08x chunk %zu", rc, rx.len,
                         sent, got, nsrv_load_be32(rx.data), chunk);
            nsrv_cmd_t c;
            assert_int_equal(nsrv_cmd_decode((const uint8_t *)rx.data, flen, &arena, &c), 0);
            assert_true(got < s->n);
            assert_int_equal(c.opaque, s->opaques[got]);
            assert_int_equal(c.code, 100 + (int32_t)got);
            assert_int_equal(c.ser_type, got % 2);
            if (got % 4 != 0)
                assert_memory_equal(nsrv_cmd_ext(&c, "k").ptr, "value-", 6);
            got++;
            memmove(rx.data, rx.data + flen, rx.len - flen);
            rx.len -= flen;
            nsrv_arena_reset(&arena);
        }
    }
    assert_int_equal(got, s->n);
    assert_int_equal(rx.len, 0);
    nsrv_buf_deinit(&rx);
    nsrv_arena_deinit(&arena);
}

static size_t one_byte(uint32_t *seed) {
    (void)seed;
    return 1;
}

static size_t random_split(uint32_t *seed) {
    uint32_t x = *seed;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *seed = x;
    return 1 + x % 97;
}

static size_t whole(uint32_t *seed) {
    (void)seed;
    return SIZE_MAX;
}

/* Feeds the stream `runs` times, cut by next_chunk from the seeds k * 2654435761 | 1. */
static void feed_runs(size_t (*next_chunk)(uint32_t *), uint32_t runs) {
    stream_t s;
    build_stream(&s);
    for (uint32_t k = 1; k <= runs; k++)
        feed_stream(&s, next_chunk, k * 2654435761u | 1u);
    nsrv_buf_deinit(&s.stream);
}

static void test_stream_byte_at_a_time(void **state) {
    (void)state;
    feed_runs(one_byte, 1);
}

static void test_stream_random_splits(void **state) {
    (void)state;
    feed_runs(random_split, 199);
}

static void test_stream_all_at_once(void **state) {
    (void)state;
    feed_runs(whole, 1);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_partial_prefix),
               cmocka_unit_test(test_bad_lengths), cmocka_unit_test(test_cap_small),
               cmocka_unit_test(test_cap_default), cmocka_unit_test(test_stream_byte_at_a_time),
               cmocka_unit_test(test_stream_random_splits),
               cmocka_unit_test(test_stream_all_at_once))
