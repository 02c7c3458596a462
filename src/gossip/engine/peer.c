/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peer table, receive pipeline, replay window, clock-offset tracking and
 * round-trip clock anchors (proto/gossip.md §7.6, §8, §9). Pure. Each peer is
 * one record: this security state and the engine's part (peer_state.h).
 */
#include "nsrv/gossip_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/netaddr.h"

#include "peer_state.h"

#define WINDOW_WORDS (NSRV_GOSSIP_WINDOW / 64)

typedef struct {
    bool used;
    uint64_t epoch; /* local mono / bucket width */
    int64_t min;
} off_bucket_t;

/* A lower bound on (local mono - the peer's src_mono_ms) for one incarnation. */
typedef struct {
    bool set;
    uint64_t inc;
    int64_t low; /* req_sent - src_mono_ms of the pull */
    int64_t t;   /* local mono when the pull request was sent */
} anchor_t;

struct nsrv_gossip_peer {
    uint8_t node_id;
    struct sockaddr_storage addr; /* AF_UNSPEC while a named peer has never resolved */
    socklen_t addr_len;
    /* A peer configured by host name: looked up when the engine says (node_resolve.c). */
    char host[NSRV_GOSSIP_HOST_MAX + 1]; /* "" for a literal address */
    uint16_t port;
    int resolve_err; /* the last resolution's error; 0 after a success */
    const char *resolve_err_name;
    uint64_t resolve_failures;
    bool resolving, resolved_once; /* a lookup under way; one was started */
    uint64_t resolve_at;           /* local mono when the last lookup started */
    nsrv_gossip_key_t keys[NSRV_GOSSIP_MAX_KEYS];
    size_t nkeys;

    bool has_inc;
    uint64_t inc;
    bool new_inc;
    /* Replay window: bit (seq % 256) for seq in (top - 256, top]. */
    uint64_t top;
    uint64_t bits[WINDOW_WORDS];
    /* Clock offset: minimum of the samples in the live buckets. */
    off_bucket_t buckets[NSRV_GOSSIP_OFF_BUCKETS];
    bool has_off;
    int64_t off;
    int64_t off_anchor;   /* off when it last met the window minimum */
    int64_t off_anchor_t; /* local mono of that moment */
    /*
     * Round-trip anchors: anc belongs to the current incarnation (inc) and
     * is the only thing ages are mapped with; next is the best anchor for
     * the highest incarnation above inc seen in a pull response, promoted
     * when that incarnation's first datagram is accepted.
     */
    anchor_t anc;
    anchor_t next;

    uint64_t last_valid_mono;
    uint8_t last_key_id;
    uint64_t accepted;
    uint64_t rejected[NSRV_GOSSIP_NREASONS];

    nsrv__peer_state_t eng; /* what the engine keeps about it (pulls, presence, trace) */
};

struct nsrv_gossip_peers {
    nsrv_gossip_peer_t *by_id[256];
    uint8_t order[256]; /* configured ids, increasing */
    size_t count;
    uint32_t max_dgram;
    uint64_t accepted;
    uint64_t rejected[NSRV_GOSSIP_NREASONS];
};

/* ------------------------------------------------------------- addresses */

/* The IP as 16 bytes, IPv4 as ::ffff:a.b.c.d so dual-stack sockets match. */
static bool ip16(const struct sockaddr *sa, uint8_t out[16]) {
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return true;
    }
    return false;
}

/*
 * "name:port" with a DNS-style host name (letters, digits, '-', '.', '_'; not
 * all digits and dots, so a mistyped IPv4 literal is not taken for a name).
 */
static bool parse_named(const char *addr, char host[NSRV_GOSSIP_HOST_MAX + 1], uint16_t *port) {
    if (!addr || addr[0] == '[' ||
        nsrv_hostport_split(addr, host, NSRV_GOSSIP_HOST_MAX + 1, port) != 0)
        return false;
    bool digits_dots = true;
    for (const char *c = host; *c; c++) {
        bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '-' || *c == '_';
        if (!alpha && !(*c >= '0' && *c <= '9') && *c != '.')
            return false;
        if (alpha)
            digits_dots = false;
    }
    return !digits_dots;
}

