/* SPDX-License-Identifier: Apache-2.0 */
/* Strict number parsing and blank tests (include/nsrv/text.h). */
#include "nsrv/text.h"

#include <stdio.h>

#include <string.h>

bool nsrv_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out) {
    if (!s || len == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

bool nsrv_parse_int(const char *s, size_t len, int64_t min, int64_t max, int64_t *out) {
    if (!s || len == 0)
        return false;
    bool neg = s[0] == '-';
    size_t skip = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    uint64_t mag;
    /* The magnitude of INT64_MIN is one more than INT64_MAX. */
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (!nsrv_parse_uint(s + skip, len - skip, lim, &mag))
        return false;
    int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

int nsrv_hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int32_t nsrv_hex4(const char *p) {
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = nsrv_hex_digit(p[i]);
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

char nsrv_unescape_letter(char letter, const char *known) {
    static const char letters[] = "bfnrt";
    static const char controls[] = "\b\f\n\r\t";
    const char *at = letter ? strchr(letters, letter) : NULL;
    if (!at || !strchr(known, letter))
        return 0;
    return controls[at - letters];
}

bool nsrv_is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool nsrv_is_blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (!nsrv_is_space(s[i]))
            return false;
    }
    return true;
}

bool nsrv_is_blank_c(const char *s) {
    return !s || nsrv_is_blank(s, strlen(s));
}

char *nsrv_fmt_duration_ms(uint64_t ms, char *buf, size_t cap) {
    uint64_t s = ms / 1000;
    if (ms < 10000)
        snprintf(buf, cap, "%u.%us", (unsigned)s, (unsigned)(ms % 1000 / 100));
    else if (s < 60)
        snprintf(buf, cap, "%us", (unsigned)s);
    else if (s < 3600)
        snprintf(buf, cap, "%um%02us", (unsigned)(s / 60), (unsigned)(s % 60));
    else if (s < 86400)
        snprintf(buf, cap, "%uh%02um", (unsigned)(s / 3600), (unsigned)(s % 3600 / 60));
    else
        snprintf(buf, cap, "%llud%02uh", (unsigned long long)(s / 86400),
                 (unsigned)(s % 86400 / 3600));
    return buf;
}
