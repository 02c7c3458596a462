/* SPDX-License-Identifier: Apache-2.0 */
/*
 * java.util.Properties text: a reader compatible with Properties.load and a
 * writer that escapes like Properties.store, so that any key/value written is
 * read back byte for byte (a value holding a newline can never inject a key).
 * Pure, no I/O. The reader parses untrusted bytes (UPDATE_NAMESRV_CONFIG
 * bodies); fuzzed by src/config/fuzz/fuzz_properties.c.
 */
#pragma once

#include <stddef.h>

#include "nsrv/buf.h"

/* One property. key and value are NUL-terminated heap strings owned by the
 * nsrv_props_t; line is the 1-based line where the logical line started. */
typedef struct {
    char *key;
    char *value;
    unsigned line;
} nsrv_prop_t;

struct nsrv_props_index;

/* An ordered property list (insertion order; a later duplicate key overwrites
 * the value in place). Zero-initialise it (or nsrv_props_init) before use. */
typedef struct {
    nsrv_prop_t *items;
    size_t count;
    size_t cap;
    struct nsrv_props_index *index; /* private: key -> position */
} nsrv_props_t;

#define NSRV_PROPS_INIT                                                                            \
    { NULL, 0, 0, NULL }

void nsrv_props_init(nsrv_props_t *p);
/* Frees every key and value; p is left empty and reusable. Accepts an empty p. */
void nsrv_props_free(nsrv_props_t *p);

/**
 * Parses java.util.Properties text and appends the properties to *out (which
 * must be initialised; existing keys are overwritten like later lines).
 *
 * Syntax, as Properties.load: `key=value`, `key:value`, `key value`; leading
 * whitespace (space, tab, form feed) is ignored; lines whose first non-blank
 * character is `#` or `!` are comments; a line ending in an odd number of
 * backslashes continues on the next line with that line's leading whitespace
 * dropped; escapes `\t \n \r \f \\ \uXXXX` (emitted as UTF-8, surrogate pairs
 * combined, a lone surrogate becomes U+FFFD), any other `\x` is `x`; escaped
 * separators belong to the key; a key alone has the value "".
 * Differences from Java: bytes >= 0x80 are kept as they are (Java reads them
 * as ISO-8859-1), and a NUL (raw or `\u0000`) is refused so that keys and
 * values are always C strings.
 *
 * @param text  borrowed bytes, need not be NUL-terminated
 * @param err   receives "line N: reason" on error (may be NULL)
 * @return 0, or NSRV_EBODY on a malformed `\uxxxx` escape or a NUL. On error
 *         *out keeps what it held before the call plus the properties of the
 *         lines before the bad one; callers normally discard it.
 */
int nsrv_props_parse(const char *text, size_t len, nsrv_props_t *out, char *err, size_t errlen);

/* Returns the value of key (borrowed, valid until the next change), or NULL. */
const char *nsrv_props_get(const nsrv_props_t *p, const char *key);
/* Returns the entry of key (borrowed), or NULL. */
const nsrv_prop_t *nsrv_props_find(const nsrv_props_t *p, const char *key);
/* Copies key and value in; an existing key keeps its position. line may be 0. */
void nsrv_props_set(nsrv_props_t *p, const char *key, const char *value, unsigned line);

/**
 * Appends "key=value\n" to out, escaped as Properties.store does for the
 * characters that matter to the reader: backslash; tab, newline, carriage
 * return and form feed as `\t \n \r \f`; other control bytes as `\u00XX`;
 * in the key also space, `=`, `:`, `#` and `!`; in the value a leading space.
 * Bytes >= 0x80 are written as they are. Reading the result back with
 * nsrv_props_parse yields exactly key and value.
 */
void nsrv_props_write_escaped(nsrv_buf_t *out, const char *key, const char *value);

/* Appends s escaped as a property value (no key, no newline): handy for
 * putting an untrusted string into a log line or an error message. */
void nsrv_props_escape_value(nsrv_buf_t *out, const char *s);