bool nsrv_gossip_peer_addr_valid(const char *addr) {
    struct sockaddr_storage ss;
    socklen_t sl;
    char host[NSRV_GOSSIP_HOST_MAX + 1];
    uint16_t port;
    return nsrv_sockaddr_parse(addr, &ss, &sl) == 0 || parse_named(addr, host, &port);
}

/* Takes c's address: a literal at once; a name keeps the address it resolved to if the
 * peer was already configured with that name (a reload must not forget it). */
static void set_conf_addr(nsrv_gossip_peer_t *p, const char *addr) {
    struct sockaddr_storage ss;
    socklen_t sl;
    if (nsrv_sockaddr_parse(addr, &ss, &sl) == 0) {
        p->addr = ss;
        p->addr_len = sl;
        p->host[0] = '\0';
        p->resolve_err = 0;
        return;
    }
    char host[NSRV_GOSSIP_HOST_MAX + 1];
    uint16_t port = 0;
    parse_named(addr, host, &port);
    if (strcmp(host, p->host) != 0) {
        memset(&p->addr, 0, sizeof p->addr);
        p->addr.ss_family = AF_UNSPEC;
        p->addr_len = 0;
        p->resolve_err = 0;
        p->resolved_once = false;
        snprintf(p->host, sizeof p->host, "%s", host);
    }
    p->port = port;
    if (p->addr.ss_family == AF_INET)
        ((struct sockaddr_in *)&p->addr)->sin_port = htons(port);
    else if (p->addr.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&p->addr)->sin6_port = htons(port);
}

static bool same_ip(const nsrv_gossip_peer_t *p, const struct sockaddr *from) {
    uint8_t a[16], b[16];
    return ip16((const struct sockaddr *)&p->addr, a) && ip16(from, b) && memcmp(a, b, 16) == 0;
}

/* ----------------------------------------------------------------- table */

bool nsrv_gossip_peers_ip_known(const nsrv_gossip_peers_t *t, const struct sockaddr *from) {
    for (size_t i = 0; i < t->count; i++)
        if (same_ip(t->by_id[t->order[i]], from))
            return true;
    return false;
}

static uint32_t clamp_dgram(uint32_t v) {
    return v >= NSRV_GOSSIP_DGRAM_MIN && v <= NSRV_GOSSIP_DGRAM_MAX ? v : NSRV_GOSSIP_DGRAM_DEFAULT;
}

static void peer_free(nsrv_gossip_peer_t *p) {
    if (!p)
        return;
    nsrv__peer_state_release(&p->eng);
    nsrv_free(p);
}

nsrv__peer_state_t *nsrv__peer_state(nsrv_gossip_peer_t *p) {
    return &p->eng;
}

nsrv_gossip_peers_t *nsrv_gossip_peers_create(uint32_t max_dgram) {
    nsrv_gossip_peers_t *t = nsrv_calloc(1, sizeof *t);
    t->max_dgram = clamp_dgram(max_dgram);
    return t;
}

void nsrv_gossip_peers_destroy(nsrv_gossip_peers_t **tp) {
    if (!tp || !*tp)
        return;
    for (int i = 0; i < 256; i++)
        peer_free((*tp)->by_id[i]);
    nsrv_free(*tp);
    *tp = NULL;
}

void nsrv_gossip_peers_set_max_dgram(nsrv_gossip_peers_t *t, uint32_t max_dgram) {
    t->max_dgram = clamp_dgram(max_dgram);
}

