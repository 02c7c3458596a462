/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /metrics in Prometheus text format (version 0.0.4): the server's counters,
 * per-request-code counts and latency histograms, table sizes, and the gossip
 * layer's families (appended by its hook). docs/design/observability.md lists them.
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/common.h"
#include "nsrv/kv.h"
#include "nsrv/mq_codes.h"
#include "nsrv/route.h"
#include "nsrv/writer.h"
#include "server_int.h"

/* A code and its name per metrics slot, in slot order; the last slot (OTHER) has code -1. */
typedef struct {
    int code;
    const char *name;
} slot_name_t;

#define X(code, name) {code, #name},
static const slot_name_t req_names[NSRV_MREQ_SLOTS] = {
#include "request_codes.def"
    {-1, "OTHER"},
};
static const slot_name_t resp_names[NSRV_MRESP_SLOTS] = {
#include "response_codes.def"
    {-1, "OTHER"},
};
#undef X

int nsrv__mreq_slot(int request_code) {
    switch (request_code) {
#define X(code, name)                                                                              \
    case code:                                                                                     \
        return NSRV_MREQ_##name;
#include "request_codes.def"
#undef X
    default:
        return NSRV_MREQ_OTHER;
    }
}

/* The response list is short (a handful of codes): a scan, ending at OTHER. */
static int mresp_slot(int response_code) {
    int r = 0;
    while (r < NSRV_MRESP_OTHER && resp_names[r].code != response_code)
        r++;
    return r;
}

void nsrv__metrics_request(nsrv_req_metrics_t *m, int slot) {
    m->requests[slot]++;
}

void nsrv__metrics_reply(nsrv_req_metrics_t *m, int slot, bool has_reply, int response_code,
                         uint64_t start_ns, uint64_t now_ns) {
    if (has_reply)
        m->responses[slot][mresp_slot(response_code)]++;
    nsrv_hist_observe_us(&m->latency[slot], now_ns > start_ns ? (now_ns - start_ns) / 1000 : 0);
}

typedef struct {
    const char *name, *type, *help;
    uint64_t value;
} scalar_t;

static void write_scalars(nsrv_buf_t *b, const scalar_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        nsrv_metric_family(b, s[i].name, s[i].type, s[i].help);
        nsrv_buf_printf(b, "%s %" PRIu64 "\n", s[i].name, s[i].value);
    }
}

#define G "gauge"
#define C "counter"

