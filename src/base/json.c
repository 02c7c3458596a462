/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lenient JSON reader and fastjson-compatible string writer (include/nsrv/json.h).
 * Untrusted input: every read is bounds-checked, depth is capped, numbers and
 * strings are validated. Fuzzed by src/base/fuzz/fuzz_json.c.
 */
#include "nsrv/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/common.h"
#include "nsrv/text.h"
#include "nsrv/utf8.h"

typedef struct {
    nsrv_arena_t *arena;
    const char *p;
    const char *end;
    const char *start;
    char *err;
    size_t err_len;
    uint32_t nodes;
    size_t arena_start; /* arena->allocated when the parse began */
    size_t max_bytes;
    unsigned flags; /* NSRV_JSON_KEEP_NUL */
} parser_t;

static int fail(parser_t *ps, const char *what) {
    if (ps->err && ps->err_len)
        snprintf(ps->err, ps->err_len, "%s at offset %zu", what, (size_t)(ps->p - ps->start));
    return NSRV_EJSON;
}

static void skip_ws(parser_t *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
            ps->p++;
        else
            break;
    }
}

static nsrv_json_t *new_node(parser_t *ps, nsrv_json_type_t type) {
    ps->nodes++;
    nsrv_json_t *n = nsrv_arena_alloc(ps->arena, sizeof *n);
    memset(n, 0, sizeof *n);
    n->type = type;
    return n;
}