int nsrv_gossip_peers_configure(nsrv_gossip_peers_t *t, const nsrv_gossip_peer_conf_t *confs,
                                size_t n) {
    bool seen[256] = {false};
    if (n && !confs)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        const nsrv_gossip_peer_conf_t *c = &confs[i];
        if (c->node_id < NSRV_GOSSIP_NODE_MIN || c->node_id > NSRV_GOSSIP_NODE_MAX ||
            seen[c->node_id] || c->nkeys == 0 || c->nkeys > NSRV_GOSSIP_MAX_KEYS || !c->keys ||
            !nsrv_gossip_peer_addr_valid(c->addr))
            return -EINVAL;
        for (size_t a = 0; a < c->nkeys; a++)
            for (size_t b = a + 1; b < c->nkeys; b++)
                if (c->keys[a].key_id == c->keys[b].key_id)
                    return -EINVAL;
        seen[c->node_id] = true;
    }
    for (size_t i = 0; i < n; i++) {
        const nsrv_gossip_peer_conf_t *c = &confs[i];
        nsrv_gossip_peer_t *p = t->by_id[c->node_id];
        if (!p) {
            p = nsrv_calloc(1, sizeof *p);
            p->node_id = c->node_id;
            t->by_id[c->node_id] = p;
        }
        set_conf_addr(p, c->addr);
        memset(p->keys, 0, sizeof p->keys);
        memcpy(p->keys, c->keys, c->nkeys * sizeof *c->keys);
        p->nkeys = c->nkeys;
    }
    t->count = 0;
    for (int id = 0; id < 256; id++) {
        if (t->by_id[id] && !seen[id]) {
            peer_free(t->by_id[id]);
            t->by_id[id] = NULL;
        }
        if (t->by_id[id])
            t->order[t->count++] = (uint8_t)id;
    }
    return 0;
}

size_t nsrv_gossip_peers_count(const nsrv_gossip_peers_t *t) {
    return t->count;
}

nsrv_gossip_peer_t *nsrv_gossip_peers_at(const nsrv_gossip_peers_t *t, size_t i) {
    return i < t->count ? t->by_id[t->order[i]] : NULL;
}

nsrv_gossip_peer_t *nsrv_gossip_peers_find(const nsrv_gossip_peers_t *t, uint8_t node_id) {
    return t->by_id[node_id];
}

uint8_t nsrv_gossip_peer_id(const nsrv_gossip_peer_t *p) {
    return p->node_id;
}

const struct sockaddr *nsrv_gossip_peer_addr(const nsrv_gossip_peer_t *p, socklen_t *len) {
    if (len)
        *len = p->addr_len;
    return (const struct sockaddr *)&p->addr;
}

const char *nsrv_gossip_peer_host(const nsrv_gossip_peer_t *p) {
    return p->host[0] ? p->host : NULL;
}

bool nsrv_gossip_peer_has_addr(const nsrv_gossip_peer_t *p) {
    return p->addr.ss_family == AF_INET || p->addr.ss_family == AF_INET6;
}

int nsrv_gossip_peer_set_resolved(nsrv_gossip_peer_t *p, const struct sockaddr *ip) {
    if (!p->host[0] || !ip || (ip->sa_family != AF_INET && ip->sa_family != AF_INET6))
        return -EINVAL;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (ip->sa_family == AF_INET) {
        struct sockaddr_in a = *(const struct sockaddr_in *)ip;
        a.sin_port = htons(p->port);
        memcpy(&ss, &a, sizeof a);
        len = sizeof a;
    } else {
        struct sockaddr_in6 a = *(const struct sockaddr_in6 *)ip;
        a.sin6_port = htons(p->port);
        memcpy(&ss, &a, sizeof a);
        len = sizeof a;
    }
    p->resolve_err = 0;
    bool changed = len != p->addr_len || memcmp(&ss, &p->addr, len) != 0;
    p->addr = ss;
    p->addr_len = len;
    return changed ? 1 : 0;
}

void nsrv_gossip_peer_set_resolve_error(nsrv_gossip_peer_t *p, int err, const char *name) {
    p->resolve_err = err ? err : -1;
    p->resolve_err_name = name;
    p->resolve_failures++;
}

void nsrv_gossip_peer_resolve_started(nsrv_gossip_peer_t *p, uint64_t now_mono_ms) {
    p->resolving = p->resolved_once = true;
    p->resolve_at = now_mono_ms;
}

void nsrv_gossip_peer_resolve_soon(nsrv_gossip_peer_t *p) {
    p->resolved_once = false;
}

bool nsrv_gossip_peer_resolving(const nsrv_gossip_peer_t *p) {
    return p->resolving;
}

