/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sending side of the gossip codec: fills envelopes from the node's sender
 * state and cuts lists into datagrams that fit the budget, measured on the
 * real encoding (proto/gossip.md §6). Pure: clocks come from the caller.
 */
#include "nsrv/gossip_msg.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "gossip_int.h"

int nsrv_gossip_sender_init(nsrv_gossip_sender_t *s, nsrv_str_t cluster, uint8_t node_id,
                            uint64_t inc, uint64_t mono_start_ms, uint8_t key_id,
                            const uint8_t sk[NSRV_SEAL_SK_LEN]) {
    if (!cluster.ptr || cluster.len == 0 || cluster.len > NSRV_GOSSIP_CLUSTER_MAX ||
        node_id < NSRV_GOSSIP_NODE_MIN || node_id > NSRV_GOSSIP_NODE_MAX || inc == 0 ||
        inc > NSRV_GOSSIP_TIME_MAX)
        return -EINVAL;
    memset(s, 0, sizeof *s);
    memcpy(s->cluster, cluster.ptr, cluster.len);
    s->cluster_len = cluster.len;
    s->node_id = node_id;
    s->inc = inc;
    s->mono_start_ms = mono_start_ms;
    s->next_seq = 1;
    nsrv_gossip_sender_set_key(s, key_id, sk);
    return 0;
}

void nsrv_gossip_sender_set_key(nsrv_gossip_sender_t *s, uint8_t key_id,
                                const uint8_t sk[NSRV_SEAL_SK_LEN]) {
    s->key_id = key_id;
    memcpy(s->sk, sk, NSRV_SEAL_SK_LEN);
}

void nsrv_gossip_sender_deinit(nsrv_gossip_sender_t *s) {
    nsrv_seal_wipe(s->sk, sizeof s->sk);
}

static bool opts_ok(const nsrv_gossip_send_opts_t *o, bool need_budget) {
    if (o->dst < NSRV_GOSSIP_NODE_MIN)
        return false;
    return !need_budget ||
           (o->budget >= NSRV_GOSSIP_DGRAM_MIN && o->budget <= NSRV_GOSSIP_DGRAM_MAX);
}

/* The envelope of the next datagram (seq = next_seq + seq_ahead). */
static void fill_env(const nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o, uint8_t type,
                     uint64_t seq_ahead, nsrv_gossip_msg_t *m) {
    memset(m, 0, sizeof *m);
    m->ver = NSRV_GOSSIP_VERSION;
    m->type = type;
    m->cluster.ptr = s->cluster;
    m->cluster.len = s->cluster_len;
    m->src = s->node_id;
    m->src_inc = s->inc;
    m->seq = s->next_seq + seq_ahead;
    uint64_t mono = o->now_mono_ms > s->mono_start_ms ? o->now_mono_ms - s->mono_start_ms : 0;
    m->src_mono_ms = NSRV_MIN(mono, NSRV_GOSSIP_TIME_MAX);
    uint64_t wall = o->now_wall_ms > 0 ? (uint64_t)o->now_wall_ms : 0;
    m->wall_ms = NSRV_MIN(wall, NSRV_GOSSIP_TIME_MAX);
    m->dst = o->dst;
    m->key_id = s->key_id;
}

/* Encoded length of the envelope prefix of m with an nlist-element list. */
static size_t prefix_len(nsrv_buf_t *scratch, const nsrv_gossip_msg_t *m, size_t nlist) {
    nsrv_buf_reset(scratch);
    nsrv__gossip_put_prefix(scratch, m, nlist);
    return scratch->len;
}

/* Encodes m, checks the budget (an internal invariant) and hands it to emit. */
static int encode_emit(nsrv_gossip_sender_t *s, nsrv_gossip_msg_t *m, uint32_t budget,
                       nsrv_buf_t *dg, nsrv_gossip_emit_fn emit, void *ud) {
    nsrv_buf_reset(dg);
    int rc = nsrv_gossip_msg_encode(m, s->sk, dg);
    if (rc != 0)
        return rc;
    if (budget && dg->len > budget)
        return -EFAULT; /* the size plan was wrong: a bug, never send it */
    s->next_seq++;
    return emit(ud, (const uint8_t *)dg->data, dg->len);
}

/* Pre-encodes every list element once: offs[i]..offs[i+1] is element i's length. */
static size_t *element_offsets(const void *items, size_t n, bool tombs, nsrv_buf_t *scratch) {
    size_t *offs = nsrv_malloc((n + 1) * sizeof *offs);
    nsrv_buf_reset(scratch);
    offs[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (tombs)
            nsrv__gossip_put_tomb(scratch, &((const nsrv_gossip_tomb_t *)items)[i]);
        else
            nsrv__gossip_put_entry(scratch, &((const nsrv_gossip_entry_t *)items)[i]);
        offs[i + 1] = scratch->len;
    }
    return offs;
}

typedef struct {
    size_t start, n;
    uint64_t key_lo, key_hi;
} part_plan_t;

/* Frees what planning a send allocated and gives its result: rc when negative, else 0 (emit's
 * own non-negative results are not ours). */