static int hex4(const char *p, unsigned *out) {
    int32_t v = nsrv_hex4(p);
    if (v < 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static size_t put_utf8(char *d, unsigned cp) {
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The first quote or backslash in [p, end), or end. Two memchr scans run many
 * times faster than a byte loop: a KV write may carry a value of megabytes,
 * decoded on the event loop. Each scan stops at the string's end. */
static const char *find_quote_or_escape(const char *p, const char *end, char quote) {
    const char *q = memchr(p, quote, (size_t)(end - p));
    if (!q)
        q = end;
    const char *b = memchr(p, '\\', (size_t)(q - p));
    return b ? b : q;
}

/*
 * The decoded string s[0..n) becomes the node's text: refused if it holds a
 * NUL (unless the caller keeps them), and ill-formed UTF-8 from the source
 * bytes is replaced by U+FFFD as Java's decoder does (include/nsrv/utf8.h),
 * so the tree holds only valid UTF-8. Escapes always decode to whole code
 * points, so replacing after unescaping gives what Java gets by decoding the
 * bytes first.
 */
static int finish_string(parser_t *ps, const char *s, size_t n, const char **out, size_t *out_len) {
    if (!(ps->flags & NSRV_JSON_KEEP_NUL) && memchr(s, '\0', n))
        return fail(ps, NSRV_JSON_ERR_NUL " in a string");
    *out = nsrv_utf8_arena_dup(ps->arena, s, n, out_len);
    return 0;
}

/* Parses a quoted string (double or single quotes); the decoded text never
 * exceeds the source length, so one arena block of that size suffices. */
static int parse_string(parser_t *ps, const char **out, size_t *out_len) {
    char quote = *ps->p++;
    const char *s = ps->p;
    /* Fast path: no escapes. */
    ps->p = find_quote_or_escape(ps->p, ps->end, quote);
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    if (*ps->p == quote) {
        ps->p++;
        return finish_string(ps, s, (size_t)(ps->p - 1 - s), out, out_len);
    }
    /* Slow path: decode escapes; output is never longer than the input. */
    size_t cap = (size_t)(ps->end - s) + 1;
    char *d = nsrv_arena_alloc(ps->arena, cap);
    size_t n = (size_t)(ps->p - s);
    memcpy(d, s, n);
    while (ps->p < ps->end && *ps->p != quote) {
        char c = *ps->p++;
        if (c != '\\') {
            d[n++] = c;
            continue;
        }
        if (ps->p >= ps->end)
            return fail(ps, "unterminated escape");
        c = *ps->p++;
        switch (c) {
        case '"':
        case '\\':
        case '/':
        case '\'':
            d[n++] = c;
            break;
        case 'u': {
            unsigned cp;
            if (ps->end - ps->p < 4 || hex4(ps->p, &cp) != 0)
                return fail(ps, "bad \\u escape");
            ps->p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                unsigned lo;
                if (hex4(ps->p + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
                    ps->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD; /* lone surrogate: Java would keep it; UTF-8 cannot */
            /* "\uXXXX" is 6 source bytes and at most 4 output bytes (a pair: 12 → 4). */
            n += put_utf8(d + n, cp);
            break;
        }
        default: {
            char control = nsrv_unescape_letter(c, "bfnrt");
            if (!control)
                return fail(ps, "bad escape");
            d[n++] = control;
            break;
        }
        }
    }
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    ps->p++;
    return finish_string(ps, d, n, out, out_len);
}

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '-' || c == '.' || c == '+';
}

/* fastjson writes Map<Integer,..> keys bare ({0:"a"}); it also accepts bare identifiers. */
static int parse_key(parser_t *ps, const char **out, size_t *out_len) {
    if (ps->p >= ps->end)
        return fail(ps, "expected key");
    if (*ps->p == '"' || *ps->p == '\'')
        return parse_string(ps, out, out_len);
    const char *s = ps->p;
    while (ps->p < ps->end && is_ident_char(*ps->p))
        ps->p++;
    if (ps->p == s)
        return fail(ps, "expected key");
    *out_len = (size_t)(ps->p - s);
    *out = nsrv_arena_strndup(ps->arena, s, *out_len);
    return 0;
}

/* Skips a run of ASCII digits; false when there is none. */
static bool skip_digits(parser_t *ps) {
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > start;
}

/* Consumes the next char if it is a or b. */
static bool skip_either(parser_t *ps, char a, char b) {
    if (ps->p < ps->end && (*ps->p == a || *ps->p == b)) {
        ps->p++;
        return true;
    }
    return false;
}

static int parse_number(parser_t *ps, nsrv_json_t *n) {
    const char *s = ps->p;
    bool is_int = true;
    skip_either(ps, '-', '+');
    if (!skip_digits(ps))
        return fail(ps, "bad number");
    if (skip_either(ps, '.', '.')) {
        is_int = false;
        if (!skip_digits(ps))
            return fail(ps, "bad number");
    }
    if (skip_either(ps, 'e', 'E')) {
        is_int = false;
        skip_either(ps, '-', '+');
        if (!skip_digits(ps))
            return fail(ps, "bad number");
    }
    /* fastjson suffixes for long/float/double/short/byte. */
    if (ps->p < ps->end && strchr("LlFfDdSB", *ps->p) && *ps->p != '\0')
        ps->p++;
    size_t len = (size_t)(ps->p - s);
    char *txt = nsrv_arena_strndup(ps->arena, s, len);
    n->str = txt;
    n->str_len = (uint32_t)len;
    if (is_int) {
        errno = 0;
        long long v = strtoll(txt, NULL, 10);
        n->is_int = errno == 0;
        n->i64 = (int64_t)v;
    }
    if (!n->is_int)
        n->dbl = strtod(txt, NULL);
    return 0;
}

static int parse_value(parser_t *ps, nsrv_json_t **out, int depth);

static int parse_container(parser_t *ps, nsrv_json_t *n, int depth, bool object) {
    char close = object ? '}' : ']';
    ps->p++;
    nsrv_json_t **tail = &n->child;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        skip_ws(ps);
        if (object) {
            int rc = parse_key(ps, &key, &key_len);
            if (rc)
                return rc;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, "expected ':'");
            ps->p++;
        }
        nsrv_json_t *child;
        int rc = parse_value(ps, &child, depth + 1);
        if (rc)
            return rc;
        child->key = key;
        child->key_len = (uint32_t)key_len;
        *tail = child;
        tail = &child->next;
        n->count++;
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, "unterminated container");
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            /* fastjson tolerates a trailing comma. */
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                return 0;
            }
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool match_word(parser_t *ps, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

static int parse_value(parser_t *ps, nsrv_json_t **out, int depth) {
    if (depth > NSRV_JSON_MAX_DEPTH)
        return fail(ps, "nesting too deep");
    if (ps->nodes >= NSRV_JSON_MAX_NODES)
        return fail(ps, "too many values");
    if (ps->arena->allocated - ps->arena_start > ps->max_bytes)
        return fail(ps, "tree over budget");
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "expected value");
    char c = *ps->p;
    nsrv_json_t *n;
    int rc = 0;
    if (c == '{' || c == '[') {
        n = new_node(ps, c == '{' ? NSRV_JSON_OBJECT : NSRV_JSON_ARRAY);
        rc = parse_container(ps, n, depth, c == '{');
    } else if (c == '"' || c == '\'') {
        n = new_node(ps, NSRV_JSON_STRING);
        size_t slen = 0;
        rc = parse_string(ps, &n->str, &slen);
        n->str_len = (uint32_t)slen;
    } else if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
        n = new_node(ps, NSRV_JSON_NUMBER);
        rc = parse_number(ps, n);
    } else if (match_word(ps, "true")) {
        n = new_node(ps, NSRV_JSON_BOOL);
        n->boolean = true;
    } else if (match_word(ps, "false")) {
        n = new_node(ps, NSRV_JSON_BOOL);
    } else if (match_word(ps, "null")) {
        n = new_node(ps, NSRV_JSON_NULL);
    } else {
        return fail(ps, "unexpected character");
    }
    if (rc)
        return rc;
    *out = n;
    return 0;
}

static int parse_doc(nsrv_arena_t *arena, const char *text, size_t len, unsigned flags,
                     size_t max_bytes, nsrv_json_t **root, char *err, size_t err_len);

int nsrv_json_parse(nsrv_arena_t *arena, const char *text, size_t len, nsrv_json_t **root,
                    char *err, size_t err_len) {
    return parse_doc(arena, text, len, 0, SIZE_MAX, root, err, err_len);
}

int nsrv_json_parse_max(nsrv_arena_t *arena, const char *text, size_t len, size_t max_bytes,
                        nsrv_json_t **root, char *err, size_t err_len) {
    return parse_doc(arena, text, len, 0, max_bytes, root, err, err_len);
}

int nsrv_json_parse_opts(nsrv_arena_t *arena, const char *text, size_t len, unsigned flags,
                         nsrv_json_t **root, char *err, size_t err_len) {
    return parse_doc(arena, text, len, flags, SIZE_MAX, root, err, err_len);
}

static int parse_doc(nsrv_arena_t *arena, const char *text, size_t len, unsigned flags,
                     size_t max_bytes, nsrv_json_t **root, char *err, size_t err_len) {
    if (len > UINT32_MAX) {
        if (err && err_len)
            snprintf(err, err_len, "document too large");
        return NSRV_EJSON;
    }
    parser_t ps = {arena,   text, text + len,       text,      err,
                   err_len, 0,    arena->allocated, max_bytes, flags};
    nsrv_json_t *v;
    /* Skip a UTF-8 BOM, which Java's readers tolerate. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        ps.p += 3;
    int rc = parse_value(&ps, &v, 0);
    if (rc)
        return rc;
    skip_ws(&ps);
    if (ps.p != ps.end)
        return fail(&ps, "trailing characters");
    *root = v;
    return 0;
}

const nsrv_json_t *nsrv_json_get(const nsrv_json_t *obj, const char *key) {
    if (!obj || obj->type != NSRV_JSON_OBJECT)
        return NULL;
    size_t klen = strlen(key);
    for (const nsrv_json_t *c = obj->child; c; c = c->next) {
        if (c->key_len == klen && memcmp(c->key, key, klen) == 0)
            return c;
    }
    return NULL;
}

bool nsrv_json_as_i64(const nsrv_json_t *v, int64_t *out) {
    if (!v)
        return false;
    if (v->type == NSRV_JSON_NUMBER) {
        if (v->is_int) {
            *out = v->i64;
            return true;
        }
        if (isfinite(v->dbl) && v->dbl >= -9.2e18 && v->dbl <= 9.2e18) {
            *out = (int64_t)v->dbl;
            return true;
        }
        return false;
    }
    if (v->type == NSRV_JSON_STRING && v->str_len > 0) {
        errno = 0;
        char *end;
        long long x = strtoll(v->str, &end, 10);
        if (errno == 0 && end == v->str + v->str_len) {
            *out = (int64_t)x;
            return true;
        }
    }
    return false;
}

bool nsrv_json_as_bool(const nsrv_json_t *v, bool *out) {
    bool b;
    if (!v)
        return false;
    switch (v->type) {
    case NSRV_JSON_BOOL:
        b = v->boolean;
        break;
    case NSRV_JSON_STRING: /* "true" or "false" in any case */
        b = strcasecmp(v->str, "true") == 0;
        if (!b && strcasecmp(v->str, "false") != 0)
            return false;
        break;
    case NSRV_JSON_NUMBER: /* an integer: non-zero is true */
        if (!v->is_int)
            return false;
        b = v->i64 != 0;
        break;
    default:
        return false;
    }
    *out = b;
    return true;
}

