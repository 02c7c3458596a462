/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation, replacement and truncation (include/nsrv/utf8.h). */
#include "nsrv/utf8.h"

#include <string.h>

#include "nsrv/alloc.h"

/*
 * The range a byte may take at position i (1-3) of a sequence led by b0,
 * per the table of well-formed sequences: the second byte is narrowed after
 * E0, ED, F0 and F4 (no overlongs, surrogates or code points past U+10FFFF).
 */
static bool second_ok(unsigned char b0, unsigned char b1) {
    switch (b0) {
    case 0xE0:
        return b1 >= 0xA0 && b1 <= 0xBF;
    case 0xED:
        return b1 >= 0x80 && b1 <= 0x9F;
    case 0xF0:
        return b1 >= 0x90 && b1 <= 0xBF;
    case 0xF4:
        return b1 >= 0x80 && b1 <= 0x8F;
    default:
        return b1 >= 0x80 && b1 <= 0xBF;
    }
}

size_t nsrv_utf8_next(const unsigned char *s, size_t left, uint32_t *cp, size_t *bad) {
    unsigned char b0 = s[0];
    size_t need;
    uint32_t v;
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
        v = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        v = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        v = b0 & 0x07u;
    } else {
        *bad = 1; /* a continuation byte, C0, C1 or F5-FF never starts a sequence */
        return 0;
    }
    size_t i = 1;
    for (; i < need; i++) {
        if (i >= left)
            break;
        unsigned char b = s[i];
        bool ok = i == 1 ? second_ok(b0, b) : (b >= 0x80 && b <= 0xBF);
        if (!ok)
            break;
        v = (v << 6) | (b & 0x3Fu);
    }
    if (i < need) {
        *bad = i; /* the lead and the continuation bytes that still fitted */
        return 0;
    }
    *cp = v;
    return need;
}

size_t nsrv_utf8_valid_prefix(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        /* ASCII runs are the common case: skip them eight bytes at a time. */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t bad;
        size_t n = nsrv_utf8_next(p + i, len - i, &cp, &bad);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

/* The one walk over s[0..len): valid runs copied, each maximal ill-formed subpart replaced by
 * U+FFFD. Writes to d when d is not NULL (room for the result is known); returns the length. */
static size_t sanitize_into(char *d, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0, i = 0;
    while (i < len) {
        size_t ok = nsrv_utf8_valid_prefix(s + i, len - i);
        if (d)
            memcpy(d + n, s + i, ok);
        n += ok;
        i += ok;
        if (i >= len)
            break;
        uint32_t cp;
        size_t bad;
        nsrv_utf8_next(p + i, len - i, &cp, &bad);
        if (d)
            memcpy(d + n, NSRV_UTF8_REPLACEMENT, 3);
        n += 3;
        i += bad;
    }
    return n;
}

size_t nsrv_utf8_sanitized_len(const char *s, size_t len) {
    return sanitize_into(NULL, s, len);
}

void nsrv_utf8_sanitize_append(nsrv_buf_t *out, const char *s, size_t len) {
    size_t n = sanitize_into(NULL, s, len);
    nsrv_buf_reserve(out, n);
    out->len += sanitize_into(out->data + out->len, s, len);
    out->data[out->len] = '\0';
}

char *nsrv_utf8_arena_dup(nsrv_arena_t *a, const char *s, size_t len, size_t *out_len) {
    size_t valid = nsrv_utf8_valid_prefix(s, len);
    if (valid == len) {
        if (out_len)
            *out_len = len;
        return nsrv_arena_strndup(a, s, len);
    }
    size_t n = valid + nsrv_utf8_sanitized_len(s + valid, len - valid);
    char *d = nsrv_arena_alloc(a, n + 1);
    memcpy(d, s, valid);
    sanitize_into(d + valid, s + valid, len - valid);
    d[n] = '\0';
    if (out_len)
        *out_len = n;
    return d;
}

char *nsrv_utf8_dup(const char *s, size_t len, size_t *out_len) {
    size_t n = nsrv_utf8_sanitized_len(s, len);
    char *d = nsrv_malloc(n + 1);
    sanitize_into(d, s, len);
    d[n] = '\0';
    if (out_len)
        *out_len = n;
    return d;
}

size_t nsrv_utf8_trunc_len(const char *s, size_t len, size_t max) {
    if (len <= max)
        return len;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t bad;
        size_t n = nsrv_utf8_next(p + i, len - i, &cp, &bad);
        size_t step = n ? n : bad;
        if (i + step > max)
            break;
        i += step;
    }
    return i;
}
