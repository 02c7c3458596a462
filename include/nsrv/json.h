/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lenient JSON reader and fastjson-compatible string writer.
 *
 * The reader accepts what fastjson (the serializer of the Java NameServer and
 * broker) emits and accepts: bare numeric and identifier object keys
 * ({0:"a"}), single-quoted strings, whitespace anywhere, 64-bit integers.
 * It parses into a tree allocated from a caller's arena, so one request's
 * parse is freed with the arena. Depth is capped (NSRV_JSON_MAX_DEPTH) so
 * hostile input cannot exhaust the stack. Fuzzed by src/base/fuzz/fuzz_json.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"

#define NSRV_JSON_MAX_DEPTH 64

typedef enum {
    NSRV_JSON_NULL,
    NSRV_JSON_BOOL,
    NSRV_JSON_NUMBER,
    NSRV_JSON_STRING,
    NSRV_JSON_ARRAY,
    NSRV_JSON_OBJECT,
} nsrv_json_type_t;

typedef struct nsrv_json nsrv_json_t;
/* Kept small (56 bytes): a hostile body of tiny values becomes one node each. */
struct nsrv_json {
    nsrv_json_t *next;  /* next sibling */
    nsrv_json_t *child; /* ARRAY/OBJECT: first element/member */
    /* Object member key, decoded and NUL-terminated (NULL outside objects). */
    const char *key;
    /*
     * STRING: the decoded value (UTF-8, NUL-terminated).
     * NUMBER: the number's source text (NUL-terminated), e.g. "-12" or "1.5e3".
     */
    const char *str;
    union {
        int64_t i64; /* NUMBER when is_int */
        double dbl;  /* NUMBER when !is_int */
    };
    uint32_t key_len;
    uint32_t str_len;
    uint32_t count; /* ARRAY/OBJECT: number of children */
    uint8_t type;   /* nsrv_json_type_t */
    bool boolean;   /* BOOL */
    bool is_int;    /* NUMBER fits int64 exactly (no fraction/exponent) */
};

/* More values than this in one document is refused: it bounds the memory a
 * 16 MiB frame can make the parser allocate (about 112 MiB of nodes). A
 * broker with 100,000 topics sends about 1M values. */
#define NSRV_JSON_MAX_NODES 2000000u

/*
 * Parses text[0..len). On success returns 0 and sets *root (allocated in
 * arena). On error returns NSRV_EJSON and, if err != NULL, writes a short
 * message with the byte offset. Trailing whitespace is allowed; anything else
 * after the value is an error.
 */
int nsrv_json_parse(nsrv_arena_t *arena, const char *text, size_t len, nsrv_json_t **root,
                    char *err, size_t err_len);
/* The same, stopping with "tree over budget" as soon as the tree has taken more
 * than max_bytes of the arena: for a caller that charges it to a memory budget. */
int nsrv_json_parse_max(nsrv_arena_t *arena, const char *text, size_t len, size_t max_bytes,
                        nsrv_json_t **root, char *err, size_t err_len);

/*
 * Every string in the tree (keys and values) is valid UTF-8: ill-formed bytes
 * in the source are replaced by U+FFFD as Java's decoder replaces them
 * (include/nsrv/utf8.h), and a lone surrogate escape (\uD800) decodes to
 * U+FFFD. A string holding U+0000 (raw or \u0000) is refused (NSRV_EJSON,
 * "NUL character") because names are C strings throughout nsrvd and a cut
 * name would alias another one (docs/compatibility.md, "Names and text"); callers that check
 * NULs themselves, to answer with a clearer error, pass NSRV_JSON_KEEP_NUL.
 */
#define NSRV_JSON_KEEP_NUL 1u
/* The text of that error, for callers that answer it apart from other ones. */
#define NSRV_JSON_ERR_NUL "NUL character (U+0000)"
int nsrv_json_parse_opts(nsrv_arena_t *arena, const char *text, size_t len, unsigned flags,
                         nsrv_json_t **root, char *err, size_t err_len);

/* Object member lookup by exact key; NULL if obj is not an object or key absent. */
const nsrv_json_t *nsrv_json_get(const nsrv_json_t *obj, const char *key);

/*
 * Lenient scalar readers in fastjson's spirit: a number or a numeric string
 * reads as an integer; "true"/true reads as a bool; a number reads as its text.
 * Return false (leaving *out unchanged) when v is NULL, null or not convertible.
 */
bool nsrv_json_as_i64(const nsrv_json_t *v, int64_t *out);
bool nsrv_json_as_bool(const nsrv_json_t *v, bool *out);
/* STRING value, or NUMBER/BOOL source text; NULL for null/absent/containers. */
const char *nsrv_json_as_str(const nsrv_json_t *v, size_t *len);

/* String escaping modes of fastjson. */
typedef enum {
    /* fastjson default: non-ASCII raw UTF-8, '/' not escaped. */
    NSRV_JSON_ESC_DEFAULT,
    /* BrowserCompatible (standard route JSON): non-ASCII as uppercase \uXXXX
     * (surrogate pairs for astral code points), '/' as "\/". */
    NSRV_JSON_ESC_BROWSER,
} nsrv_json_esc_t;

/*
 * Appends s[0..len) as a quoted JSON string. In both modes '"' and '\\' are
 * escaped, \b \f \n \r \t use short forms, other control chars and DEL (0x7F)
 * and U+2028/U+2029 become \u00XX / \u2028 (uppercase hex digits).
 * Each ill-formed UTF-8 subpart is written as U+FFFD (\uFFFD in BROWSER mode),
 * so the output is valid UTF-8 whatever s holds.
 */
void nsrv_json_write_str(nsrv_buf_t *out, const char *s, size_t len, nsrv_json_esc_t mode);
