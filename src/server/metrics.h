/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the server module: per-request-code counters and latency
 * histograms, and the /metrics page (metrics.c). Recording a request is a
 * table lookup and a few adds on fixed arrays: no allocation on the request path.
 */
#pragma once

#include <stdint.h>

#include "nsrv/buf.h"
#include "nsrv/histogram.h"

typedef struct nsrv_server nsrv_server_t;

/* One slot per served request code (proto/request_codes.def), plus "other". */
enum {
#define X(code, name) NSRV_MREQ_##name,
#include "request_codes.def"
#undef X
    NSRV_MREQ_OTHER,
    NSRV_MREQ_SLOTS
};
/* One slot per emitted response code (proto/response_codes.def), plus "other". */
enum {
#define X(code, name) NSRV_MRESP_##name,
#include "response_codes.def"
#undef X
    NSRV_MRESP_OTHER,
    NSRV_MRESP_SLOTS
};

typedef struct {
    uint64_t requests[NSRV_MREQ_SLOTS];
    uint64_t responses[NSRV_MREQ_SLOTS][NSRV_MRESP_SLOTS]; /* oneway requests have none */
    nsrv_hist_t latency[NSRV_MREQ_SLOTS];
    uint64_t bytes_in, bytes_out;
    uint64_t conns_accepted;
} nsrv_req_metrics_t;

/* The slot of a request code (NSRV_MREQ_OTHER for codes nsrvd does not serve). */
int nsrv__mreq_slot(int request_code);
/* Counts a request as it arrives. */
void nsrv__metrics_request(nsrv_req_metrics_t *m, int slot);
/* Counts its reply (response code) and the time since start_ns (nsrv_now_mono_ns) it took;
 * oneway requests call it with has_reply false. */
void nsrv__metrics_reply(nsrv_req_metrics_t *m, int slot, bool has_reply, int response_code,
                         uint64_t start_ns, uint64_t now_ns);
/* The whole /metrics page. */
void nsrv__metrics_write(nsrv_server_t *srv, nsrv_buf_t *out);
