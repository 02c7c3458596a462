/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gossip datagram codec (proto/gossip.md §4, §5): envelope, the four UDP
 * bodies and PULL_REQ, the broker key, reason names. Pure.
 */
#include "nsrv/gossip_msg.h"

#include <string.h>

#include "gossip_int.h"

#define ENVELOPE_FIELDS 11

/* ver + type + 1-byte cluster + 7 one-byte fields + empty body, in one array. */
#define MIN_ENVELOPE 13

static const char *const reason_names[NSRV_GOSSIP_NREASONS] = {
    "size",   "version",    "cluster",         "unknown_src",        "src_addr", "key_id",
    "dst",    "stale_time", "old_incarnation", "future_incarnation", "replay",   "bad_sig",
    "decode", "type",
};

int nsrv_gossip_reason_index(int code) {
    int i = NSRV_GOSSIP_ESIZE - code;
    return i >= 0 && i < NSRV_GOSSIP_NREASONS ? i : -1;
}

const char *nsrv_gossip_reason_name(int code) {
    int i = nsrv_gossip_reason_index(code);
    return i < 0 ? "?" : reason_names[i];
}

uint64_t nsrv_gossip_bkey(nsrv_str_t cluster, nsrv_str_t name, int64_t id, nsrv_str_t addr) {
    static const uint8_t zero = 0;
    char dec[24];
    size_t n = 0;
    /* Magnitude as unsigned so INT64_MIN works. */
    uint64_t mag = id < 0 ? (uint64_t)0 - (uint64_t)id : (uint64_t)id;
    char rev[24];
    do {
        rev[n++] = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag);
    size_t k = 0;
    if (id < 0)
        dec[k++] = '-';
    while (n)
        dec[k++] = rev[--n];

    nsrv_seal_hash_t h;
    uint8_t out[NSRV_SEAL_HASH_LEN];
    nsrv_seal_hash_init(&h);
    nsrv_seal_hash_update(&h, cluster.ptr, cluster.len);
    nsrv_seal_hash_update(&h, &zero, 1);
    nsrv_seal_hash_update(&h, name.ptr, name.len);
    nsrv_seal_hash_update(&h, &zero, 1);
    nsrv_seal_hash_update(&h, dec, k);
    nsrv_seal_hash_update(&h, &zero, 1);
    nsrv_seal_hash_update(&h, addr.ptr, addr.len);
    nsrv_seal_hash_final(&h, out);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | out[i];
    return v;
}

/* ---------------------------------------------------------------- encode */

static bool entries_ok(const nsrv_gossip_entry_t *e, size_t n, uint64_t lo, uint64_t hi) {
    for (size_t i = 0; i < n; i++) {
        if (e[i].bkey < lo || e[i].bkey > hi)
            return false;
        if (i && e[i].bkey <= e[i - 1].bkey)
            return false;
    }
    return true;
}

