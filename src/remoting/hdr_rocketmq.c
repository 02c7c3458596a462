/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ROCKETMQ binary header codec (proto/remoting.md §4; Java
 * RocketMQSerializable.rocketMQProtocolEncode/Decode). Every length read from
 * the wire is checked against what is left before it is used.
 * Pure; parses untrusted input; fuzzed by fuzz/fuzz_frame.c.
 */
#include <string.h>

#include "nsrv/utf8.h"
#include "remoting_int.h"

static int32_t load_i32(const uint8_t *p) {
    return (int32_t)nsrv_load_be32(p);
}

static int16_t load_i16(const uint8_t *p) {
    return (int16_t)(uint16_t)((p[0] << 8) | p[1]);
}

/*
 * A length-prefixed byte string: a signed big-endian length of width bytes (2
 * or 4) that must not be negative, then that many bytes, all inside r.
 */
static int read_sized(nsrv_reader_t *r, int width, const uint8_t **p, size_t *n) {
    int64_t len;
    if (width == 2) {
        uint16_t v;
        if (nsrv_reader_be16(r, &v) != 0)
            return NSRV_EHEADER;
        len = (int16_t)v;
    } else {
        uint32_t v;
        if (nsrv_reader_be32(r, &v) != 0)
            return NSRV_EHEADER;
        len = (int32_t)v;
    }
    if (len < 0 || nsrv_reader_bytes(r, (size_t)len, p) != 0)
        return NSRV_EHEADER;
    *n = (size_t)len;
    return 0;
}

/* The least bytes a map entry takes: int16 keyLen and int32 valLen, both strings empty. */
#define MAP_ENTRY_MIN 6
/* Maps up to this size are decoded in one pass into room for len / MAP_ENTRY_MIN entries. */
#define ONE_PASS_MAP_BYTES 256

/* What a walk over the map learnt besides the fields. */
typedef struct {
    size_t n;      /* entries kept */
    uint64_t keys; /* nsrv_cmd_t.ext_keys */
    bool nul_free; /* nsrv_cmd_t.ext_nul_free */
} map_walk_t;

/*
 * Walks the map section m[0..len): entries of int16 keyLen, key, int32 valLen,
 * value, until len is used up. Every entry must lie wholly inside the section
 * and lengths must not be negative (Java throws on both). When fields is
 * NULL only counts the entries that survive (both strings non-empty: Java
 * reads a zero-length string as null); otherwise also copies them into the
 * arena: plain ASCII strings into strs, which has room for len bytes (an
 * entry's 6 length bytes make room for its 2 NULs), others through the UTF-8
 * replacement pass. Large maps take two passes, so that the allocation follows
 * the real entries rather than len / 6.
 */
static int walk_map(const uint8_t *m, size_t len, nsrv_arena_t *arena, nsrv_ext_field_t *fields,
                    char *strs, map_walk_t *out) {
    nsrv_reader_t r;
    nsrv_reader_init(&r, m, len);
    map_walk_t w = {.nul_free = true};
    while (nsrv_reader_left(&r) > 0) {
        const uint8_t *key, *val;
        size_t klen, vlen;
        if (read_sized(&r, 2, &key, &klen) != 0 || read_sized(&r, 4, &val, &vlen) != 0)
            return NSRV_EHEADER;
        if (klen == 0 || vlen == 0)
            continue;
        if (fields) {
            nsrv_ext_field_t *f = &fields[w.n];
            if (nsrv_ascii_plain(key, klen) && nsrv_ascii_plain(val, vlen)) {
                /* Both copied as they are, into the map's string room. */
                char *d = strs;
                strs += klen + vlen + 2;
                memcpy(d, key, klen);
                d[klen] = '\0';
                memcpy(d + klen + 1, val, vlen);
                d[klen + 1 + vlen] = '\0';
                f->key = (nsrv_str_t){d, klen};
                f->val = (nsrv_str_t){d + klen + 1, vlen};
            } else {
                /* Java reads each string with new String(bytes, UTF_8). */
                f->key.ptr = nsrv_utf8_arena_dup(arena, (const char *)key, klen, &f->key.len);
                f->val.ptr = nsrv_utf8_arena_dup(arena, (const char *)val, vlen, &f->val.len);
                w.nul_free = false; /* not looked at: nsrv_cmd_find_nul scans */
            }
            if (f->key.len) /* U+FFFD replacements never make it empty; kept general */
                w.keys |= nsrv_ext_key_bit(f->key.ptr, f->key.len);
        }
        w.n++;
    }
    *out = w;
    return 0;
}

