/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pull response codec (proto/gossip.md §7): length-prefixed broker frames,
 * then an end frame [nil, count, src_inc, src_mono_ms, sig, key_id] whose
 * Ed25519 signature covers
 *   "nsrv-gossip-pull-v1" ‖ BLAKE2b-256(every stream byte before the end
 *   frame's length prefix ‖ request nonce) ‖ u64 BE src_inc ‖
 *   u64 BE src_mono_ms.
 * The responder's clock reading is signed and bound to the nonce, so the
 * requester can use it as a round-trip clock anchor (proto/gossip.md §7.6).
 * The decoder is incremental and keeps nothing it has not received: frame
 * buffers grow with the bytes that arrive, not with the declared length.
 */
#include "nsrv/gossip_msg.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "gossip_int.h"

#define PULL_DOMAIN "nsrv-gossip-pull-v1"
#define ITEM_FIELDS 5
#define IDENT_FIELDS 8
#define END_FIELDS 6
/* Room always left in the total for the end frame (its real size is < 80 bytes). */
#define END_RESERVE 128
/* First allocation for a frame buffer; it then doubles with the data. */
#define FRAME_CHUNK 4096

#define SIGNED_LEN (sizeof PULL_DOMAIN - 1 + NSRV_SEAL_HASH_LEN + 16)

/* The message the end frame's signature covers. */
static void signed_msg(nsrv_seal_hash_t *h, const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                       uint64_t src_inc, uint64_t src_mono_ms, uint8_t msg[SIGNED_LEN]) {
    nsrv_seal_hash_update(h, nonce, NSRV_GOSSIP_NONCE_LEN);
    memcpy(msg, PULL_DOMAIN, sizeof PULL_DOMAIN - 1);
    nsrv_seal_hash_final(h, msg + sizeof PULL_DOMAIN - 1);
    uint8_t *t = msg + sizeof PULL_DOMAIN - 1 + NSRV_SEAL_HASH_LEN;
    for (int i = 0; i < 8; i++) {
        t[i] = (uint8_t)(src_inc >> (56 - 8 * i));
        t[8 + i] = (uint8_t)(src_mono_ms >> (56 - 8 * i));
    }
}

static bool str_ok(nsrv_str_t s, bool need) {
    if (s.len > NSRV_GOSSIP_PULL_STR_MAX || (s.len && !s.ptr) || (need && s.len == 0))
        return false;
    return s.len == 0 || memchr(s.ptr, '\0', s.len) == NULL;
}

static bool item_ok(const nsrv_gossip_pull_item_t *it) {
    if (!str_ok(it->addr, true) || !str_ok(it->cluster, true) || !str_ok(it->name, true) ||
        !str_ok(it->ha_addr, false) || (it->zone_name.ptr && !str_ok(it->zone_name, false)) ||
        it->acting_master < -1 || it->acting_master > 1 || it->timeout_ms > NSRV_GOSSIP_TIME_MAX ||
        (it->reg_len && !it->reg))
        return false;
    return it->bkey == nsrv_gossip_bkey(it->cluster, it->name, it->id, it->addr);
}

/* ---------------------------------------------------------------- encode */

void nsrv_gossip_pull_enc_init(nsrv_gossip_pull_enc_t *e,
                               const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN]) {
    memset(e, 0, sizeof *e);
    memcpy(e->nonce, nonce, NSRV_GOSSIP_NONCE_LEN);
    nsrv_seal_hash_init(&e->hash);
}