void nsrv_gossip_peer_resolve_done(nsrv_gossip_peer_t *p) {
    p->resolving = false;
}

bool nsrv_gossip_peer_resolve_is_due(const nsrv_gossip_peer_t *p, uint64_t now_mono_ms,
                                     uint32_t interval_ms, bool kick) {
    if (!p->host[0] || p->resolving)
        return false;
    if (!p->resolved_once)
        return true;
    uint64_t since = now_mono_ms - p->resolve_at;
    if (kick)
        return since >= NSRV_GOSSIP_RESOLVE_KICK_MS;
    bool silent = !p->has_inc || now_mono_ms - p->last_valid_mono >
                                     (uint64_t)NSRV_GOSSIP_RESOLVE_SILENT_INTERVALS * interval_ms;
    if (silent || p->resolve_err || !nsrv_gossip_peer_has_addr(p))
        return since >= NSRV_GOSSIP_RESOLVE_SILENT_MS;
    return since >= NSRV_GOSSIP_RESOLVE_MS;
}

const nsrv_gossip_key_t *nsrv_gossip_peer_keys(const nsrv_gossip_peer_t *p, size_t *n) {
    *n = p->nkeys;
    return p->keys;
}

/* ---------------------------------------------------------- replay window */

static bool bit_get(const nsrv_gossip_peer_t *p, uint64_t seq) {
    unsigned i = (unsigned)(seq % NSRV_GOSSIP_WINDOW);
    return (p->bits[i / 64] >> (i % 64)) & 1u;
}

static void bit_put(nsrv_gossip_peer_t *p, uint64_t seq, bool on) {
    unsigned i = (unsigned)(seq % NSRV_GOSSIP_WINDOW);
    uint64_t m = (uint64_t)1 << (i % 64);
    p->bits[i / 64] = on ? p->bits[i / 64] | m : p->bits[i / 64] & ~m;
}

/* True if seq was accepted already or is too far behind to tell. */
static bool window_seen(const nsrv_gossip_peer_t *p, uint64_t seq) {
    if (seq > p->top)
        return false;
    if (p->top - seq >= NSRV_GOSSIP_WINDOW)
        return true;
    return bit_get(p, seq);
}

static void window_set(nsrv_gossip_peer_t *p, uint64_t seq) {
    if (seq > p->top) {
        uint64_t diff = seq - p->top;
        if (diff >= NSRV_GOSSIP_WINDOW)
            memset(p->bits, 0, sizeof p->bits);
        else
            for (uint64_t s = p->top + 1; s < seq; s++)
                bit_put(p, s, false); /* slots of seqs now leaving the window */
        p->top = seq;
    }
    bit_put(p, seq, true);
}

/* ---------------------------------------------------------- clock offset */

static void offset_sample(nsrv_gossip_peer_t *p, uint64_t now_mono, uint64_t src_mono) {
    int64_t now = (int64_t)NSRV_MIN(now_mono, NSRV_GOSSIP_TIME_MAX);
    int64_t sample = now - (int64_t)src_mono;
    uint64_t epoch = (uint64_t)now / NSRV_GOSSIP_OFF_BUCKET_MS;
    off_bucket_t *b = &p->buckets[epoch % NSRV_GOSSIP_OFF_BUCKETS];
    if (!b->used || b->epoch != epoch) {
        b->used = true;
        b->epoch = epoch;
        b->min = sample;
    } else if (sample < b->min) {
        b->min = sample;
    }
    bool any = false;
    int64_t m = 0;
    for (int i = 0; i < NSRV_GOSSIP_OFF_BUCKETS; i++) {
        const off_bucket_t *c = &p->buckets[i];
        /* Only buckets of the last NSRV_GOSSIP_OFF_BUCKETS epochs count. */
        if (!c->used || c->epoch + NSRV_GOSSIP_OFF_BUCKETS <= epoch)
            continue;
        if (!any || c->min < m)
            m = c->min;
        any = true;
    }
    /*
     * Falls at once, rises toward the window minimum no faster than
     * NSRV_GOSSIP_OFF_RISE_PPM. Without the cap, a peer silent for a minute
     * (or whose packets an attacker held back) would have its offset set by
     * the next, possibly delayed, packet: its delay would become extra
     * liveness. Real drift is ~100 ppm.
     */
    if (!p->has_off || m <= p->off) {
        p->off = m;
        p->off_anchor = m;
        p->off_anchor_t = now;
    } else {
        /* Clamped so the product cannot overflow (2^40 ms is 35 years). */
        int64_t elapsed = NSRV_MAX(NSRV_MIN(now - p->off_anchor_t, (int64_t)1 << 40), 0);
        int64_t ceiling = p->off_anchor + elapsed * NSRV_GOSSIP_OFF_RISE_PPM / 1000000;
        if (m <= ceiling) {
            p->off = m;
            p->off_anchor = m;
            p->off_anchor_t = now;
        } else {
            p->off = ceiling;
        }
    }
    p->has_off = true;
}