static bool host_valid(nsrv_str_t h) {
    if (h.len > NSRV_GOSSIP_ANN_HOST_MAX || (h.len && !h.ptr))
        return false;
    for (size_t i = 0; i < h.len; i++) {
        char c = h.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == ':' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

const char *nsrv_gossip_announce_problem(const nsrv_gossip_announce_t *a) {
    if (a->ns_port == 0)
        return "NameServer port 0";
    if (!host_valid(a->ns_host))
        return "NameServer host over 255 bytes or not of [A-Za-z0-9.:_-]";
    if (!host_valid(a->status_host))
        return "status host over 255 bytes or not of [A-Za-z0-9.:_-]";
    return NULL;
}

int nsrv__gossip_msg_check(const nsrv_gossip_msg_t *m) {
    if (m->ver != NSRV_GOSSIP_VERSION || !m->cluster.ptr || m->cluster.len == 0 ||
        m->cluster.len > NSRV_GOSSIP_CLUSTER_MAX || m->src < NSRV_GOSSIP_NODE_MIN ||
        m->src > NSRV_GOSSIP_NODE_MAX || m->dst < NSRV_GOSSIP_NODE_MIN || m->src_inc == 0 ||
        m->src_inc > NSRV_GOSSIP_TIME_MAX || m->seq == 0 || m->src_mono_ms > NSRV_GOSSIP_TIME_MAX ||
        m->wall_ms > NSRV_GOSSIP_TIME_MAX)
        return -EINVAL;
    switch (m->type) {
    case NSRV_GOSSIP_DIGEST_FULL: {
        const typeof(m->body.full) *f = &m->body.full;
        if (f->nparts == 0 || f->part >= f->nparts || f->key_lo > f->key_hi ||
            (f->n && !f->entries) || !entries_ok(f->entries, f->n, f->key_lo, f->key_hi))
            return -EINVAL;
        return 0;
    }
    case NSRV_GOSSIP_DIGEST_DELTA:
        if (m->body.delta.n == 0 || !m->body.delta.entries ||
            !entries_ok(m->body.delta.entries, m->body.delta.n, 0, UINT64_MAX))
            return -EINVAL;
        return 0;
    case NSRV_GOSSIP_SYNC_REQ:
    case NSRV_GOSSIP_LEAVE:
        return 0;
    case NSRV_GOSSIP_ANNOUNCE:
        return nsrv_gossip_announce_problem(&m->body.announce) ? -EINVAL : 0;
    case NSRV_GOSSIP_TOMBSTONE: {
        const nsrv_gossip_tomb_t *t = m->body.tomb.tombs;
        if (m->body.tomb.n == 0 || !t)
            return -EINVAL;
        for (size_t i = 0; i < m->body.tomb.n; i++) {
            if (t[i].reason != NSRV_GOSSIP_TOMB_UNREGISTER && t[i].reason != NSRV_GOSSIP_TOMB_EVICT)
                return -EINVAL;
            if (i && t[i].bkey <= t[i - 1].bkey)
                return -EINVAL;
        }
        return 0;
    }
    case NSRV_GOSSIP_PULL_REQ: {
        const uint64_t *k = m->body.pull.keys;
        if (m->dst == NSRV_GOSSIP_DST_ANY || m->body.pull.n > NSRV_GOSSIP_PULL_MAX_KEYS ||
            (m->body.pull.n && !k))
            return -EINVAL;
        for (size_t i = 1; i < m->body.pull.n; i++)
            if (k[i] <= k[i - 1])
                return -EINVAL;
        return 0;
    }
    default:
        return -EINVAL;
    }
}

void nsrv__gossip_put_prefix(nsrv_buf_t *out, const nsrv_gossip_msg_t *m, size_t nlist) {
    nsrv__mp_w_t w = {out};
    nsrv__mp_w_array(&w, ENVELOPE_FIELDS);
    nsrv__mp_w_uint(&w, m->ver);
    nsrv__mp_w_uint(&w, m->type);
    nsrv__mp_w_str(&w, m->cluster.ptr, m->cluster.len);
    nsrv__mp_w_uint(&w, m->src);
    nsrv__mp_w_uint(&w, m->src_inc);
    nsrv__mp_w_uint(&w, m->seq);
    nsrv__mp_w_uint(&w, m->src_mono_ms);
    nsrv__mp_w_uint(&w, m->wall_ms);
    nsrv__mp_w_uint(&w, m->dst);
    nsrv__mp_w_uint(&w, m->key_id);
    switch (m->type) {
    case NSRV_GOSSIP_DIGEST_FULL:
        nsrv__mp_w_array(&w, 6);
        nsrv__mp_w_uint(&w, m->body.full.round);
        nsrv__mp_w_uint(&w, m->body.full.part);
        nsrv__mp_w_uint(&w, m->body.full.nparts);
        nsrv__mp_w_uint(&w, m->body.full.key_lo);
        nsrv__mp_w_uint(&w, m->body.full.key_hi);
        break;
    case NSRV_GOSSIP_DIGEST_DELTA:
    case NSRV_GOSSIP_TOMBSTONE:
        nsrv__mp_w_array(&w, 1);
        break;
    case NSRV_GOSSIP_SYNC_REQ:
    case NSRV_GOSSIP_LEAVE:
        nsrv__mp_w_array(&w, 0);
        return;
    case NSRV_GOSSIP_ANNOUNCE: {
        const nsrv_gossip_announce_t *a = &m->body.announce;
        nsrv__mp_w_array(&w, 4);
        nsrv__mp_w_str(&w, a->ns_host.ptr, a->ns_host.len);
        nsrv__mp_w_uint(&w, a->ns_port);
        nsrv__mp_w_str(&w, a->status_host.ptr, a->status_host.len);
        nsrv__mp_w_uint(&w, a->status_port);
        return;
    }
    case NSRV_GOSSIP_PULL_REQ:
        nsrv__mp_w_array(&w, 2);
        nsrv__mp_w_bin(&w, m->body.pull.nonce, NSRV_GOSSIP_NONCE_LEN);
        break;
    default:
        return;
    }
    nsrv__mp_w_array(&w, (uint32_t)nlist);
}

/* Entries and tombstones are 6-arrays that both start [bkey, counter, timestamp, stateVersion]. */
static void put_bkey_dv(nsrv__mp_w_t *w, uint64_t bkey, const nsrv_data_version_t *dv) {
    nsrv__mp_w_array(w, 6);
    nsrv__mp_w_uint(w, bkey);
    nsrv__mp_w_int(w, dv->counter);
    nsrv__mp_w_int(w, dv->timestamp);
    nsrv__mp_w_int(w, dv->state_version);
}

void nsrv__gossip_put_entry(nsrv_buf_t *out, const nsrv_gossip_entry_t *e) {
    nsrv__mp_w_t w = {out};
    put_bkey_dv(&w, e->bkey, &e->dv);
    nsrv__mp_w_uint(&w, e->age_ms);
    nsrv__mp_w_uint(&w, e->flags);
}

void nsrv__gossip_put_tomb(nsrv_buf_t *out, const nsrv_gossip_tomb_t *t) {
    nsrv__mp_w_t w = {out};
    put_bkey_dv(&w, t->bkey, &t->dv);
    nsrv__mp_w_uint(&w, t->reason);
    nsrv__mp_w_uint(&w, t->age_ms);
}

int nsrv_gossip_msg_encode(const nsrv_gossip_msg_t *m, const uint8_t sk[NSRV_SEAL_SK_LEN],
                           nsrv_buf_t *out) {
    if (nsrv__gossip_msg_check(m) != 0)
        return -EINVAL;
    size_t start = out->len;
    /* The list after the prefix: entries, tombstones or pull keys (none for the others). */
    size_t n = m->type == NSRV_GOSSIP_DIGEST_FULL    ? m->body.full.n
               : m->type == NSRV_GOSSIP_DIGEST_DELTA ? m->body.delta.n
               : m->type == NSRV_GOSSIP_TOMBSTONE    ? m->body.tomb.n
               : m->type == NSRV_GOSSIP_PULL_REQ     ? m->body.pull.n
                                                     : 0;
    if (n > UINT32_MAX)
        return -EINVAL;
    nsrv__gossip_put_prefix(out, m, n);
    nsrv__mp_w_t w = {out};
    for (size_t i = 0; i < n; i++) {
        switch (m->type) {
        case NSRV_GOSSIP_DIGEST_FULL:
            nsrv__gossip_put_entry(out, &m->body.full.entries[i]);
            break;
        case NSRV_GOSSIP_DIGEST_DELTA:
            nsrv__gossip_put_entry(out, &m->body.delta.entries[i]);
            break;
        case NSRV_GOSSIP_TOMBSTONE:
            nsrv__gossip_put_tomb(out, &m->body.tomb.tombs[i]);
            break;
        default:
            nsrv__mp_w_uint(&w, m->body.pull.keys[i]);
            break;
        }
    }
    uint8_t sig[NSRV_SEAL_SIG_LEN];
    nsrv_seal_sign(sk, out->data + start, out->len - start, sig);
    nsrv_buf_append(out, sig, sizeof sig);
    return 0;
}

/* ---------------------------------------------------------------- decode */

int nsrv_gossip_msg_decode_header(const uint8_t *d, size_t len, nsrv_gossip_msg_t *m,
                                  size_t *body_off) {
    if (len < NSRV_GOSSIP_SIG_LEN + MIN_ENVELOPE)
        return NSRV_GOSSIP_ESIZE;
    nsrv__mp_r_t r;
    nsrv__mp_r_init(&r, d, len - NSRV_GOSSIP_SIG_LEN);
    uint32_t nfields;
    uint64_t ver, type, src, inc, seq, mono, wall, dst, key_id;
    nsrv_str_t cluster;
    if (nsrv__mp_r_array(&r, &nfields, UINT32_MAX, 1) != 0 || nfields < 1 ||
        nsrv__mp_r_uint(&r, &ver, UINT64_MAX) != 0)
        return NSRV_GOSSIP_EDECODE;
    /* Checked before the field count: another version may lay the envelope out differently. */
    if (ver != NSRV_GOSSIP_VERSION)
        return NSRV_GOSSIP_EVERSION;
    if (nfields != ENVELOPE_FIELDS || nsrv__mp_r_uint(&r, &type, 255) != 0 ||
        nsrv__mp_r_str(&r, &cluster, NSRV_GOSSIP_CLUSTER_MAX) != 0 || cluster.len == 0 ||
        nsrv__mp_r_uint(&r, &src, NSRV_GOSSIP_NODE_MAX) != 0 || src < NSRV_GOSSIP_NODE_MIN ||
        nsrv__mp_r_uint(&r, &inc, NSRV_GOSSIP_TIME_MAX) != 0 || inc == 0 ||
        nsrv__mp_r_uint(&r, &seq, UINT64_MAX) != 0 || seq == 0 ||
        nsrv__mp_r_uint(&r, &mono, NSRV_GOSSIP_TIME_MAX) != 0 ||
        nsrv__mp_r_uint(&r, &wall, NSRV_GOSSIP_TIME_MAX) != 0 ||
        nsrv__mp_r_uint(&r, &dst, 255) != 0 || dst < NSRV_GOSSIP_NODE_MIN ||
        nsrv__mp_r_uint(&r, &key_id, 255) != 0)
        return NSRV_GOSSIP_EDECODE;
    memset(m, 0, sizeof *m);
    m->ver = (uint8_t)ver;
    m->type = (uint8_t)type;
    m->cluster = cluster;
    m->src = (uint8_t)src;
    m->src_inc = inc;
    m->seq = seq;
    m->src_mono_ms = mono;
    m->wall_ms = wall;
    m->dst = (uint8_t)dst;
    m->key_id = (uint8_t)key_id;
    m->signed_len = len - NSRV_GOSSIP_SIG_LEN;
    m->sig = d + m->signed_len;
    *body_off = r.off;
    return 0;
}

static int read_dv(nsrv__mp_r_t *r, nsrv_data_version_t *dv) {
    if (nsrv__mp_r_int(r, &dv->counter, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_int(r, &dv->timestamp, INT64_MIN, INT64_MAX) != 0 ||
        nsrv__mp_r_int(r, &dv->state_version, INT64_MIN, INT64_MAX) != 0)
        return -EPROTO;
    return 0;
}

/* A list of digest entries, strictly increasing bkeys inside [lo, hi]. */
static int read_entries(nsrv__mp_r_t *r, nsrv_arena_t *a, uint64_t lo, uint64_t hi,
                        const nsrv_gossip_entry_t **out, size_t *out_n) {
    uint32_t n;
    if (nsrv__mp_r_array(r, &n, UINT32_MAX, NSRV__GOSSIP_MIN_ITEM) != 0)
        return -EPROTO;
    nsrv_gossip_entry_t *e = n ? nsrv_arena_alloc(a, (size_t)n * sizeof *e) : NULL;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nf;
        uint64_t age, flags;
        if (nsrv__mp_r_array(r, &nf, 6, 1) != 0 || nf != 6 ||
            nsrv__mp_r_uint(r, &e[i].bkey, UINT64_MAX) != 0 || read_dv(r, &e[i].dv) != 0 ||
            nsrv__mp_r_uint(r, &age, UINT32_MAX) != 0 || nsrv__mp_r_uint(r, &flags, 255) != 0)
            return -EPROTO;
        if (e[i].bkey < lo || e[i].bkey > hi || (i && e[i].bkey <= e[i - 1].bkey))
            return -EPROTO;
        e[i].age_ms = (uint32_t)age;
        e[i].flags = (uint8_t)flags;
    }
    *out = e;
    *out_n = n;
    return 0;
}

static int read_tombs(nsrv__mp_r_t *r, nsrv_arena_t *a, nsrv_gossip_msg_t *m) {
    uint32_t n;
    if (nsrv__mp_r_array(r, &n, UINT32_MAX, NSRV__GOSSIP_MIN_ITEM) != 0 || n == 0)
        return -EPROTO;
    nsrv_gossip_tomb_t *t = nsrv_arena_alloc(a, (size_t)n * sizeof *t);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nf;
        uint64_t reason, age;
        if (nsrv__mp_r_array(r, &nf, 6, 1) != 0 || nf != 6 ||
            nsrv__mp_r_uint(r, &t[i].bkey, UINT64_MAX) != 0 || read_dv(r, &t[i].dv) != 0 ||
            nsrv__mp_r_uint(r, &reason, 255) != 0 || nsrv__mp_r_uint(r, &age, UINT32_MAX) != 0)
            return -EPROTO;
        if ((reason != NSRV_GOSSIP_TOMB_UNREGISTER && reason != NSRV_GOSSIP_TOMB_EVICT) ||
            (i && t[i].bkey <= t[i - 1].bkey))
            return -EPROTO;
        t[i].reason = (uint8_t)reason;
        t[i].age_ms = (uint32_t)age;
    }
    m->body.tomb.tombs = t;
    m->body.tomb.n = n;
    return 0;
}

static int read_pull(nsrv__mp_r_t *r, nsrv_arena_t *a, nsrv_gossip_msg_t *m) {
    const uint8_t *nonce;
    size_t nonce_len;
    uint32_t n;
    if (nsrv__mp_r_bin(r, &nonce, &nonce_len, NSRV_GOSSIP_NONCE_LEN) != 0 ||
        nonce_len != NSRV_GOSSIP_NONCE_LEN ||
        nsrv__mp_r_array(r, &n, NSRV_GOSSIP_PULL_MAX_KEYS, 1) != 0)
        return -EPROTO;
    memcpy(m->body.pull.nonce, nonce, NSRV_GOSSIP_NONCE_LEN);
    uint64_t *k = n ? nsrv_arena_alloc(a, (size_t)n * sizeof *k) : NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (nsrv__mp_r_uint(r, &k[i], UINT64_MAX) != 0 || (i && k[i] <= k[i - 1]))
            return -EPROTO;
    }
    m->body.pull.keys = k;
    m->body.pull.n = n;
    return 0;
}