int nsrv_gossip_pull_enc_item(nsrv_gossip_pull_enc_t *e, const nsrv_gossip_pull_item_t *it,
                              nsrv_buf_t *out) {
    if (!item_ok(it))
        return -EINVAL;
    if (e->count >= NSRV_GOSSIP_PULL_MAX_FRAMES || it->reg_len > NSRV_GOSSIP_PULL_FRAME_MAX)
        return NSRV_ETOOBIG;
    size_t start = out->len;
    nsrv_buf_append_be32(out, 0);
    nsrv__mp_w_t w = {out};
    nsrv__mp_w_array(&w, ITEM_FIELDS);
    nsrv__mp_w_uint(&w, it->bkey);
    nsrv__mp_w_array(&w, IDENT_FIELDS);
    nsrv__mp_w_str(&w, it->addr.ptr, it->addr.len);
    nsrv__mp_w_str(&w, it->cluster.ptr, it->cluster.len);
    nsrv__mp_w_str(&w, it->name.ptr, it->name.len);
    nsrv__mp_w_int(&w, it->id);
    nsrv__mp_w_str(&w, it->ha_addr.ptr, it->ha_addr.len);
    if (it->zone_name.ptr)
        nsrv__mp_w_str(&w, it->zone_name.ptr, it->zone_name.len);
    else
        nsrv__mp_w_nil(&w);
    nsrv__mp_w_int(&w, it->acting_master);
    nsrv__mp_w_uint(&w, it->timeout_ms);
    nsrv__mp_w_array(&w, 3);
    nsrv__mp_w_int(&w, it->dv.counter);
    nsrv__mp_w_int(&w, it->dv.timestamp);
    nsrv__mp_w_int(&w, it->dv.state_version);
    nsrv__mp_w_uint(&w, it->age_ms);
    nsrv__mp_w_bin(&w, it->reg, it->reg_len);
    size_t frame_len = out->len - start - 4;
    if (frame_len > NSRV_GOSSIP_PULL_FRAME_MAX ||
        e->total + 4 + frame_len > NSRV_GOSSIP_PULL_TOTAL_MAX - END_RESERVE) {
        out->len = start;
        out->data[start] = '\0';
        return NSRV_ETOOBIG;
    }
    nsrv_buf_put_be32_at(out, start, (uint32_t)frame_len);
    nsrv_seal_hash_update(&e->hash, out->data + start, out->len - start);
    e->total += out->len - start;
    e->count++;
    return 0;
}

int nsrv_gossip_pull_enc_finish(nsrv_gossip_pull_enc_t *e, const uint8_t sk[NSRV_SEAL_SK_LEN],
                                uint8_t key_id, uint64_t src_inc, uint64_t src_mono_ms,
                                nsrv_buf_t *out) {
    /* The decoder's ranges, as for the datagram envelope. */
    if (src_inc == 0 || src_inc > NSRV_GOSSIP_TIME_MAX || src_mono_ms > NSRV_GOSSIP_TIME_MAX)
        return -EINVAL;
    uint8_t msg[SIGNED_LEN];
    uint8_t sig[NSRV_SEAL_SIG_LEN];
    signed_msg(&e->hash, e->nonce, src_inc, src_mono_ms, msg);
    nsrv_seal_sign(sk, msg, sizeof msg, sig);
    size_t start = out->len;
    nsrv_buf_append_be32(out, 0);
    nsrv__mp_w_t w = {out};
    nsrv__mp_w_array(&w, END_FIELDS);
    nsrv__mp_w_nil(&w);
    nsrv__mp_w_uint(&w, e->count);
    nsrv__mp_w_uint(&w, src_inc);
    nsrv__mp_w_uint(&w, src_mono_ms);
    nsrv__mp_w_bin(&w, sig, sizeof sig);
    nsrv__mp_w_uint(&w, key_id);
    nsrv_buf_put_be32_at(out, start, (uint32_t)(out->len - start - 4));
    e->total += out->len - start;
    return 0;
}

/* ---------------------------------------------------------------- decode */

struct nsrv_gossip_pull_dec {
    uint8_t nonce[NSRV_GOSSIP_NONCE_LEN];
    nsrv_gossip_key_t keys[NSRV_GOSSIP_MAX_KEYS];
    size_t nkeys;
    nsrv_seal_hash_t hash;
    int state; /* NSRV_AGAIN running, 0 done, < 0 failed */
    uint64_t total;
    uint8_t hdr[4];
    size_t hdr_have;
    uint8_t *frame; /* the frame being received */
    size_t frame_len, frame_have, frame_cap;
    nsrv_gossip_pull_item_t *items;
    size_t nitems, items_cap;
    uint64_t src_inc, src_mono_ms; /* from the verified end frame */
    uint8_t **bufs;                /* completed frame buffers the items point into */
    size_t nbufs, bufs_cap;
};

nsrv_gossip_pull_dec_t *nsrv_gossip_pull_dec_create(const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN],
                                                    const nsrv_gossip_key_t *keys, size_t nkeys) {
    nsrv_gossip_pull_dec_t *d = nsrv_calloc(1, sizeof *d);
    memcpy(d->nonce, nonce, NSRV_GOSSIP_NONCE_LEN);
    d->nkeys = NSRV_MIN(nkeys, (size_t)NSRV_GOSSIP_MAX_KEYS);
    if (d->nkeys)
        memcpy(d->keys, keys, d->nkeys * sizeof *keys);
    nsrv_seal_hash_init(&d->hash);
    d->state = NSRV_AGAIN;
    return d;
}