const char *nsrv_json_as_str(const nsrv_json_t *v, size_t *len) {
    if (!v)
        return NULL;
    switch (v->type) {
    case NSRV_JSON_STRING:
    case NSRV_JSON_NUMBER:
        if (len)
            *len = v->str_len;
        return v->str;
    case NSRV_JSON_BOOL:
        if (len)
            *len = v->boolean ? 4 : 5;
        return v->boolean ? "true" : "false";
    default:
        return NULL;
    }
}

static const char hexdig[] = "0123456789ABCDEF";

static void put_u_escape(nsrv_buf_t *out, unsigned cp) {
    char e[6] = {'\\',
                 'u',
                 hexdig[(cp >> 12) & 15],
                 hexdig[(cp >> 8) & 15],
                 hexdig[(cp >> 4) & 15],
                 hexdig[cp & 15]};
    nsrv_buf_append(out, e, 6);
}

/* The two-character escape of an ASCII byte, or NULL when it takes the \\u form. */
static const char *short_escape(unsigned char c) {
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '/':
        return "\\/";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    default:
        return NULL;
    }
}

/* Word-at-a-time byte tests (the classic "has a zero byte" bit trick): exact, no false hits. */
#define BYTES_OF(b) (0x0101010101010101ull * (uint8_t)(b))
#define HIGH_BITS BYTES_OF(0x80)

