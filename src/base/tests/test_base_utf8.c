/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 replacement and truncation (include/nsrv/utf8.h). The vectors follow
 * the Unicode Standard's substitution of maximal subparts, which is what
 * Java's UTF-8 decoder (java.nio, new String(bytes, UTF_8)) implements: one
 * U+FFFD per maximal ill-formed subpart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/utf8.h"
#include "testlib.h"

typedef struct {
    const char *in;
    size_t in_len;
    const char *out;
    size_t out_len;
} vector_t;

static const vector_t vectors[] = {
    {"", 0, "", 0},
    {"\x70\x6C\x61\x69\x6E", 5, "\x70\x6C\x61\x69\x6E", 5},
    {"\xC3\xA9", 2, "\xC3\xA9", 2},
    {"\xFF", 1, "\xEF\xBF\xBD", 3},
    {"\xFE\xFF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD", 6},
    {"\x80", 1, "\xEF\xBF\xBD", 3},
    {"\xBF\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD", 6},
    {"\xC0\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD", 6},
    {"\xC1\xBF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD", 6},
    {"\xC2", 1, "\xEF\xBF\xBD", 3},
    {"\xC2\x41", 2, "\xEF\xBF\xBD\x41", 4},
    {"\xE0\x80\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 9},
    {"\xE0\xA0", 2, "\xEF\xBF\xBD", 3},
    {"\xE0\xA0\x80", 3, "\xE0\xA0\x80", 3},
    {"\xE2\x82", 2, "\xEF\xBF\xBD", 3},
    {"\xE2\x82\xAC", 3, "\xE2\x82\xAC", 3},
    {"\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 9},
    {"\xED\x9F\xBF", 3, "\xED\x9F\xBF", 3},
    {"\xEF\xBF\xBF", 3, "\xEF\xBF\xBF", 3},
    {"\xF0\x80\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 12},
    {"\xF0\x90\x80", 3, "\xEF\xBF\xBD", 3},
    {"\xF0\x90\x80\x80", 4, "\xF0\x90\x80\x80", 4},
    {"\xF0\x9F\x98", 3, "\xEF\xBF\xBD", 3},
    {"\xF0\x9F\x98\x41", 4, "\xEF\xBF\xBD\x41", 4},
    {"\xF4\x8F\xBF\xBF", 4, "\xF4\x8F\xBF\xBF", 4},
    {"\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 12},
    {"\xF5\x80\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 12},
    {"\xF8\x88\x80\x80\x80", 5, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 15},
    {"\x61\xE4\xB8\xE4\xB8\xAD\x62", 7, "\x61\xEF\xBF\xBD\xE4\xB8\xAD\x62", 8},
    {"\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", 9,
     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x41", 13},
    {"\x54\x00\x6E\x75\x6C", 5, "\x54\x00\x6E\x75\x6C", 5},
    {"\xF0\x9F\x98\x80\xF0", 5, "\xF0\x9F\x98\x80\xEF\xBF\xBD", 7},
};

static void test_replacement_vectors(void **state) {
    (void)state;
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 4096);
    for (size_t i = 0; i < NSRV_ARRAY_LEN(vectors); i++) {
        const vector_t *v = &vectors[i];
        bool valid = v->in_len == v->out_len && memcmp(v->in, v->out, v->in_len) == 0;
        assert_int_equal(nsrv_utf8_valid(v->in, v->in_len), valid);
        assert_int_equal(nsrv_utf8_sanitized_len(v->in, v->in_len), v->out_len);

        size_t n = 0;
        char *a = nsrv_utf8_arena_dup(&arena, v->in, v->in_len, &n);
        assert_int_equal(n, v->out_len);
        assert_memory_equal(a, v->out, n);
        assert_int_equal(a[n], '\0');

        char *h = nsrv_utf8_dup(v->in, v->in_len, &n);
        assert_int_equal(n, v->out_len);
        assert_memory_equal(h, v->out, n);
        nsrv_free(h);

        nsrv_buf_t b = NSRV_BUF_INIT;
        nsrv_utf8_sanitize_append(&b, v->in, v->in_len);
        assert_int_equal(b.len, v->out_len);
        if (b.len)
            assert_memory_equal(b.data, v->out, b.len);
        nsrv_buf_deinit(&b);
    }
    nsrv_arena_deinit(&arena);
}

static void test_valid_prefix_and_next(void **state) {
    (void)state;
    assert_int_equal(nsrv_utf8_valid_prefix("abcdefghij\xC3\xA9\xFF", 13), 12);
    assert_int_equal(nsrv_utf8_valid_prefix("0123456789abcdef\x80", 17), 16);
    uint32_t cp = 0;
    size_t bad = 0;
    assert_int_equal(nsrv_utf8_next((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp, &bad), 4);
    assert_int_equal(cp, 0x1F600);
    assert_int_equal(nsrv_utf8_next((const unsigned char *)"\xE4\xB8\xAD", 3, &cp, &bad), 3);
    assert_int_equal(cp, 0x4E2D);
    assert_int_equal(nsrv_utf8_next((const unsigned char *)"\xF0\x9F\x98", 3, &cp, &bad), 0);
    assert_int_equal(bad, 3);
    assert_int_equal(nsrv_utf8_next((const unsigned char *)"\xED\xA0\x80", 3, &cp, &bad), 0);
    assert_int_equal(bad, 1);
}

/* Every output of sanitize is valid, for random input biased to high bytes. */
static void test_random_sanitize_is_valid(void **state) {
    (void)state;
    srand(7);
    unsigned char in[64];
    for (int round = 0; round < 20000; round++) {
        size_t len = (size_t)(rand() % (int)sizeof in);
        for (size_t i = 0; i < len; i++)
            in[i] = (unsigned char)(rand() % 3 == 0 ? rand() % 128 : 0x80 + rand() % 128);
        size_t n = 0;
        char *out = nsrv_utf8_dup((const char *)in, len, &n);
        assert_true(nsrv_utf8_valid(out, n));
        if (nsrv_utf8_valid((const char *)in, len)) {
            assert_int_equal(n, len);
            assert_memory_equal(out, in, len);
        }
        nsrv_free(out);
    }
}

static void test_trunc_respects_code_points(void **state) {
    (void)state;
    /* "a中😀": 1 + 3 + 4 bytes. */
    const char *s = "a\xE4\xB8\xAD\xF0\x9F\x98\x80";
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 100), 8);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 8), 8);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 7), 4);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 4), 4);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 3), 1);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 1), 1);
    assert_int_equal(nsrv_utf8_trunc_len(s, 8, 0), 0);
    /* An ill-formed byte counts as one character. */
    assert_int_equal(nsrv_utf8_trunc_len("a\xFF\xE4\xB8\xAD", 5, 3), 2);
    /* Any cut of valid text stays valid. */
    char big[300];
    size_t n = 0;
    while (n + 3 <= sizeof big) {
        memcpy(big + n, "\xE4\xB8\xAD", 3);
        n += 3;
    }
    for (size_t max = 0; max <= n; max++) {
        size_t cut = nsrv_utf8_trunc_len(big, n, max);
        assert_true(cut <= max && max - cut < 3);
        assert_true(nsrv_utf8_valid(big, cut));
    }
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_replacement_vectors),
               cmocka_unit_test(test_valid_prefix_and_next),
               cmocka_unit_test(test_random_sanitize_is_valid),
               cmocka_unit_test(test_trunc_respects_code_points))