int nsrv__hdr_rocketmq_decode(const uint8_t *p, size_t len, nsrv_arena_t *arena, nsrv_cmd_t *out) {
    if (len < NSRV_HDR_ROCKETMQ_FIXED)
        return NSRV_EHEADER;
    int32_t code = load_i16(p);
    uint8_t lang = p[2];
    int32_t version = load_i16(p + 3);
    int32_t opaque = load_i32(p + 5);
    int32_t flag = load_i32(p + 9);
    nsrv_reader_t r;
    nsrv_reader_init(&r, p + 13, len - 13);
    const uint8_t *remark, *map;
    size_t remark_len, ext_len;
    if (read_sized(&r, 4, &remark, &remark_len) != 0 || read_sized(&r, 4, &map, &ext_len) != 0)
        return NSRV_EHEADER;
    /* Bytes after the map are ignored, as Java reads only what it needs. */

    map_walk_t mw = {.nul_free = true};
    nsrv_ext_field_t *ext = NULL;
    int rc;
    if (ext_len <= ONE_PASS_MAP_BYTES) {
        /* A small map (every query of a client's hot path) in one pass, with room for as
         * many entries as its bytes could hold: each takes at least 6. */
        char *strs = NULL;
        if (ext_len >= MAP_ENTRY_MIN) {
            /* The entries and their strings in one allocation. */
            size_t room = ext_len / MAP_ENTRY_MIN * sizeof *ext;
            ext = nsrv_arena_alloc(arena, room + ext_len);
            strs = (char *)ext + room;
        }
        rc = walk_map(map, ext_len, arena, ext, strs, &mw);
    } else {
        rc = walk_map(map, ext_len, NULL, NULL, NULL, &mw);
        if (rc == 0 && mw.n) {
            ext = nsrv_arena_alloc(arena, mw.n * sizeof *ext + ext_len);
            walk_map(map, ext_len, arena, ext, (char *)(ext + mw.n), &mw);
        }
    }
    if (rc < 0)
        return rc;
    if (!mw.n)
        ext = NULL;

    out->code = code;
    out->language = nsrv_language_name(lang) ? lang : -1;
    out->version = version;
    out->opaque = opaque;
    out->flag = flag;
    out->remark = NSRV_STR_NULL;
    if (remark_len > 0)
        out->remark.ptr =
            nsrv_utf8_arena_dup(arena, (const char *)remark, (size_t)remark_len, &out->remark.len);
    out->has_ext = ext_len > 0;
    out->ext = ext;
    out->n_ext = mw.n;
    out->ext_keys = mw.keys;
    out->ext_nul_free = mw.nul_free;
    return 0;
}

static uint8_t *put_be16(uint8_t *w, uint16_t v) {
    w[0] = (uint8_t)(v >> 8);
    w[1] = (uint8_t)v;
    return w + 2;
}

static uint8_t *put_be32(uint8_t *w, uint32_t v) {
    w[0] = (uint8_t)(v >> 24);
    w[1] = (uint8_t)(v >> 16);
    w[2] = (uint8_t)(v >> 8);
    w[3] = (uint8_t)v;
    return w + 4;
}

static uint8_t *put_bytes(uint8_t *w, const char *p, size_t n) {
    if (n)
        memcpy(w, p, n);
    return w + n;
}

/* Whether an entry is written: Java skips null keys/values; our int16 key
 * length cannot carry more than 32767 bytes, and a 2 GiB value cannot fit. */
static bool entry_encodable(const nsrv_ext_field_t *f) {
    return f->key.ptr && f->val.ptr && f->key.len <= INT16_MAX && f->val.len <= INT32_MAX;
}

int nsrv__hdr_rocketmq_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd) {
    size_t remark_len = cmd->remark.ptr ? cmd->remark.len : 0;
    size_t map_len = 0;
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const nsrv_ext_field_t *f = &cmd->ext[i];
        if (entry_encodable(f))
            map_len += 2 + f->key.len + 4 + f->val.len;
        if (map_len > NSRV_HDR_LEN_MAX)
            return NSRV_ETOOBIG;
    }
    if (remark_len > NSRV_HDR_LEN_MAX ||
        NSRV_HDR_ROCKETMQ_FIXED + remark_len + map_len > NSRV_HDR_LEN_MAX)
        return NSRV_ETOOBIG;

    /* Written in place after one reserve: this runs for every reply. */
    nsrv_buf_reserve(out, NSRV_HDR_ROCKETMQ_FIXED + remark_len + map_len);
    uint8_t *w = (uint8_t *)out->data + out->len;
    w = put_be16(w, (uint16_t)cmd->code);
    /* Java would throw on a null language; JAVA is the harmless stand-in. */
    *w++ = nsrv_language_name(cmd->language) ? (uint8_t)cmd->language : (uint8_t)NSRV_LANG_JAVA;
    w = put_be16(w, (uint16_t)cmd->version);
    w = put_be32(w, (uint32_t)cmd->opaque);
    w = put_be32(w, (uint32_t)cmd->flag);
    w = put_be32(w, (uint32_t)remark_len);
    w = put_bytes(w, cmd->remark.ptr, remark_len);
    w = put_be32(w, (uint32_t)map_len);
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const nsrv_ext_field_t *f = &cmd->ext[i];
        if (!entry_encodable(f))
            continue;
        w = put_be16(w, (uint16_t)f->key.len);
        w = put_bytes(w, f->key.ptr, f->key.len);
        w = put_be32(w, (uint32_t)f->val.len);
        w = put_bytes(w, f->val.ptr, f->val.len);
    }
    out->len = (size_t)((char *)w - out->data);
    out->data[out->len] = '\0';
    return 0;
}
