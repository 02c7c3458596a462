/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict number parsing and blank tests for text from outside (configuration,
 * request fields, files, command lines). One definition each, so every
 * module accepts exactly the same spellings.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Java's Long.parseLong of s[0..len): an optional '+' or '-', then one or
 * more ASCII digits, nothing else (no blanks, no trailing bytes); the value
 * must lie in [min, max]. On failure *out is unchanged.
 */
bool nsrv_parse_int(const char *s, size_t len, int64_t min, int64_t max, int64_t *out);

/* One or more ASCII digits and nothing else (no sign), value <= max. */
bool nsrv_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out);

/* The value of an ASCII hex digit (either case), or -1 for any other char. */
int nsrv_hex_digit(char c);

/* The value of the four hex digits at p (a \uXXXX escape's), or -1 if one is not a digit. */
int32_t nsrv_hex4(const char *p);

/*
 * The control character a backslash escape letter stands for, when the letter
 * is one of `known` (a subset of "bfnrt": JSON knows all five, Java
 * Properties all but b); 0 for any other letter, NUL included.
 */
char nsrv_unescape_letter(char letter, const char *known);

/* ' ', '\t', '\n', '\v', '\f' or '\r': C's isspace in the C locale. */
bool nsrv_is_space(char c);

/* Every byte of s[0..len) is nsrv_is_space; an empty string is blank. */
bool nsrv_is_blank(const char *s, size_t len);

/* The same for a NUL-terminated string; NULL is blank (Java StringUtils.isBlank). */
bool nsrv_is_blank_c(const char *s);

/* The most characters nsrv_fmt_i32 writes ("-2147483648"). */
#define NSRV_I32_DEC_MAX 11

/* Writes v in decimal at dst (room for NSRV_I32_DEC_MAX, no NUL); returns the characters
 * written. Inline and without snprintf: reply headers carry several ints each, on every
 * response (hdr_json.c, the route fast path's heads). */
static inline size_t nsrv_fmt_i32(char *dst, int32_t v) {
    char tmp[NSRV_I32_DEC_MAX];
    size_t i = sizeof tmp;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    memcpy(dst, tmp + i, sizeof tmp - i);
    return sizeof tmp - i;
}

/* Longest text nsrv_fmt_duration_ms writes, with its NUL (UINT64_MAX ms: "213503982334d14h"). */
#define NSRV_DURATION_TEXT_MAX 24

/* A duration for people: "0.4s" below 10 s (one decimal, truncated), "12s" below a minute,
 * "3m05s" below an hour, "2h05m" below a day, then "3d04h". Writes a NUL-terminated string
 * into buf (cap >= NSRV_DURATION_TEXT_MAX for every value) and returns buf. */
char *nsrv_fmt_duration_ms(uint64_t ms, char *buf, size_t cap);
