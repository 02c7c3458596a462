/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters and the registration latency histogram of the simulator, and
 * their one-line JSON rendering for scripts (--json-stats, SIGUSR1, the
 * "stats" command). Pure code.
 */
#include <string.h>

#include "bsim_int.h"

/* Values below NSRV_BSIM_HIST_SUB have a bucket each. A value with its top
 * bit at position k >= SUB_BITS falls in row k - SUB_BITS + 1, whose 64
 * buckets are 2^(k - SUB_BITS) wide. */
static size_t bucket_of(uint64_t v) {
    if (v < NSRV_BSIM_HIST_SUB)
        return (size_t)v;
    unsigned k = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = k - NSRV_BSIM_HIST_SUB_BITS;
    return (size_t)(shift + 1) * NSRV_BSIM_HIST_SUB +
           (size_t)((v >> shift) & (NSRV_BSIM_HIST_SUB - 1));
}

/* The largest value that lands in bucket i. */
static uint64_t bucket_high(size_t i) {
    if (i < NSRV_BSIM_HIST_SUB)
        return i;
    unsigned shift = (unsigned)(i / NSRV_BSIM_HIST_SUB) - 1;
    uint64_t low = ((uint64_t)NSRV_BSIM_HIST_SUB + (i % NSRV_BSIM_HIST_SUB)) << shift;
    return low + ((1ull << shift) - 1);
}

void nsrv__bsim_hist_add(nsrv_bsim_hist_t *h, uint64_t v) {
    h->counts[bucket_of(v)]++;
    h->n++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

uint64_t nsrv__bsim_hist_percentile(const nsrv_bsim_hist_t *h, double p) {
    if (h->n == 0)
        return 0;
    if (p < 0)
        p = 0;
    if (p > 1)
        p = 1;
    /* Rank of the sample wanted, 1-based: ceil(p * n), at least 1. */
    double r = p * (double)h->n;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < NSRV_BSIM_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank)
            return NSRV_MIN(bucket_high(i), h->max);
    }
    return h->max;
}

static void put_u64(nsrv_buf_t *out, const char *key, uint64_t v) {
    nsrv_buf_printf(out, ",\"%s\":%llu", key, (unsigned long long)v);
}

void nsrv__bsim_stats_json(const nsrv_bsim_stats_t *s, const char *event, uint64_t elapsed_ms,
                           uint64_t n_brokers, uint64_t n_nodes, nsrv_buf_t *out) {
    const nsrv_bsim_hist_t *h = &s->reg_lat_us;
    nsrv_buf_printf(out, "{\"event\":\"%s\"", event);
    put_u64(out, "elapsed_ms", elapsed_ms);
    put_u64(out, "brokers", n_brokers);
    put_u64(out, "nodes", n_nodes);
    put_u64(out, "reg_sent", s->reg_sent);
    put_u64(out, "reg_ok", s->reg_ok);
    put_u64(out, "reg_failed", s->reg_err + s->reg_timeout + s->reg_lost);
    put_u64(out, "reg_err", s->reg_err);
    put_u64(out, "reg_timeout", s->reg_timeout);
    put_u64(out, "reg_lost", s->reg_lost);
    put_u64(out, "reg_skipped", s->reg_skipped);
    double rate = elapsed_ms ? (double)s->reg_ok * 1000.0 / (double)elapsed_ms : 0.0;
    nsrv_buf_printf(out, ",\"reg_ok_per_s\":%.1f", rate);
    put_u64(out, "lat_count", h->n);
    put_u64(out, "lat_mean_us", h->n ? h->sum / h->n : 0);
    put_u64(out, "lat_p50_us", nsrv__bsim_hist_percentile(h, 0.50));
    put_u64(out, "lat_p90_us", nsrv__bsim_hist_percentile(h, 0.90));
    put_u64(out, "lat_p99_us", nsrv__bsim_hist_percentile(h, 0.99));
    put_u64(out, "lat_max_us", h->max);
    put_u64(out, "hb_sent", s->hb_sent);
    put_u64(out, "unreg_sent", s->unreg_sent);
    put_u64(out, "unreg_ok", s->unreg_ok);
    put_u64(out, "unreg_failed", s->unreg_failed);
    put_u64(out, "connects", s->connects);
    put_u64(out, "connect_failed", s->connect_failed);
    put_u64(out, "disconnects", s->disconnects);
    put_u64(out, "rx_errors", s->rx_errors);
    put_u64(out, "rx_unmatched", s->rx_unmatched);
    put_u64(out, "bytes_sent", s->bytes_sent);
    put_u64(out, "first_round_total", s->first_total);
    put_u64(out, "first_round_done", s->first_done);
    put_u64(out, "first_round_ok", s->first_ok);
    if (s->first_total && s->first_done == s->first_total) {
        nsrv_buf_printf(out, ",\"first_round_ms\":%.3f", (double)s->first_round_us / 1000.0);
        double fr = s->first_round_us ? (double)s->first_ok * 1e6 / (double)s->first_round_us : 0.0;
        nsrv_buf_printf(out, ",\"first_round_ok_per_s\":%.1f", fr);
    } else {
        nsrv_buf_append_c(out, ",\"first_round_ms\":null");
    }
    nsrv_buf_append_ch(out, '}');
}