/* ---------------------------------------------------------- clock anchor */

static int64_t clamp_time(uint64_t v) {
    return (int64_t)NSRV_MIN(v, NSRV_GOSSIP_TIME_MAX);
}

/* How far the two clocks may have drifted apart in elapsed ms, rounded up. */
static int64_t drift_allowance(int64_t elapsed) {
    /* Clamped so the product cannot overflow (2^40 ms is 35 years). */
    elapsed = NSRV_MAX(NSRV_MIN(elapsed, (int64_t)1 << 40), 0);
    return (elapsed * NSRV_GOSSIP_ANCHOR_DRIFT_PPM + 999999) / 1000000;
}

/* The anchor's lower bound at local time now, after the drift allowance. */
static int64_t anchor_at(const anchor_t *a, int64_t now) {
    return a->low - drift_allowance(now - a->t);
}

/*
 * Stores (low, t) in slot a for incarnation inc unless a holds a better
 * anchor of that incarnation: one that still gives a higher bound at now
 * and is younger than NSRV_GOSSIP_ANCHOR_REFRESH_MS.
 */
static void anchor_put(anchor_t *a, uint64_t inc, int64_t low, int64_t t, int64_t now) {
    if (a->set && a->inc == inc && now - a->t < NSRV_GOSSIP_ANCHOR_REFRESH_MS &&
        anchor_at(a, now) > low - drift_allowance(now - t))
        return;
    a->set = true;
    a->inc = inc;
    a->low = low;
    a->t = t;
}

void nsrv_gossip_peer_anchor(nsrv_gossip_peer_t *p, uint64_t src_inc, uint64_t src_mono_ms,
                             uint64_t req_sent_mono_ms, uint64_t now_mono_ms) {
    /* A request sent "after" now is a caller bug; trusting it could over-estimate. */
    if (src_inc == 0 || src_inc > NSRV_GOSSIP_TIME_MAX || req_sent_mono_ms > now_mono_ms)
        return;
    int64_t now = clamp_time(now_mono_ms);
    int64_t t = clamp_time(req_sent_mono_ms);
    /*
     * The responder read src_mono_ms after our request left at t, so the
     * true offset (local - src) at that instant is at least t - src_mono_ms.
     * Both are below 2^62: no overflow.
     */
    int64_t low = t - clamp_time(src_mono_ms);
    if (p->has_inc && src_inc < p->inc)
        return; /* a finished incarnation: its clock means nothing now */
    if (p->has_inc && src_inc == p->inc) {
        anchor_put(&p->anc, src_inc, low, t, now);
        return;
    }
    /* An incarnation we have no datagram of yet: keep the highest one. */
    if (p->next.set && p->next.inc > src_inc)
        return;
    anchor_put(&p->next, src_inc, low, t, now);
}