static int read_body(nsrv__mp_r_t *r, nsrv_arena_t *a, nsrv_gossip_msg_t *m) {
    uint32_t nf;
    switch (m->type) {
    case NSRV_GOSSIP_DIGEST_FULL: {
        uint64_t round, part, nparts, lo, hi;
        if (nsrv__mp_r_array(r, &nf, 6, 1) != 0 || nf != 6 ||
            nsrv__mp_r_uint(r, &round, UINT32_MAX) != 0 ||
            nsrv__mp_r_uint(r, &part, NSRV_GOSSIP_MAX_PARTS - 1) != 0 ||
            nsrv__mp_r_uint(r, &nparts, NSRV_GOSSIP_MAX_PARTS) != 0 || part >= nparts ||
            nsrv__mp_r_uint(r, &lo, UINT64_MAX) != 0 || nsrv__mp_r_uint(r, &hi, UINT64_MAX) != 0 ||
            lo > hi)
            return -EPROTO;
        m->body.full.round = (uint32_t)round;
        m->body.full.part = (uint16_t)part;
        m->body.full.nparts = (uint16_t)nparts;
        m->body.full.key_lo = lo;
        m->body.full.key_hi = hi;
        return read_entries(r, a, lo, hi, &m->body.full.entries, &m->body.full.n);
    }
    case NSRV_GOSSIP_DIGEST_DELTA:
        if (nsrv__mp_r_array(r, &nf, 1, 1) != 0 || nf != 1 ||
            read_entries(r, a, 0, UINT64_MAX, &m->body.delta.entries, &m->body.delta.n) != 0 ||
            m->body.delta.n == 0)
            return -EPROTO;
        return 0;
    case NSRV_GOSSIP_SYNC_REQ:
    case NSRV_GOSSIP_LEAVE:
        return nsrv__mp_r_array(r, &nf, 0, 1) == 0 && nf == 0 ? 0 : -EPROTO;
    case NSRV_GOSSIP_ANNOUNCE: {
        nsrv_gossip_announce_t *an = &m->body.announce;
        uint64_t ns_port, st_port;
        if (nsrv__mp_r_array(r, &nf, 4, 1) != 0 || nf != 4 ||
            nsrv__mp_r_str(r, &an->ns_host, NSRV_GOSSIP_ANN_HOST_MAX) != 0 ||
            nsrv__mp_r_uint(r, &ns_port, UINT16_MAX) != 0 ||
            nsrv__mp_r_str(r, &an->status_host, NSRV_GOSSIP_ANN_HOST_MAX) != 0 ||
            nsrv__mp_r_uint(r, &st_port, UINT16_MAX) != 0)
            return -EPROTO;
        an->ns_port = (uint16_t)ns_port;
        an->status_port = (uint16_t)st_port;
        return nsrv_gossip_announce_problem(an) ? -EPROTO : 0;
    }
    case NSRV_GOSSIP_TOMBSTONE:
        if (nsrv__mp_r_array(r, &nf, 1, 1) != 0 || nf != 1)
            return -EPROTO;
        return read_tombs(r, a, m);
    case NSRV_GOSSIP_PULL_REQ:
        if (m->dst == NSRV_GOSSIP_DST_ANY || nsrv__mp_r_array(r, &nf, 2, 1) != 0 || nf != 2)
            return -EPROTO;
        return read_pull(r, a, m);
    default:
        return -EPROTO;
    }
}

int nsrv_gossip_msg_decode_body(const uint8_t *d, size_t len, size_t body_off, nsrv_arena_t *arena,
                                nsrv_gossip_msg_t *m) {
    if (m->type < NSRV_GOSSIP_DIGEST_FULL || m->type > NSRV_GOSSIP_LEAVE)
        return NSRV_GOSSIP_ETYPE;
    if (len < NSRV_GOSSIP_SIG_LEN || body_off > len - NSRV_GOSSIP_SIG_LEN)
        return NSRV_GOSSIP_EDECODE;
    nsrv__mp_r_t r;
    nsrv__mp_r_init(&r, d, len - NSRV_GOSSIP_SIG_LEN);
    r.off = body_off;
    if (read_body(&r, arena, m) != 0 || nsrv__mp_r_left(&r) != 0)
        return NSRV_GOSSIP_EDECODE;
    return 0;
}

int nsrv_gossip_msg_decode(const uint8_t *d, size_t len, nsrv_arena_t *arena,
                           nsrv_gossip_msg_t *m) {
    size_t off;
    int rc = nsrv_gossip_msg_decode_header(d, len, m, &off);
    if (rc != 0)
        return rc;
    return nsrv_gossip_msg_decode_body(d, len, off, arena, m);
}
