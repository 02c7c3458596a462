/* SPDX-License-Identifier: Apache-2.0 */
/*
 * java.util.Properties reader and escaping writer. The reader follows the two
 * steps of Properties.load: LineReader.readLine (logical lines: comments,
 * blank lines, continuations) and load0/loadConvert (key/value split and
 * escapes). Pure; parses untrusted bytes; fuzzed by fuzz/fuzz_properties.c.
 */
#include "nsrv/properties.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/text.h"
#include "nsrv/utf8.h"

/* FNV-1a: uthash's default Jenkins hash has unannotated switch fall-throughs
 * that clang's -Wimplicit-fallthrough rejects. */
static uint32_t props_hash(const void *key, size_t len) {
    const unsigned char *p = key;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = props_hash((keyptr), (size_t)(keylen)))
#define uthash_malloc(sz) nsrv_malloc(sz)
#define uthash_free(ptr, sz) nsrv_free(ptr)
#include <uthash.h>

struct nsrv_props_index {
    const char *key; /* borrowed from items[pos].key */
    size_t pos;
    UT_hash_handle hh;
};

void nsrv_props_init(nsrv_props_t *p) {
    p->items = NULL;
    p->count = 0;
    p->cap = 0;
    p->index = NULL;
}

void nsrv_props_free(nsrv_props_t *p) {
    struct nsrv_props_index *e, *tmp;
    HASH_ITER(hh, p->index, e, tmp) {
        HASH_DEL(p->index, e);
        nsrv_free(e);
    }
    for (size_t i = 0; i < p->count; i++) {
        nsrv_free(p->items[i].key);
        nsrv_free(p->items[i].value);
    }
    nsrv_free(p->items);
    nsrv_props_init(p);
}

const nsrv_prop_t *nsrv_props_find(const nsrv_props_t *p, const char *key) {
    struct nsrv_props_index *head = p->index, *e = NULL;
    HASH_FIND_STR(head, key, e);
    return e ? &p->items[e->pos] : NULL;
}

const char *nsrv_props_get(const nsrv_props_t *p, const char *key) {
    const nsrv_prop_t *it = nsrv_props_find(p, key);
    return it ? it->value : NULL;
}

/* Takes ownership of key and value. */
static void props_put(nsrv_props_t *p, char *key, char *value, unsigned line) {
    struct nsrv_props_index *e = NULL;
    HASH_FIND_STR(p->index, key, e);
    if (e) {
        nsrv_prop_t *it = &p->items[e->pos];
        nsrv_free(key);
        nsrv_free(it->value);
        it->value = value;
        it->line = line;
        return;
    }
    if (p->count == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->items = nsrv_realloc(p->items, p->cap * sizeof *p->items);
    }
    p->items[p->count] = (nsrv_prop_t){key, value, line};
    e = nsrv_malloc(sizeof *e);
    e->key = key;
    e->pos = p->count++;
    HASH_ADD_KEYPTR(hh, p->index, e->key, strlen(e->key), e);
}

void nsrv_props_set(nsrv_props_t *p, const char *key, const char *value, unsigned line) {
    props_put(p, nsrv_strdup(key), nsrv_strdup(value), line);
}

/* ---- reader --------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    size_t len;
    size_t off;
    unsigned line; /* line of the next byte, 1-based */
    nsrv_buf_t lb; /* the current logical line, escapes still in it */
} line_reader_t;

static bool is_blank(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\f';
}

static unsigned char next_byte(line_reader_t *r, unsigned *line_of_byte) {
    unsigned char c = r->p[r->off++];
    *line_of_byte = r->line;
    /* "\r\n" counts as one line break, as it is one terminator. */
    if (c == '\r' || (c == '\n' && !(r->off >= 2 && r->p[r->off - 2] == '\r')))
        r->line++;
    return c;
}

/*
 * Reads one logical line into r->lb, mirroring Properties.LineReader: leading
 * blanks of every natural line are skipped, blank and comment lines vanish, a
 * line ending in an odd number of backslashes continues (the backslash and the
 * terminator are dropped). A comment line never continues. Returns true and
 * the start line, or false at the end of input.
 */
