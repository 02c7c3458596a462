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
