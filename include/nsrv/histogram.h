/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fixed-bucket latency histogram for /metrics (Prometheus histogram type),
 * and the family header every /metrics writer shares.
 * Observing is a few compares and two adds on a caller-owned struct: no
 * allocation, cheap enough for every request on the loop thread. Buckets are
 * the same for every histogram, so dashboards can sum across them.
 */
#pragma once

#include <stdint.h>

#include "nsrv/buf.h"

/* Upper bounds in microseconds: 100 us .. 60 s, then +Inf (NSRV_HIST_BUCKETS). */
#define NSRV_HIST_BOUNDS_US                                                                        \
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,         \
        2500000, 5000000, 10000000, 30000000, 60000000
#define NSRV_HIST_BUCKETS 18

typedef struct {
    uint64_t count;
    uint64_t sum_us;
    uint64_t in_bucket[NSRV_HIST_BUCKETS + 1]; /* not cumulative; the last is +Inf */
} nsrv_hist_t;

void nsrv_hist_observe_us(nsrv_hist_t *h, uint64_t us);

/* Appends a metric family's "# HELP" and "# TYPE" lines (promtool wants both). */
void nsrv_metric_family(nsrv_buf_t *out, const char *name, const char *type, const char *help);
/* A family of one unlabelled sample: its header lines and "NAME value". */
void nsrv_metric_u64(nsrv_buf_t *out, const char *name, const char *type, const char *help,
                     uint64_t value);

/*
 * Appends NAME_bucket{LABELS,le="..."} (cumulative), NAME_sum (seconds) and
 * NAME_count. labels is "" or `key="value",...` without braces, already
 * escaped. The caller writes the family's # TYPE line once.
 */
void nsrv_hist_write(nsrv_buf_t *out, const char *name, const char *labels, const nsrv_hist_t *h);