static bool read_logical_line(line_reader_t *r, unsigned *start_line) {
    bool skip_ws = true, is_comment = false, is_new_line = true;
    bool appended_line_begin = false, preceding_bs = false, skip_lf = false;
    bool started = false;

    nsrv_buf_reset(&r->lb);
    *start_line = r->line;
    for (;;) {
        if (r->off >= r->len) {
            if (r->lb.len == 0 || is_comment)
                return false;
            if (preceding_bs)
                r->lb.data[--r->lb.len] = '\0';
            return true;
        }
        unsigned line;
        unsigned char c = next_byte(r, &line);
        if (skip_lf) {
            skip_lf = false;
            if (c == '\n')
                continue;
        }
        if (skip_ws) {
            if (is_blank(c))
                continue;
            if (!appended_line_begin && (c == '\r' || c == '\n'))
                continue;
            skip_ws = false;
            appended_line_begin = false;
        }
        if (is_new_line) {
            is_new_line = false;
            if (c == '#' || c == '!')
                is_comment = true;
        }
        if (c != '\n' && c != '\r') {
            if (is_comment)
                continue;
            if (!started) {
                *start_line = line;
                started = true;
            }
            nsrv_buf_append_ch(&r->lb, (char)c);
            preceding_bs = c == '\\' ? !preceding_bs : false;
            continue;
        }
        /* A line terminator. */
        if (is_comment || r->lb.len == 0) {
            is_comment = false;
            is_new_line = true;
            skip_ws = true;
            preceding_bs = false;
            started = false;
            nsrv_buf_reset(&r->lb);
            continue;
        }
        if (!preceding_bs)
            return true;
        r->lb.data[--r->lb.len] = '\0'; /* drop the continuation backslash */
        if (r->off >= r->len)
            return true; /* Java returns the line, even if now empty */
        skip_ws = true;
        appended_line_begin = true;
        preceding_bs = false;
        if (c == '\r')
            skip_lf = true;
    }
}

static void append_utf8(nsrv_buf_t *out, uint32_t cp) {
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    nsrv_buf_append(out, b, n);
}

/* Reads the 4 hex digits after "\u" at s[*i]; returns -1 if malformed. */
static int32_t read_u_escape(const char *s, size_t end, size_t *i) {
    if (end - *i < 4)
        return -1;
    int32_t v = nsrv_hex4(s + *i);
    *i += 4;
    return v;
}

/*
 * Properties.loadConvert over s[begin..end): resolves escapes into out.
 * Returns 0, or -1 with a reason on a malformed \u escape or a NUL.
 */
static int load_convert(const char *s, size_t begin, size_t end, nsrv_buf_t *out,
                        const char **why) {
    nsrv_buf_reset(out);
    size_t i = begin;
    while (i < end) {
        char c = s[i++];
        if (c == '\0') {
            *why = "NUL byte in key or value";
            return -1;
        }
        if (c != '\\') {
            nsrv_buf_append_ch(out, c);
            continue;
        }
        if (i >= end)
            break; /* cannot happen after readLine; drop a lone backslash */
        c = s[i++];
        switch (c) {
        case 'u': {
            int32_t u = read_u_escape(s, end, &i);
            if (u < 0) {
                *why = "Malformed \\uxxxx encoding.";
                return -1;
            }
            if (u == 0) {
                *why = "NUL character (\\u0000) in key or value";
                return -1;
            }
            uint32_t cp = (uint32_t)u;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                /* Java strings are UTF-16: join a high surrogate with a
                 * following \u low surrogate into one code point. */
                size_t j = i;
                int32_t lo = -2;
                if (end - j >= 6 && s[j] == '\\' && s[j + 1] == 'u') {
                    j += 2;
                    lo = read_u_escape(s, end, &j);
                }
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                    i = j;
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            append_utf8(out, cp);
            break;
        }
        default:
            if (c == '\0') {
                *why = "NUL byte in key or value";
                return -1;
            }
            /* \t \n \r \f; any other escaped char (\b too) stands for itself. */
            char control = nsrv_unescape_letter(c, "tnrf");
            nsrv_buf_append_ch(out, control ? control : c);
            break;
        }
    }
    return 0;
}