/* Names that existed before per-code metrics are kept: tests and dashboards use them. */
static void write_server_scalars(nsrv_server_t *srv, nsrv_buf_t *b) {
    nsrv_route_stats_t rs;
    nsrv_route_get_stats(srv->rt, &rs);
    nsrv_route_sizes_t sz;
    nsrv_route_sizes(srv->rt, &sz);
    size_t kv_ns = 0, kv_entries = nsrv_kv_entry_count(srv->kv, &kv_ns);
    const nsrv_req_metrics_t *m = &srv->reqm;
    const scalar_t s[] = {
        {"nsrvd_connections", G, "Open NameServer connections.", srv->n_conns},
        {"nsrvd_connections_accepted_total", C, "Connections accepted on the NameServer port.",
         m->conns_accepted},
        {"nsrvd_received_bytes_total", C, "Bytes read from NameServer connections.", m->bytes_in},
        {"nsrvd_sent_bytes_total", C, "Reply bytes sent to NameServer connections.", m->bytes_out},
        {"nsrvd_brokers", G, "Live broker addresses in the route table.",
         nsrv_route_broker_count(srv->rt)},
        {"nsrvd_broker_names", G, "Broker groups (brokerName) in the route table.",
         sz.broker_names},
        {"nsrvd_clusters", G, "Broker clusters in the route table.", sz.clusters},
        {"nsrvd_topics", G, "Topics in the route table.", sz.topics},
        {"nsrvd_kv_entries", G, "KV config keys holding a value, all namespaces.", kv_entries},
        {"nsrvd_kv_namespaces", G, "KV config namespaces.", kv_ns},
        {"nsrvd_requests_total", C, "Requests received, all codes.", srv->requests_total},
        {"nsrvd_route_fast_total", C,
         "Route queries answered by the fast path (nsrvd_requests_total counts them too).",
         srv->route_fast_total},
        {"nsrvd_bad_frames_total", C, "Connections closed on an undecodable frame.",
         srv->conn_host.bad_frames_total},
        {"nsrvd_route_cache_hits_total", C, "Topic routes answered from the cache.",
         rs.route_cache_hits},
        {"nsrvd_route_cache_builds_total", C, "Topic route bodies encoded into the cache.",
         rs.route_cache_builds},
        {"nsrvd_route_bodies", G,
         "Distinct cached route bodies (topics with equal routes share one).", sz.route_bodies},
        {"nsrvd_route_body_shares_total", C,
         "Route bodies built that another topic's cached buffer already held.",
         rs.route_body_shares},
        {"nsrvd_brokers_expired_total", C, "Live broker entries removed by expiry.",
         rs.brokers_expired},
        {"nsrvd_output_queued_bytes", G, "Reply bytes queued across all connections.",
         srv->out_queued_bytes},
        {"nsrvd_connections_refused_total", C,
         "Connections closed at once at the connection limit (nsrvd_connections_limit).",
         srv->conns_refused_total},
        {"nsrvd_connections_limit", G,
         "Open connections at most: maxConnections, or less if RLIMIT_NOFILE allows less.",
         nsrv__conn_limit(srv) == SIZE_MAX ? (uint64_t)INT64_MAX : nsrv__conn_limit(srv)},
        {"nsrvd_idle_sweep_visits_total", C,
         "Connections the once-a-second idle sweep examined: those not read for the idle time "
         "or with replies queued, not all.",
         srv->idle_sweep_visits_total},
        {"nsrvd_accept_failures_total", C,
         "Accepts that failed (EMFILE: descriptors used up outside the connection limit).",
         srv->accept_failed_total},
        {"nsrvd_connections_stalled_total", C,
         "Connections reset: no progress for serverChannelMaxIdleTimeSeconds.",
         srv->conns_stalled_total},
        {"nsrvd_output_limit_resets_total", C, "Connections reset past totalOutputLimitBytes.",
         srv->output_shed_total},
        {"nsrvd_input_buffered_bytes", G, "Partial-request bytes buffered across all connections.",
         srv->in_buffered_bytes},
        {"nsrvd_input_limit_resets_total", C, "Connections reset past totalInputLimitBytes.",
         srv->input_shed_total},
        {"nsrvd_status_timeouts_total", C, "Status connections closed by their time limits.",
         srv->status_timeouts_total},
        {"nsrvd_status_evicted_total", C, "Silent status connections evicted to make room.",
         srv->status_evicted_total},
        /* Durable writes (docs/design/persistence.md): requests per write shows the group commit.
         */
        {"nsrvd_durable_writes_total", C, "kvConfig.json and config store file writes.",
         srv->writer ? nsrv_writer_writes(srv->writer) : 0},
        {"nsrvd_durable_write_requests_total", C, "Changes carried by durable writes.",
         srv->writer ? nsrv_writer_requests(srv->writer) : 0},
        {"nsrvd_replies_pending", G, "Replies waiting for their write to reach the disk.",
         srv->conn_host.replies_pending},
        {"nsrvd_read_batch_yields_total", C, "Read batches cut at their time or count budget.",
         srv->conn_host.batch_yields_total},
        {"nsrvd_reads_held_total", C,
         "Reads of busy connections run after the quiet connections' requests (light first).",
         srv->conn_host.reads_held_total},
        {"nsrvd_frames_offloaded_total", C,
         "Frames of at least bigFrameWorkerBytes decoded on a worker thread.",
         srv->frames_offloaded_total},
    };
    write_scalars(b, s, sizeof s / sizeof s[0]);
    nsrv_metric_family(b, "nsrvd_uptime_seconds", G, "Seconds since this process started.");
    nsrv_buf_printf(b, "nsrvd_uptime_seconds %.3f\n",
                    (double)(nsrv_now_mono_ms() - srv->start_ms) / 1000.0);
    nsrv_metric_family(
        b, "nsrvd_big_frame_loop_cpu_seconds_max", G,
        "Most event-loop CPU time one big frame took (64 KiB or more, or a registration "
        "body of 4 KiB or more; its decode and run, or the run of one decoded on a worker): "
        "how long one big request held everyone else.");
    nsrv_buf_printf(b, "nsrvd_big_frame_loop_cpu_seconds_max %.6f\n",
                    (double)srv->big_frame_loop_cpu_max_ns / 1e9);
    nsrv_metric_family(
        b, "nsrvd_big_frame_loop_cpu_seconds", "histogram",
        "Event-loop CPU time of each big frame (as nsrvd_big_frame_loop_cpu_seconds_max).");
    nsrv_hist_write(b, "nsrvd_big_frame_loop_cpu_seconds", "", &srv->big_frame_loop_cpu);
    uint64_t wcpu_max = 0, wcpu = srv->writer ? nsrv_writer_cpu_ns(srv->writer, &wcpu_max) : 0;
    nsrv_metric_family(b, "nsrvd_durable_writer_cpu_seconds_total", C,
                       "Writer-thread CPU time of all durable writes (encode, write, fsync); "
                       "divided by nsrvd_durable_writes_total, what one group commit costs.");
    nsrv_buf_printf(b, "nsrvd_durable_writer_cpu_seconds_total %.6f\n", (double)wcpu / 1e9);
    nsrv_metric_family(b, "nsrvd_durable_writer_cpu_seconds_max", G,
                       "Most writer-thread CPU time one durable write took.");
    nsrv_buf_printf(b, "nsrvd_durable_writer_cpu_seconds_max %.6f\n", (double)wcpu_max / 1e9);
    nsrv_metric_family(b, "nsrvd_build_info", G, "The running version.");
    nsrv_buf_printf(b, "nsrvd_build_info{version=\"%s\"} 1\n", NSRV_VERSION);
}

