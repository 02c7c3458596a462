/* SPDX-License-Identifier: Apache-2.0 */
/*
 * UTF-8 validation, replacement and code-point-safe truncation.
 *
 * nsrvd holds only valid UTF-8: every string that arrives from outside
 * (header fields, bodies, files, peers) is decoded here the way Java's
 * UTF-8 decoder does it (java.nio, and new String(bytes, UTF_8)): each
 * maximal subpart of an ill-formed sequence becomes one U+FFFD (the Unicode
 * Standard's "substitution of maximal subparts", Table 3-7 of well-formed
 * sequences). So "\xF0\x9F\x98" is one U+FFFD, "\xC0\x80" two, an encoded
 * surrogate "\xED\xA0\x80" three. Pure; fuzzed by src/base/fuzz/fuzz_utf8.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"

/* The UTF-8 form of U+FFFD REPLACEMENT CHARACTER. */
#define NSRV_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Whether the 8 bytes of w are all ASCII and none is zero (the exact
 * has-zero-byte test: no false positives once no high bit is set). */
static inline bool nsrv__ascii_word_plain(uint64_t w) {
    const uint64_t high = 0x8080808080808080ull, ones = 0x0101010101010101ull;
    return !((w & high) | ((w - ones) & ~w & high));
}

/*
 * Whether every byte of s[0..n) passes word_ok, which tests 8 bytes at once and must pass
 * 'a's. Whole words: from 4 bytes on, the last word overlaps the ones before it; under 4,
 * the bytes are padded with 'a's into one word, so there is no byte loop for a tail.
 * Inline with a constant word_ok, it compiles to the straight loop.
 */
static inline bool nsrv__words_all(const uint8_t *s, size_t n, bool (*word_ok)(uint64_t)) {
    uint64_t w;
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            if (!word_ok(w))
                return false;
        }
        memcpy(&w, s + n - 8, 8);
        return word_ok(w);
    }
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return word_ok((uint64_t)a << 32 | b);
    }
    w = 0x6161616161616161ull; /* 'a' x 8 */
    if (n)
        memcpy(&w, s, n);
    return word_ok(w);
}

/*
 * Whether p[0..n) is ASCII without a NUL: valid UTF-8 as it is and a whole C
 * string, so it needs neither the replacement pass nor a NUL scan later. Every
 * name a client sends is, so this looks at whole words (nsrv__words_all).
 */
static inline bool nsrv_ascii_plain(const void *p, size_t n) {
    return nsrv__words_all(p, n, nsrv__ascii_word_plain);
}

/*
 * Looks at the sequence starting at s[0] (left >= 1 bytes available).
 * @return its length (1-4) when it is a well-formed code point (stored in
 *         *cp), or 0 when it is not; then *bad is the length of the maximal
 *         ill-formed subpart to replace by one U+FFFD (1-3).
 */
size_t nsrv_utf8_next(const unsigned char *s, size_t left, uint32_t *cp, size_t *bad);

/* Length of the longest well-formed prefix of s[0..len); == len when valid. */
size_t nsrv_utf8_valid_prefix(const char *s, size_t len);

static inline bool nsrv_utf8_valid(const char *s, size_t len) {
    return nsrv_utf8_valid_prefix(s, len) == len;
}

/* Bytes s[0..len) takes once every ill-formed subpart is replaced by U+FFFD. */
size_t nsrv_utf8_sanitized_len(const char *s, size_t len);

/* Appends s[0..len) to out with every ill-formed subpart replaced by U+FFFD. */
void nsrv_utf8_sanitize_append(nsrv_buf_t *out, const char *s, size_t len);

/*
 * Copies s[0..len) into the arena, NUL-terminated, ill-formed subparts
 * replaced by U+FFFD; *out_len (may be NULL) gets the copy's length. Valid
 * input is copied as it is, so this costs one scan more than a plain copy.
 */
char *nsrv_utf8_arena_dup(nsrv_arena_t *a, const char *s, size_t len, size_t *out_len);

/* The same with a heap copy (nsrv_free it). */
char *nsrv_utf8_dup(const char *s, size_t len, size_t *out_len);

/*
 * Length of the longest prefix of s[0..len) that is at most max bytes and
 * does not end inside a code point: cutting there never splits a character.
 * A trailing ill-formed byte is treated as one character.
 */
size_t nsrv_utf8_trunc_len(const char *s, size_t len, size_t max);
