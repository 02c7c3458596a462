/* SPDX-License-Identifier: Apache-2.0 */
/*
 * msgpack helpers for the gossip codecs: msgpack-c's packer for writing (the
 * only file that includes msgpack.h) and a strict bounded cursor for reading.
 * See gossip_int.h for why reading does not use msgpack-c's unpacker.
 */
#include "gossip_int.h"

#include <string.h>

#include "nsrv/utf8.h"

#include <msgpack.h>

static int buf_write_cb(void *data, const char *p, size_t len) {
    nsrv_buf_append((nsrv_buf_t *)data, p, len);
    return 0;
}

static void packer_init(msgpack_packer *pk, nsrv__mp_w_t *w) {
    msgpack_packer_init(pk, w->out, buf_write_cb);
}

void nsrv__mp_w_array(nsrv__mp_w_t *w, uint32_t n) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_array(&pk, n);
}

void nsrv__mp_w_uint(nsrv__mp_w_t *w, uint64_t v) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_uint64(&pk, v);
}

void nsrv__mp_w_int(nsrv__mp_w_t *w, int64_t v) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_int64(&pk, v);
}

/* An empty body reaches buf_write_cb with len 0, which nsrv_buf_append allows. */
void nsrv__mp_w_str(nsrv__mp_w_t *w, const char *p, size_t len) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_str_with_body(&pk, p, len);
}

void nsrv__mp_w_bin(nsrv__mp_w_t *w, const void *p, size_t len) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_bin_with_body(&pk, p, len);
}

void nsrv__mp_w_nil(nsrv__mp_w_t *w) {
    msgpack_packer pk;
    packer_init(&pk, w);
    msgpack_pack_nil(&pk);
}

/* ---- reading ---- */

static uint64_t load_be(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Reads the n-byte big-endian field after the tag byte; consumes both. */
static int take_be(nsrv__mp_r_t *r, size_t n, uint64_t *v) {
    if (nsrv__mp_r_left(r) < 1 + n)
        return -EPROTO;
    *v = load_be(r->p + r->off + 1, n);
    r->off += 1 + n;
    return 0;
}

int nsrv__mp_r_array(nsrv__mp_r_t *r, uint32_t *n, uint32_t max, size_t min_elem_len) {
    if (nsrv__mp_r_left(r) < 1)
        return -EPROTO;
    uint8_t t = r->p[r->off];
    uint64_t v;
    if ((t & 0xf0) == 0x90) {
        v = t & 0x0f;
        r->off++;
    } else if (t == 0xdc) {
        if (take_be(r, 2, &v) != 0)
            return -EPROTO;
    } else if (t == 0xdd) {
        if (take_be(r, 4, &v) != 0)
            return -EPROTO;
    } else {
        return -EPROTO;
    }
    if (v > max)
        return -EPROTO;
    /* Bound the count by the bytes that could hold it before anyone allocates. */
    if (min_elem_len && v > nsrv__mp_r_left(r) / min_elem_len)
        return -EPROTO;
    *n = (uint32_t)v;
    return 0;
}

/*
 * Any msgpack integer as (negative?, magnitude or value). Positive values may
 * come in either family (encoders differ); the callers check ranges.
 */
static int read_any_int(nsrv__mp_r_t *r, bool *neg, uint64_t *u, int64_t *s) {
    if (nsrv__mp_r_left(r) < 1)
        return -EPROTO;
    uint8_t t = r->p[r->off];
    uint64_t v;
    if (t <= 0x7f) {
        r->off++;
        *neg = false;
        *u = t;
        return 0;
    }
    if (t >= 0xe0) {
        r->off++;
        *neg = true;
        *s = (int8_t)t;
        return 0;
    }
    /* 0xcc-0xcf: uint 8/16/32/64, 0xd0-0xd3: int 8/16/32/64; the low two bits give the width. */
    if (t < 0xcc || t > 0xd3)
        return -EPROTO;
    size_t n = (size_t)1 << (t & 3);
    if (take_be(r, n, &v) != 0)
        return -EPROTO;
    if (t <= 0xcf) {
        *neg = false;
        *u = v;
        return 0;
    }
    int64_t sv;
    if (n == 1)
        sv = (int8_t)(uint8_t)v;
    else if (n == 2)
        sv = (int16_t)(uint16_t)v;
    else if (n == 4)
        sv = (int32_t)(uint32_t)v;
    else
        sv = (int64_t)v;
    if (sv >= 0) {
        *neg = false;
        *u = (uint64_t)sv;
    } else {
        *neg = true;
        *s = sv;
    }
    return 0;
}

int nsrv__mp_r_uint(nsrv__mp_r_t *r, uint64_t *v, uint64_t max) {
    bool neg;
    uint64_t u = 0;
    int64_t s = 0;
    if (read_any_int(r, &neg, &u, &s) != 0 || neg || u > max)
        return -EPROTO;
    *v = u;
    return 0;
}

int nsrv__mp_r_int(nsrv__mp_r_t *r, int64_t *v, int64_t min, int64_t max) {
    bool neg;
    uint64_t u = 0;
    int64_t s = 0;
    if (read_any_int(r, &neg, &u, &s) != 0)
        return -EPROTO;
    if (!neg) {
        if (u > (uint64_t)INT64_MAX)
            return -EPROTO;
        s = (int64_t)u;
    }
    if (s < min || s > max)
        return -EPROTO;
    *v = s;
    return 0;
}

/* Length of a str (raw = false) or bin (raw = true); consumes the header. */
static int read_len(nsrv__mp_r_t *r, bool raw, size_t *n) {
    if (nsrv__mp_r_left(r) < 1)
        return -EPROTO;
    uint8_t t = r->p[r->off];
    uint64_t v;
    if (!raw && (t & 0xe0) == 0xa0) {
        v = t & 0x1f;
        r->off++;
    } else if (t == (raw ? 0xc4 : 0xd9)) {
        if (take_be(r, 1, &v) != 0)
            return -EPROTO;
    } else if (t == (raw ? 0xc5 : 0xda)) {
        if (take_be(r, 2, &v) != 0)
            return -EPROTO;
    } else if (t == (raw ? 0xc6 : 0xdb)) {
        if (take_be(r, 4, &v) != 0)
            return -EPROTO;
    } else {
        return -EPROTO;
    }
    if (v > nsrv__mp_r_left(r))
        return -EPROTO;
    *n = (size_t)v;
    return 0;
}

int nsrv__mp_r_str(nsrv__mp_r_t *r, nsrv_str_t *s, size_t max) {
    size_t n;
    if (read_len(r, false, &n) != 0 || n > max)
        return -EPROTO;
    /* msgpack str is UTF-8, and our names hold no NUL: a peer's string that
     * breaks either rule could not have come from a request we accepted. */
    const char *p = (const char *)(r->p + r->off);
    if (memchr(p, '\0', n) || !nsrv_utf8_valid(p, n))
        return -EPROTO;
    s->ptr = (const char *)(r->p + r->off);
    s->len = n;
    r->off += n;
    return 0;
}

int nsrv__mp_r_bin(nsrv__mp_r_t *r, const uint8_t **p, size_t *n, size_t max) {
    size_t len;
    if (read_len(r, true, &len) != 0 || len > max)
        return -EPROTO;
    *p = r->p + r->off;
    *n = len;
    r->off += len;
    return 0;
}

bool nsrv__mp_r_nil(nsrv__mp_r_t *r) {
    if (nsrv__mp_r_left(r) >= 1 && r->p[r->off] == 0xc0) {
        r->off++;
        return true;
    }
    return false;
}