static void write_requests(const nsrv_req_metrics_t *m, nsrv_buf_t *b) {
    nsrv_metric_family(b, "nsrvd_requests_by_code_total", C,
                       "Requests received, by request code (OTHER: codes nsrvd does not serve).");
    for (int i = 0; i < NSRV_MREQ_SLOTS; i++)
        nsrv_buf_printf(b, "nsrvd_requests_by_code_total{code=\"%d\",request=\"%s\"} %" PRIu64 "\n",
                        req_names[i].code, req_names[i].name, m->requests[i]);
    uint64_t by_resp[NSRV_MRESP_SLOTS] = {0};
    for (int i = 0; i < NSRV_MREQ_SLOTS; i++)
        for (int r = 0; r < NSRV_MRESP_SLOTS; r++)
            by_resp[r] += m->responses[i][r];
    nsrv_metric_family(b, "nsrvd_responses_total", C, "Replies sent, by response code.");
    for (int r = 0; r < NSRV_MRESP_SLOTS; r++)
        nsrv_buf_printf(b, "nsrvd_responses_total{code=\"%d\",response=\"%s\"} %" PRIu64 "\n",
                        resp_names[r].code, resp_names[r].name, by_resp[r]);
    nsrv_metric_family(b, "nsrvd_request_responses_total", C,
                       "Replies sent, by request and response code (pairs seen so far).");
    for (int i = 0; i < NSRV_MREQ_SLOTS; i++)
        for (int r = 0; r < NSRV_MRESP_SLOTS; r++)
            if (m->responses[i][r])
                nsrv_buf_printf(b,
                                "nsrvd_request_responses_total{request=\"%s\",response=\"%s\"} "
                                "%" PRIu64 "\n",
                                req_names[i].name, resp_names[r].name, m->responses[i][r]);
    nsrv_metric_family(
        b, "nsrvd_request_duration_seconds", "histogram",
        "Time from the start of a request's turn (decoding included) to its reply being queued "
        "(KV and config writes: "
        "on disk), by request code (codes seen so far).");
    for (int i = 0; i < NSRV_MREQ_SLOTS; i++) {
        if (!m->latency[i].count)
            continue;
        char labels[80];
        snprintf(labels, sizeof labels, "request=\"%s\"", req_names[i].name);
        nsrv_hist_write(b, "nsrvd_request_duration_seconds", labels, &m->latency[i]);
    }
}

void nsrv__metrics_write(nsrv_server_t *srv, nsrv_buf_t *b) {
    write_server_scalars(srv, b);
    write_requests(&srv->reqm, b);
    nsrv__tls_metrics(srv, b);
    if (srv->gossip_metrics)
        srv->gossip_metrics(srv->gossip_status_ud, b);
}