/* Keys and values are stored as valid UTF-8 (ill-formed bytes become U+FFFD),
 * since GET_NAMESRV_CONFIG and the persisted file echo them. */
static char *buf_take_str(nsrv_buf_t *b) {
    return b->data ? nsrv_utf8_dup(b->data, b->len, NULL) : nsrv_strdup("");
}

int nsrv_props_parse(const char *text, size_t len, nsrv_props_t *out, char *err, size_t errlen) {
    line_reader_t r = {(const unsigned char *)text, len, 0, 1, NSRV_BUF_INIT};
    nsrv_buf_t kb = NSRV_BUF_INIT, vb = NSRV_BUF_INIT;
    unsigned line;
    int rc = 0;

    if (err && errlen)
        err[0] = '\0';
    while (read_logical_line(&r, &line)) {
        const char *s = r.lb.data ? r.lb.data : "";
        size_t limit = r.lb.len;
        size_t key_len = 0, value_start = limit;
        bool has_sep = false, preceding_bs = false;

        /* The key ends at the first unescaped '=', ':' or blank. */
        while (key_len < limit) {
            char c = s[key_len];
            if ((c == '=' || c == ':') && !preceding_bs) {
                value_start = key_len + 1;
                has_sep = true;
                break;
            }
            if (is_blank((unsigned char)c) && !preceding_bs) {
                value_start = key_len + 1;
                break;
            }
            preceding_bs = c == '\\' ? !preceding_bs : false;
            key_len++;
        }
        /* Blanks, and at most one '=' or ':' among them, precede the value. */
        while (value_start < limit) {
            char c = s[value_start];
            if (!is_blank((unsigned char)c)) {
                if (!has_sep && (c == '=' || c == ':'))
                    has_sep = true;
                else
                    break;
            }
            value_start++;
        }
        const char *why = NULL;
        if (load_convert(s, 0, key_len, &kb, &why) < 0 ||
            load_convert(s, value_start, limit, &vb, &why) < 0) {
            if (err && errlen)
                snprintf(err, errlen, "line %u: %s", line, why);
            rc = NSRV_EBODY;
            break;
        }
        props_put(out, buf_take_str(&kb), buf_take_str(&vb), line);
    }
    nsrv_buf_deinit(&kb);
    nsrv_buf_deinit(&vb);
    nsrv_buf_deinit(&r.lb);
    return rc;
}

/* ---- writer --------------------------------------------------------------- */

/* Characters Properties.store writes as a backslash and a letter, and those letters. */
static const char BACKSLASH_CHARS[] = "\\\t\n\r\f";
static const char BACKSLASH_LETTERS[] = "\\tnrf";

static void escape_into(nsrv_buf_t *out, const char *s, bool is_key) {
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *b = strchr(BACKSLASH_CHARS, c); /* c is not NUL here */
        if (b) {
            nsrv_buf_append_ch(out, '\\');
            nsrv_buf_append_ch(out, BACKSLASH_LETTERS[b - BACKSLASH_CHARS]);
            continue;
        }
        switch (c) {
        case ' ':
            /* The reader skips blanks before a value and ends a key at one. */
            if (is_key || i == 0)
                nsrv_buf_append_ch(out, '\\');
            nsrv_buf_append_ch(out, ' ');
            break;
        case '=':
        case ':':
        case '#':
        case '!':
            /* Separators end a key; '#'/'!' would start a comment line. */
            if (is_key)
                nsrv_buf_append_ch(out, '\\');
            nsrv_buf_append_ch(out, (char)c);
            break;
        default:
            if (c < 0x20 || c == 0x7F)
                nsrv_buf_printf(out, "\\u%04X", (unsigned)c);
            else
                nsrv_buf_append_ch(out, (char)c);
            break;
        }
    }
}

void nsrv_props_write_escaped(nsrv_buf_t *out, const char *key, const char *value) {
    escape_into(out, key, true);
    nsrv_buf_append_ch(out, '=');
    escape_into(out, value, false);
    nsrv_buf_append_ch(out, '\n');
}

void nsrv_props_escape_value(nsrv_buf_t *out, const char *s) {
    escape_into(out, s, false);
}