static int send_done(void *plan, size_t *offs, nsrv_buf_t *scratch, nsrv_buf_t *dg, int rc) {
    nsrv_free(plan);
    nsrv_free(offs);
    nsrv_buf_deinit(scratch);
    nsrv_buf_deinit(dg);
    return rc < 0 ? rc : 0;
}

int nsrv_gossip_sender_full(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                            uint32_t round, const nsrv_gossip_entry_t *entries, size_t n,
                            nsrv_gossip_emit_fn emit, void *ud) {
    if (!opts_ok(o, true) || (n && !entries))
        return -EINVAL;
    for (size_t i = 1; i < n; i++)
        if (entries[i].bkey <= entries[i - 1].bkey)
            return -EINVAL;

    nsrv_buf_t scratch = NSRV_BUF_INIT, dg = NSRV_BUF_INIT;
    size_t *offs = element_offsets(entries, n, false, &scratch);
    part_plan_t *plan = nsrv_malloc((n + 1) * sizeof *plan);
    size_t nplan = 0;
    int rc = 0;

    /*
     * Plan the cut first, so nothing is sent when the input cannot be sent
     * whole. nparts is unknown while planning: size it at its widest (65535).
     * Sizes only grow with k (key_hi grows with k and is widest for the last
     * part), so the first k that does not fit ends the part.
     */
    nsrv_gossip_msg_t m;
    size_t start = 0;
    uint64_t key_lo = 0;
    do {
        if (nplan >= NSRV_GOSSIP_MAX_PARTS)
            return send_done(plan, offs, &scratch, &dg, NSRV_ETOOBIG);
        fill_env(s, o, NSRV_GOSSIP_DIGEST_FULL, nplan, &m);
        m.body.full.round = round;
        m.body.full.part = (uint16_t)nplan;
        m.body.full.nparts = NSRV_GOSSIP_MAX_PARTS;
        m.body.full.key_lo = key_lo;
        size_t best = 0;
        uint64_t best_hi = UINT64_MAX;
        for (size_t k = 1; start + k <= n; k++) {
            bool last = start + k == n;
            m.body.full.key_hi = last ? UINT64_MAX : entries[start + k - 1].bkey;
            size_t len =
                prefix_len(&scratch, &m, k) + (offs[start + k] - offs[start]) + NSRV_GOSSIP_SIG_LEN;
            if (len > o->budget)
                break;
            best = k;
            best_hi = m.body.full.key_hi;
        }
        if (best == 0 && start < n) /* one entry does not fit: budget below any sane value */
            return send_done(plan, offs, &scratch, &dg, -EMSGSIZE);
        if (start == n) {
            /* Empty digest: one part claiming the whole key space. */
            m.body.full.key_hi = UINT64_MAX;
            if (prefix_len(&scratch, &m, 0) + NSRV_GOSSIP_SIG_LEN > o->budget)
                return send_done(plan, offs, &scratch, &dg, -EMSGSIZE);
        }
        plan[nplan++] = (part_plan_t){start, best, key_lo, best_hi};
        start += best;
        key_lo = best_hi + 1; /* never used after the last part, whose hi is 2^64-1 */
    } while (start < n);

    for (size_t i = 0; i < nplan; i++) {
        fill_env(s, o, NSRV_GOSSIP_DIGEST_FULL, 0, &m);
        m.body.full.round = round;
        m.body.full.part = (uint16_t)i;
        m.body.full.nparts = (uint16_t)nplan;
        m.body.full.key_lo = plan[i].key_lo;
        m.body.full.key_hi = plan[i].key_hi;
        m.body.full.entries = entries ? entries + plan[i].start : NULL;
        m.body.full.n = plan[i].n;
        rc = encode_emit(s, &m, o->budget, &dg, emit, ud);
        if (rc < 0)
            break;
    }
    return send_done(plan, offs, &scratch, &dg, rc);
}