uint64_t nsrv_gossip_peer_last_seen(const nsrv_gossip_peer_t *p, uint64_t src_mono_ms,
                                    uint32_t age_ms, uint64_t now_mono_ms) {
    /* Without a round-trip anchor the offset is only an upper bound: unusable. */
    if (!p->has_inc || !p->anc.set || p->anc.inc != p->inc)
        return 0;
    int64_t now = clamp_time(now_mono_ms);
    int64_t off = anchor_at(&p->anc, now);
    /*
     * The sample minimum is an upper bound on the true offset; taking the
     * smaller of the two can only move the result earlier, and it caps the
     * damage if the clocks drifted faster than the allowance assumes.
     */
    if (p->has_off && p->off < off)
        off = p->off;
    /* |off| and src_mono_ms are below 2^62 (+ allowance < 2^47): no overflow. */
    int64_t v = clamp_time(src_mono_ms) - (int64_t)age_ms + off;
    if (v > now)
        v = now;
    return v < 0 ? 0 : (uint64_t)v;
}

/* -------------------------------------------------------------- pipeline */

static const nsrv_gossip_key_t *find_key(const nsrv_gossip_peer_t *p, uint8_t key_id) {
    for (size_t i = 0; i < p->nkeys; i++)
        if (p->keys[i].key_id == key_id)
            return &p->keys[i];
    return NULL;
}

static int check(nsrv_gossip_peers_t *t, uint8_t my_id, const char *cluster, const uint8_t *d,
                 size_t len, const struct sockaddr *from, uint64_t now_mono, int64_t now_wall,
                 nsrv_gossip_msg_t *out, nsrv_arena_t *arena, nsrv_gossip_peer_t **out_peer,
                 bool tcp) {
    nsrv_gossip_peer_t *p = NULL;
    nsrv_gossip_msg_t m;
    size_t body_off = 0;
    int rc;
    const nsrv_gossip_key_t *key = NULL;
    bool new_inc = false;
    uint64_t wall_now = now_wall > 0 ? (uint64_t)now_wall : 0;

    if (!d || len > (tcp ? NSRV_GOSSIP_PULL_REQ_MAX : t->max_dgram)) {
        rc = NSRV_GOSSIP_ESIZE;
        goto reject;
    }
    rc = nsrv_gossip_msg_decode_header(d, len, &m, &body_off);
    if (rc != 0)
        goto reject;
    if (!nsrv_str_eq(m.cluster, nsrv_str_c(cluster))) {
        rc = NSRV_GOSSIP_ECLUSTER;
        goto reject;
    }
    p = t->by_id[m.src];
    if (!p) {
        rc = NSRV_GOSSIP_EUNKNOWN_SRC;
        goto reject;
    }
    if (!same_ip(p, from)) {
        rc = NSRV_GOSSIP_ESRC_ADDR;
        goto reject;
    }
    key = find_key(p, m.key_id);
    if (!key) {
        rc = NSRV_GOSSIP_EKEY_ID;
        goto reject;
    }
    if (m.dst != my_id && (tcp || m.dst != NSRV_GOSSIP_DST_ANY)) {
        rc = NSRV_GOSSIP_EDST;
        goto reject;
    }
    /* No wall-clock freshness check (proto/gossip.md §8): the replay window of
     * the sender's incarnation refuses what was seen, and ages are mapped
     * through the monotonic anchor, so a late datagram cannot stretch a
     * broker's life. wall_ms is informational. */
    if (p->has_inc && m.src_inc < p->inc) {
        rc = NSRV_GOSSIP_EOLD_INC;
        goto reject;
    }
    if (m.src_inc > wall_now + NSRV_GOSSIP_INC_FUTURE_MS) {
        rc = NSRV_GOSSIP_EFUTURE_INC;
        goto reject;
    }
    if (tcp ? m.type != NSRV_GOSSIP_PULL_REQ
            : (m.type < NSRV_GOSSIP_DIGEST_FULL || m.type > NSRV_GOSSIP_LEAVE ||
               m.type == NSRV_GOSSIP_PULL_REQ)) {
        rc = NSRV_GOSSIP_ETYPE;
        goto reject;
    }
    new_inc = !p->has_inc || m.src_inc > p->inc;
    if (!new_inc && window_seen(p, m.seq)) {
        rc = NSRV_GOSSIP_EREPLAY;
        goto reject;
    }
    rc = nsrv_gossip_msg_decode_body(d, len, body_off, arena, &m);
    if (rc != 0)
        goto reject;
    if (nsrv_seal_verify(key->pk, d, m.signed_len, m.sig) != 0) {
        rc = NSRV_GOSSIP_EBAD_SIG;
        goto reject;
    }

    /* Commit: authenticated, fresh, not seen before. */
    if (new_inc) {
        p->has_inc = true;
        p->inc = m.src_inc;
        p->top = 0;
        memset(p->bits, 0, sizeof p->bits);
        memset(p->buckets, 0, sizeof p->buckets);
        p->has_off = false;
        /* Only an anchor taken from this very incarnation may map its ages. */
        memset(&p->anc, 0, sizeof p->anc);
        if (p->next.set && p->next.inc == m.src_inc)
            p->anc = p->next;
        if (p->next.set && p->next.inc <= m.src_inc)
            memset(&p->next, 0, sizeof p->next);
    }
    p->new_inc = new_inc;
    window_set(p, m.seq);
    offset_sample(p, now_mono, m.src_mono_ms);
    p->last_valid_mono = now_mono;
    p->last_key_id = m.key_id;
    p->accepted++;
    t->accepted++;
    *out = m;
    if (out_peer)
        *out_peer = p;
    return 0;

reject : {
    int i = nsrv_gossip_reason_index(rc);
    if (i < 0) {
        rc = NSRV_GOSSIP_EDECODE; /* never leak another code */
        i = nsrv_gossip_reason_index(rc);
    }
    t->rejected[i]++;
    if (p)
        p->rejected[i]++;
    return rc;
}
}