static uint64_t any_byte_zero(uint64_t w) {
    return (w - BYTES_OF(0x01)) & ~w & HIGH_BITS;
}

static uint64_t any_byte_below(uint64_t w, uint8_t n) {
    return (w - BYTES_OF(n)) & ~w & HIGH_BITS;
}

/* True when all eight bytes of w are plain ASCII that a JSON string carries as is: no control
 * byte, DEL, quote, backslash or non-ASCII byte (nor '/' when escape_slash). A 4 MiB KV value
 * is encoded on every snapshot of the table: this keeps that to a few memory passes. */
static bool word_is_plain(uint64_t w, bool escape_slash) {
    uint64_t special = (w & HIGH_BITS) | any_byte_below(w, 0x20) |
                       any_byte_zero(w ^ BYTES_OF('"')) | any_byte_zero(w ^ BYTES_OF('\\')) |
                       any_byte_zero(w ^ BYTES_OF(0x7F));
    if (escape_slash)
        special |= any_byte_zero(w ^ BYTES_OF('/'));
    return special == 0;
}

void nsrv_json_write_str(nsrv_buf_t *out, const char *s, size_t len, nsrv_json_esc_t mode) {
    const unsigned char *p = (const unsigned char *)s;
    const bool escape_slash = mode != NSRV_JSON_ESC_DEFAULT;
    nsrv_buf_reserve(out, len + 2);
    nsrv_buf_append_ch(out, '"');
    size_t run = 0; /* bytes copied verbatim in one go */
    size_t i = 0;
    while (i < len) {
        if (len - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (word_is_plain(w, escape_slash)) {
                run += 8;
                i += 8;
                continue;
            }
        }
        unsigned char c = p[i];
        bool plain = c >= 0x20 && c != '"' && c != '\\' && c != 0x7F &&
                     (c < 0x80 ? (c != '/' || mode == NSRV_JSON_ESC_DEFAULT) : false);
        if (plain) {
            run++;
            i++;
            continue;
        }
        if (run) {
            nsrv_buf_append(out, p + i - run, run);
            run = 0;
        }
        if (c < 0x80) {
            const char *esc = short_escape(c);
            if (esc)
                nsrv_buf_append(out, esc, 2);
            else
                put_u_escape(out, c);
            i++;
            continue;
        }
        uint32_t cp;
        size_t bad = 1;
        size_t n = nsrv_utf8_next(p + i, len - i, &cp, &bad);
        if (n == 0) {
            /* Output is always valid UTF-8: one U+FFFD per ill-formed subpart. */
            if (mode == NSRV_JSON_ESC_BROWSER)
                put_u_escape(out, 0xFFFD);
            else
                nsrv_buf_append(out, NSRV_UTF8_REPLACEMENT, 3);
            i += bad;
            continue;
        }
        if (cp == 0x2028 || cp == 0x2029) {
            put_u_escape(out, cp);
        } else if (mode == NSRV_JSON_ESC_DEFAULT) {
            nsrv_buf_append(out, p + i, n);
        } else if (cp >= 0x10000) {
            unsigned v = cp - 0x10000;
            put_u_escape(out, 0xD800 + (v >> 10));
            put_u_escape(out, 0xDC00 + (v & 0x3FF));
        } else {
            put_u_escape(out, cp);
        }
        i += n;
    }
    if (run)
        nsrv_buf_append(out, p + i - run, run);
    nsrv_buf_append_ch(out, '"');
}