/* DIGEST_DELTA or TOMBSTONE: greedy datagrams of consecutive list elements. */
static int send_list(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o, uint8_t type,
                     const void *items, size_t n, nsrv_gossip_emit_fn emit, void *ud) {
    bool tombs = type == NSRV_GOSSIP_TOMBSTONE;
    if (!opts_ok(o, true) || n == 0 || !items)
        return -EINVAL;
    for (size_t i = 1; i < n; i++) {
        uint64_t a = tombs ? ((const nsrv_gossip_tomb_t *)items)[i - 1].bkey
                           : ((const nsrv_gossip_entry_t *)items)[i - 1].bkey;
        uint64_t b = tombs ? ((const nsrv_gossip_tomb_t *)items)[i].bkey
                           : ((const nsrv_gossip_entry_t *)items)[i].bkey;
        if (b <= a)
            return -EINVAL;
    }
    if (tombs) {
        for (size_t i = 0; i < n; i++) {
            uint8_t r = ((const nsrv_gossip_tomb_t *)items)[i].reason;
            if (r != NSRV_GOSSIP_TOMB_UNREGISTER && r != NSRV_GOSSIP_TOMB_EVICT)
                return -EINVAL;
        }
    }

    nsrv_buf_t scratch = NSRV_BUF_INIT, dg = NSRV_BUF_INIT;
    size_t *offs = element_offsets(items, n, tombs, &scratch);
    size_t *counts = nsrv_malloc(n * sizeof *counts);
    size_t ncounts = 0;
    int rc = 0;
    nsrv_gossip_msg_t m;
    /* Plan every cut before sending anything; the seq only changes the size
     * through its own encoding, so plan with the seq each datagram will get. */
    for (size_t start = 0; start < n; start += counts[ncounts++]) {
        fill_env(s, o, type, ncounts, &m);
        size_t best = 0;
        for (size_t k = 1; start + k <= n; k++) {
            size_t len =
                prefix_len(&scratch, &m, k) + (offs[start + k] - offs[start]) + NSRV_GOSSIP_SIG_LEN;
            if (len > o->budget)
                break;
            best = k;
        }
        if (best == 0)
            return send_done(counts, offs, &scratch, &dg, -EMSGSIZE);
        counts[ncounts] = best;
    }
    for (size_t i = 0, start = 0; i < ncounts; start += counts[i++]) {
        fill_env(s, o, type, 0, &m);
        if (tombs) {
            m.body.tomb.tombs = (const nsrv_gossip_tomb_t *)items + start;
            m.body.tomb.n = counts[i];
        } else {
            m.body.delta.entries = (const nsrv_gossip_entry_t *)items + start;
            m.body.delta.n = counts[i];
        }
        rc = encode_emit(s, &m, o->budget, &dg, emit, ud);
        if (rc < 0)
            break;
    }
    return send_done(counts, offs, &scratch, &dg, rc);
}

int nsrv_gossip_sender_delta(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             const nsrv_gossip_entry_t *entries, size_t n, nsrv_gossip_emit_fn emit,
                             void *ud) {
    return send_list(s, o, NSRV_GOSSIP_DIGEST_DELTA, entries, n, emit, ud);
}

int nsrv_gossip_sender_tombs(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             const nsrv_gossip_tomb_t *tombs, size_t n, nsrv_gossip_emit_fn emit,
                             void *ud) {
    return send_list(s, o, NSRV_GOSSIP_TOMBSTONE, tombs, n, emit, ud);
}

/* The messages that fit one datagram whatever the table holds; only an announce has a body. */
static int send_one(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o, uint8_t type,
                    const nsrv_gossip_announce_t *a, nsrv_gossip_emit_fn emit, void *ud) {
    if (!opts_ok(o, true))
        return -EINVAL;
    nsrv_gossip_msg_t m;
    nsrv_buf_t dg = NSRV_BUF_INIT;
    fill_env(s, o, type, 0, &m);
    if (a)
        m.body.announce = *a;
    int rc = encode_emit(s, &m, o->budget, &dg, emit, ud);
    nsrv_buf_deinit(&dg);
    return rc;
}

int nsrv_gossip_sender_sync(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                            nsrv_gossip_emit_fn emit, void *ud) {
    return send_one(s, o, NSRV_GOSSIP_SYNC_REQ, NULL, emit, ud);
}

int nsrv_gossip_sender_announce(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                                const nsrv_gossip_announce_t *a, nsrv_gossip_emit_fn emit,
                                void *ud) {
    return send_one(s, o, NSRV_GOSSIP_ANNOUNCE, a, emit, ud);
}

int nsrv_gossip_sender_leave(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                             nsrv_gossip_emit_fn emit, void *ud) {
    return send_one(s, o, NSRV_GOSSIP_LEAVE, NULL, emit, ud);
}

int nsrv_gossip_sender_pull_req(nsrv_gossip_sender_t *s, const nsrv_gossip_send_opts_t *o,
                                const uint8_t nonce[NSRV_GOSSIP_NONCE_LEN], const uint64_t *keys,
                                size_t n, nsrv_buf_t *out) {
    if (!opts_ok(o, false) || o->dst == NSRV_GOSSIP_DST_ANY)
        return -EINVAL;
    if (n > NSRV_GOSSIP_PULL_MAX_KEYS)
        return NSRV_ETOOBIG;
    nsrv_gossip_msg_t m;
    fill_env(s, o, NSRV_GOSSIP_PULL_REQ, 0, &m);
    memcpy(m.body.pull.nonce, nonce, NSRV_GOSSIP_NONCE_LEN);
    m.body.pull.keys = keys;
    m.body.pull.n = n;
    size_t start = out->len;
    nsrv_buf_append_be32(out, 0);
    int rc = nsrv_gossip_msg_encode(&m, s->sk, out);
    if (rc == 0 && out->len - start - 4 > NSRV_GOSSIP_PULL_REQ_MAX)
        rc = NSRV_ETOOBIG;
    if (rc != 0) {
        out->len = start;
        out->data[start] = '\0';
        return rc;
    }
    nsrv_buf_put_be32_at(out, start, (uint32_t)(out->len - start - 4));
    s->next_seq++;
    return 0;
}