void nsrv_gossip_pull_dec_destroy(nsrv_gossip_pull_dec_t **dp) {
    if (!dp || !*dp)
        return;
    nsrv_gossip_pull_dec_t *d = *dp;
    for (size_t i = 0; i < d->nbufs; i++)
        nsrv_free(d->bufs[i]);
    nsrv_free(d->bufs);
    nsrv_free(d->items);
    nsrv_free(d->frame);
    nsrv_free(d);
    *dp = NULL;
}

size_t nsrv_gossip_pull_dec_items(const nsrv_gossip_pull_dec_t *d,
                                  const nsrv_gossip_pull_item_t **items) {
    if (d->state != 0) {
        *items = NULL;
        return 0;
    }
    *items = d->items;
    return d->nitems;
}

static int read_item(nsrv__mp_r_t *r, nsrv_gossip_pull_item_t *it) {
    uint32_t n;
    uint64_t age;
    int64_t acting;
    memset(it, 0, sizeof *it);
    if (nsrv__mp_r_uint(r, &it->bkey, UINT64_MAX) != 0 ||
        nsrv__mp_r_array(r, &n, IDENT_FIELDS, 1) != 0 || n != IDENT_FIELDS ||
        nsrv__mp_r_str(r, &it->addr, NSRV_GOSSIP_PULL_STR_MAX) != 0 ||
        nsrv__mp_r_str(r, &it->cluster, NSRV_GOSSIP_PULL_STR_MAX) != 0 ||
        nsrv__mp_r_str(r, &it->name, NSRV_GOSSIP_PULL_STR_MAX) != 0 ||
        nsrv__mp_r_int(r, &it->id, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_str(r, &it->ha_addr, NSRV_GOSSIP_PULL_STR_MAX) != 0)
        return -EPROTO;
    /* nil leaves zone_name.ptr NULL; an empty str gives a non-NULL ptr. */
    if (!nsrv__mp_r_nil(r) && nsrv__mp_r_str(r, &it->zone_name, NSRV_GOSSIP_PULL_STR_MAX) != 0)
        return -EPROTO;
    if (nsrv__mp_r_int(r, &acting, -1, 1) != 0 ||
        nsrv__mp_r_uint(r, &it->timeout_ms, NSRV_GOSSIP_TIME_MAX) != 0 ||
        nsrv__mp_r_array(r, &n, 3, 1) != 0 || n != 3 ||
        nsrv__mp_r_int(r, &it->dv.counter, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_int(r, &it->dv.timestamp, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_int(r, &it->dv.state_version, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_uint(r, &age, UINT32_MAX) != 0 ||
        nsrv__mp_r_bin(r, &it->reg, &it->reg_len, NSRV_GOSSIP_PULL_FRAME_MAX) != 0)
        return -EPROTO;
    it->acting_master = (int8_t)acting;
    it->age_ms = (uint32_t)age;
    return item_ok(it) ? 0 : -EPROTO;
}

/* Verifies the end frame; the stream is complete on success. */
static int finish(nsrv_gossip_pull_dec_t *d, nsrv__mp_r_t *r) {
    uint64_t count, key_id, inc, mono;
    const uint8_t *sig;
    size_t sig_len;
    if (nsrv__mp_r_uint(r, &count, UINT32_MAX) != 0 ||
        nsrv__mp_r_uint(r, &inc, NSRV_GOSSIP_TIME_MAX) != 0 || inc == 0 ||
        nsrv__mp_r_uint(r, &mono, NSRV_GOSSIP_TIME_MAX) != 0 ||
        nsrv__mp_r_bin(r, &sig, &sig_len, NSRV_SEAL_SIG_LEN) != 0 || sig_len != NSRV_SEAL_SIG_LEN ||
        nsrv__mp_r_uint(r, &key_id, 255) != 0 || nsrv__mp_r_left(r) != 0 || count != d->nitems)
        return NSRV_GOSSIP_EDECODE;
    const nsrv_gossip_key_t *key = NULL;
    for (size_t i = 0; i < d->nkeys; i++)
        if (d->keys[i].key_id == key_id)
            key = &d->keys[i];
    if (!key)
        return NSRV_GOSSIP_EKEY_ID;
    uint8_t msg[SIGNED_LEN];
    signed_msg(&d->hash, d->nonce, inc, mono, msg);
    if (nsrv_seal_verify(key->pk, msg, sizeof msg, sig) != 0)
        return NSRV_GOSSIP_EBAD_SIG;
    d->src_inc = inc;
    d->src_mono_ms = mono;
    return 0;
}

/* A complete frame is in d->frame: a broker (kept) or the end frame. */
static int take_frame(nsrv_gossip_pull_dec_t *d) {
    nsrv__mp_r_t r;
    uint32_t n;
    nsrv__mp_r_init(&r, d->frame, d->frame_len);
    if (nsrv__mp_r_array(&r, &n, NSRV_MAX(ITEM_FIELDS, END_FIELDS), 1) != 0)
        return NSRV_GOSSIP_EDECODE;
    if (n == END_FIELDS && nsrv__mp_r_nil(&r))
        return finish(d, &r);
    if (n != ITEM_FIELDS)
        return NSRV_GOSSIP_EDECODE;
    if (d->nitems >= NSRV_GOSSIP_PULL_MAX_FRAMES)
        return NSRV_ETOOBIG;
    if (d->nitems == d->items_cap) {
        d->items_cap = d->items_cap ? d->items_cap * 2 : 16;
        d->items = nsrv_realloc(d->items, d->items_cap * sizeof *d->items);
    }
    if (read_item(&r, &d->items[d->nitems]) != 0 || nsrv__mp_r_left(&r) != 0)
        return NSRV_GOSSIP_EDECODE;
    if (d->nbufs == d->bufs_cap) {
        d->bufs_cap = d->bufs_cap ? d->bufs_cap * 2 : 16;
        d->bufs = nsrv_realloc(d->bufs, d->bufs_cap * sizeof *d->bufs);
    }
    nsrv_seal_hash_update(&d->hash, d->hdr, sizeof d->hdr);
    nsrv_seal_hash_update(&d->hash, d->frame, d->frame_len);
    d->bufs[d->nbufs++] = d->frame;
    d->nitems++;
    d->frame = NULL;
    d->frame_cap = 0;
    return NSRV_AGAIN;
}

int nsrv_gossip_pull_dec_feed(nsrv_gossip_pull_dec_t *d, const void *data, size_t len) {
    const uint8_t *p = data;
    if (d->state <= 0) {
        if (d->state == 0 && len > 0)
            d->state = NSRV_GOSSIP_EDECODE; /* bytes after the end frame */
        return d->state;
    }
    while (len > 0) {
        if (d->hdr_have < 4) {
            size_t k = NSRV_MIN(len, 4 - d->hdr_have);
            memcpy(d->hdr + d->hdr_have, p, k);
            d->hdr_have += k;
            p += k;
            len -= k;
            if (d->hdr_have < 4)
                break;
            d->frame_len = nsrv_load_be32(d->hdr);
            d->frame_have = 0;
            if (d->frame_len == 0) {
                d->state = NSRV_GOSSIP_EDECODE;
                return d->state;
            }
            if (d->frame_len > NSRV_GOSSIP_PULL_FRAME_MAX ||
                d->total + 4 + d->frame_len > NSRV_GOSSIP_PULL_TOTAL_MAX) {
                d->state = NSRV_ETOOBIG;
                return d->state;
            }
            d->total += 4 + d->frame_len;
            continue;
        }
        size_t k = NSRV_MIN(len, d->frame_len - d->frame_have);
        if (d->frame_have + k > d->frame_cap) {
            size_t cap = d->frame_cap ? d->frame_cap : FRAME_CHUNK;
            while (cap < d->frame_have + k)
                cap *= 2;
            cap = NSRV_MIN(cap, d->frame_len);
            d->frame = nsrv_realloc(d->frame, cap);
            d->frame_cap = cap;
        }
        memcpy(d->frame + d->frame_have, p, k);
        d->frame_have += k;
        p += k;
        len -= k;
        if (d->frame_have < d->frame_len)
            break;
        d->hdr_have = 0;
        int rc = take_frame(d);
        if (rc != NSRV_AGAIN) {
            /* Done: anything left in this chunk is trailing garbage. */
            d->state = rc == 0 && len > 0 ? NSRV_GOSSIP_EDECODE : rc;
            return d->state;
        }
    }
    return NSRV_AGAIN;
}

void nsrv_gossip_pull_dec_origin(const nsrv_gossip_pull_dec_t *d, uint64_t *src_inc,
                                 uint64_t *src_mono_ms) {
    bool ok = d->state == 0;
    if (src_inc)
        *src_inc = ok ? d->src_inc : 0;
    if (src_mono_ms)
        *src_mono_ms = ok ? d->src_mono_ms : 0;
}