int nsrv_gossip_peer_check(nsrv_gossip_peers_t *peers, uint8_t my_id, const char *cluster,
                           const uint8_t *dgram, size_t len, const struct sockaddr *from,
                           uint64_t now_mono_ms, int64_t now_wall_ms, nsrv_gossip_msg_t *out_msg,
                           nsrv_arena_t *arena, nsrv_gossip_peer_t **out_peer) {
    return check(peers, my_id, cluster, dgram, len, from, now_mono_ms, now_wall_ms, out_msg, arena,
                 out_peer, false);
}

int nsrv_gossip_peer_check_pull(nsrv_gossip_peers_t *peers, uint8_t my_id, const char *cluster,
                                const uint8_t *req, size_t len, const struct sockaddr *from,
                                uint64_t now_mono_ms, int64_t now_wall_ms,
                                nsrv_gossip_msg_t *out_msg, nsrv_arena_t *arena,
                                nsrv_gossip_peer_t **out_peer) {
    return check(peers, my_id, cluster, req, len, from, now_mono_ms, now_wall_ms, out_msg, arena,
                 out_peer, true);
}

/* ---------------------------------------------------------------- status */

void nsrv_gossip_peer_info(const nsrv_gossip_peer_t *p, nsrv_gossip_peer_info_t *info) {
    memset(info, 0, sizeof *info);
    info->node_id = p->node_id;
    info->has_incarnation = p->has_inc;
    info->incarnation = p->inc;
    info->new_incarnation = p->new_inc;
    info->top_seq = p->top;
    info->last_valid_mono_ms = p->last_valid_mono;
    info->last_key_id = p->last_key_id;
    info->has_offset = p->has_off;
    info->offset_ms = p->off;
    info->has_anchor = p->has_inc && p->anc.set && p->anc.inc == p->inc;
    if (info->has_anchor) {
        info->anchor_offset_ms = p->anc.low;
        info->anchor_mono_ms = (uint64_t)p->anc.t;
    }
    info->host = p->host[0] ? p->host : NULL;
    info->has_addr = nsrv_gossip_peer_has_addr(p);
    info->resolve_error = p->resolve_err;
    info->resolve_error_name = p->resolve_err ? p->resolve_err_name : NULL;
    info->resolve_failures = p->resolve_failures;
    info->accepted = p->accepted;
    memcpy(info->rejected, p->rejected, sizeof info->rejected);
}

void nsrv_gossip_peers_totals(const nsrv_gossip_peers_t *t, uint64_t *accepted,
                              uint64_t rejected[NSRV_GOSSIP_NREASONS]) {
    if (accepted)
        *accepted = t->accepted;
    if (rejected)
        memcpy(rejected, t->rejected, sizeof t->rejected);
}
