/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON header codec (serialize type 0; proto/remoting.md §3). Decoding is as
 * lenient as fastjson's bean reader: any key order, unknown keys ignored,
 * numeric strings for ints, numbers/booleans as ext values. Encoding writes
 * exactly what fastjson writes for a RemotingCommand (sorted keys, nulls
 * omitted). Pure; parses untrusted input; fuzzed by fuzz/fuzz_hdr_json.c.
 */
#include <math.h>
#include <string.h>

#include "nsrv/json.h"
#include "nsrv/text.h"
#include "remoting_int.h"

typedef enum {
    KEY_OTHER,
    KEY_CODE,
    KEY_LANGUAGE,
    KEY_VERSION,
    KEY_OPAQUE,
    KEY_FLAG,
    KEY_REMARK,
    KEY_EXT_FIELDS,
    KEY_COUNT
} hdr_key_t;

/* The normalized property name of each key. */
static const char *const key_names[KEY_COUNT] = {
    [KEY_CODE] = "code",
    [KEY_LANGUAGE] = "language",
    [KEY_VERSION] = "version",
    [KEY_OPAQUE] = "opaque",
    [KEY_FLAG] = "flag",
    [KEY_REMARK] = "remark",
    [KEY_EXT_FIELDS] = "extfields",
};

/*
 * Maps a member name to a RemotingCommand property the way fastjson's
 * JavaBeanDeserializer.smartMatch does when there is no exact match: ASCII
 * case is ignored and '_' / '-' are skipped ("ExtFields", "ext_fields"), and
 * failing that an "is" prefix is dropped ("isCode"). Names longer than any
 * property cannot match, so they stop early.
 */
