/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-bucket histograms in Prometheus text format (include/nsrv/histogram.h). */
#include "nsrv/histogram.h"

#include <inttypes.h>

static const uint64_t bounds_us[NSRV_HIST_BUCKETS] = {NSRV_HIST_BOUNDS_US};

void nsrv_hist_observe_us(nsrv_hist_t *h, uint64_t us) {
    int i = 0;
    while (i < NSRV_HIST_BUCKETS && us > bounds_us[i])
        i++;
    h->in_bucket[i]++;
    h->count++;
    h->sum_us += us;
}

void nsrv_hist_write(nsrv_buf_t *out, const char *name, const char *labels, const nsrv_hist_t *h) {
    const char *sep = labels[0] ? "," : "";
    uint64_t cum = 0;
    for (int i = 0; i <= NSRV_HIST_BUCKETS; i++) {
        cum += h->in_bucket[i];
        if (i < NSRV_HIST_BUCKETS)
            nsrv_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
                            (double)bounds_us[i] / 1e6, cum);
        else
            nsrv_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep,
                            cum);
    }
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    nsrv_buf_printf(out, "%s_sum%s%s%s %.6f\n%s_count%s%s%s %" PRIu64 "\n", name, open, labels,
                    close, (double)h->sum_us / 1e6, name, open, labels, close, h->count);
}

void nsrv_metric_family(nsrv_buf_t *out, const char *name, const char *type, const char *help) {
    nsrv_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void nsrv_metric_u64(nsrv_buf_t *out, const char *name, const char *type, const char *help,
                     uint64_t value) {
    nsrv_metric_family(out, name, type, help);
    nsrv_buf_printf(out, "%s %" PRIu64 "\n", name, value);
}