static hdr_key_t match_key(const char *k, size_t len) {
    char norm[16];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = k[i];
        if (c == '_' || c == '-')
            continue;
        if (n == sizeof norm)
            return KEY_OTHER;
        norm[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    for (hdr_key_t key = KEY_CODE; key < KEY_COUNT; key++) {
        if (strlen(key_names[key]) == n && memcmp(key_names[key], norm, n) == 0)
            return key;
    }
    return KEY_OTHER;
}

static hdr_key_t classify_key(const char *k, size_t len) {
    hdr_key_t key = match_key(k, len);
    if (key == KEY_OTHER && len > 2 && k[0] == 'i' && k[1] == 's')
        key = match_key(k + 2, len - 2);
    return key;
}

/*
 * An int property. fastjson accepts a number, a numeric string, or a boolean
 * (castToInt gives 1/0), and truncates a fraction (BigDecimal.intValue). It
 * throws on int overflow, and so do we. null leaves the default (0).
 */
static int read_i32(const nsrv_json_t *v, int32_t *out) {
    int64_t x;
    switch (v->type) {
    case NSRV_JSON_NULL:
        return 0;
    case NSRV_JSON_BOOL:
        *out = v->boolean ? 1 : 0;
        return 0;
    case NSRV_JSON_NUMBER:
        if (v->is_int) {
            x = v->i64;
        } else {
            if (!isfinite(v->dbl) || v->dbl <= (double)INT32_MIN - 1.0 ||
                v->dbl >= (double)INT32_MAX + 1.0)
                return NSRV_EHEADER;
            x = (int64_t)v->dbl; /* truncates toward zero, as Java does */
        }
        break;
    default:
        if (!nsrv_json_as_i64(v, &x))
            return NSRV_EHEADER;
        break;
    }
    if (x < INT32_MIN || x > INT32_MAX)
        return NSRV_EHEADER;
    *out = (int32_t)x;
    return 0;
}

/*
 * LanguageCode: the enum name, or a number read as the ordinal. Unknown names,
 * out-of-range ordinals and odd types give -1 (Java's null) rather than an
 * error: the reference asks servers to accept any language (proto/remoting.md §8.2).
 */
static int32_t read_language(const nsrv_json_t *v) {
    if (v->type == NSRV_JSON_STRING)
        return nsrv_language_from_name(v->str, v->str_len);
    if (v->type == NSRV_JSON_NUMBER && v->is_int && v->i64 >= 0 && v->i64 <= NSRV_LANG_NODE_JS)
        return (int32_t)v->i64;
    return -1;
}

/* remark: a string ("" = absent), or a scalar's text; null = absent. */
static int read_remark(const nsrv_json_t *v, nsrv_str_t *out) {
    if (v->type == NSRV_JSON_NULL) {
        *out = NSRV_STR_NULL;
        return 0;
    }
    size_t len = 0;
    const char *s = nsrv_json_as_str(v, &len);
    if (!s)
        return NSRV_EHEADER;
    *out = len ? (nsrv_str_t){s, len} : NSRV_STR_NULL;
    return 0;
}

/*
 * extFields: an object of string values. Numbers and booleans keep their
 * text (fastjson converts them), null means the field is absent, containers
 * are refused. The tree's strings are already NUL-terminated arena copies.
 */
static int read_ext(const nsrv_json_t *v, nsrv_arena_t *arena, nsrv_cmd_t *out) {
    if (v->type == NSRV_JSON_NULL) {
        out->has_ext = false;
        out->ext = NULL;
        out->n_ext = 0;
        return 0;
    }
    if (v->type != NSRV_JSON_OBJECT)
        return NSRV_EHEADER;
    nsrv_ext_field_t *ext = NULL;
    size_t n = 0;
    if (v->count)
        ext = nsrv_arena_alloc(arena, v->count * sizeof *ext);
    for (const nsrv_json_t *m = v->child; m; m = m->next) {
        if (m->type == NSRV_JSON_NULL)
            continue;
        size_t len = 0;
        const char *s = nsrv_json_as_str(m, &len);
        if (!s || n == v->count)
            return NSRV_EHEADER;
        ext[n].key = (nsrv_str_t){m->key, m->key_len};
        ext[n].val = (nsrv_str_t){s, len};
        if (m->key_len)
            out->ext_keys |= nsrv_ext_key_bit(m->key, m->key_len);
        n++;
    }
    out->has_ext = true;
    out->ext = n ? ext : NULL;
    out->n_ext = n;
    return 0;
}

/* Where the int property of key lands: code, version, opaque or flag. */
static int32_t *int_member(nsrv_cmd_t *c, hdr_key_t key) {
    return key == KEY_CODE      ? &c->code
           : key == KEY_VERSION ? &c->version
           : key == KEY_OPAQUE  ? &c->opaque
                                : &c->flag;
}

int nsrv__hdr_json_decode(const uint8_t *p, size_t len, nsrv_arena_t *arena, nsrv_cmd_t *out) {
    if (len == 0)
        return NSRV_EHEADER;
    nsrv_json_t *root = NULL;
    /* NULs are kept so that the processor can refuse the request with a reply
     * (nsrv_cmd_find_nul) instead of the connection being closed. */
    if (nsrv_json_parse_opts(arena, (const char *)p, len, NSRV_JSON_KEEP_NUL, &root, NULL, 0) !=
            0 ||
        !root || root->type != NSRV_JSON_OBJECT)
        return NSRV_EHEADER;

    /* One pass over the members; a repeated key overwrites, as in fastjson. */
    for (const nsrv_json_t *m = root->child; m; m = m->next) {
        int rc = 0;
        hdr_key_t key = classify_key(m->key, m->key_len);
        switch (key) {
        case KEY_CODE:
        case KEY_VERSION:
        case KEY_OPAQUE:
        case KEY_FLAG:
            rc = read_i32(m, int_member(out, key));
            break;
        case KEY_LANGUAGE:
            out->language = read_language(m);
            break;
        case KEY_REMARK:
            rc = read_remark(m, &out->remark);
            break;
        case KEY_EXT_FIELDS:
            rc = read_ext(m, arena, out);
            break;
        case KEY_OTHER:
        case KEY_COUNT:
            break;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Appends name_colon then v in decimal (snprintf was most of the encode cost: four ints
 * per header, on every response). */
static void put_int_member(nsrv_buf_t *out, const char *name_colon, int32_t v) {
    char tmp[NSRV_I32_DEC_MAX];
    nsrv_buf_append_c(out, name_colon);
    nsrv_buf_append(out, tmp, nsrv_fmt_i32(tmp, v));
}

void nsrv__hdr_json_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd) {
    /* fastjson writes bean properties in alphabetical order and omits nulls. */
    put_int_member(out, "{\"code\":", cmd->code);
    if (cmd->has_ext) {
        nsrv_buf_append_c(out, ",\"extFields\":{");
        bool first = true;
        for (size_t i = 0; i < cmd->n_ext; i++) {
            const nsrv_ext_field_t *f = &cmd->ext[i];
            if (!f->key.ptr || !f->val.ptr)
                continue; /* fastjson skips null map values */
            nsrv_buf_append_sep(out, &first);
            nsrv_json_write_str(out, f->key.ptr, f->key.len, NSRV_JSON_ESC_DEFAULT);
            nsrv_buf_append_ch(out, ':');
            nsrv_json_write_str(out, f->val.ptr, f->val.len, NSRV_JSON_ESC_DEFAULT);
        }
        nsrv_buf_append_ch(out, '}');
    }
    put_int_member(out, ",\"flag\":", cmd->flag);
    const char *lang = nsrv_language_name(cmd->language);
    if (lang) {
        nsrv_buf_append_c(out, ",\"language\":\"");
        nsrv_buf_append_c(out, lang);
        nsrv_buf_append_ch(out, '"');
    }
    put_int_member(out, ",\"opaque\":", cmd->opaque);
    if (cmd->remark.ptr) {
        nsrv_buf_append_c(out, ",\"remark\":");
        nsrv_json_write_str(out, cmd->remark.ptr, cmd->remark.len, NSRV_JSON_ESC_DEFAULT);
    }
    nsrv_buf_append_c(out, cmd->ser_type == NSRV_SER_ROCKETMQ
                               ? ",\"serializeTypeCurrentRPC\":\"ROCKETMQ\""
                               : ",\"serializeTypeCurrentRPC\":\"JSON\"");
    put_int_member(out, ",\"version\":", cmd->version);
    nsrv_buf_append_ch(out, '}');
}
