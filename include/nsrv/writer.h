/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The durable writer: crash-safe file rewrites (src/base/fileio.c) done on a
 * thread of their own, so a slow disk never holds up the event loop, with
 * group commit: every change requested while a file's previous write is on
 * its way is folded into that file's next write.
 *
 * The loop thread keeps the data (the KV table, the config) and owns it; when
 * a write starts, the file's snapshot function takes a private copy (cheap:
 * plain memory copies), which the writer thread encodes and writes. Each
 * request's callback runs on the loop thread once a write that includes it is
 * on disk (rc 0) or has failed (-errno): a caller answers its client from
 * there, never before the data is durable.
 *
 * Order: writes of one file happen one at a time, in request order; callbacks
 * of one write run in request order; a later write of a file completes after
 * an earlier one. Files share the one thread.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nsrv/buf.h"
#include "nsrv/rope.h"

typedef struct nsrv_writer nsrv_writer_t;
typedef struct nsrv_wfile nsrv_wfile_t;

/* A private copy of a file's content, taken on the loop thread. */
typedef struct {
    void *data;
    /* Appends the file's bytes to out: small text to out->own, big blocks of data by
     * reference (nsrv_rope_ref), written with writev, not copied. Writer thread. */
    void (*encode)(void *data, nsrv_rope_t *out);
    /* Ends the writer's use of data: frees it, or leaves it to an owner that frees it once
     * the write settled. Runs on the writer thread (or the loop thread at destroy). */
    void (*release)(void *data);
} nsrv_wsnap_t;

/* Takes a snapshot of the current content. Loop thread. */
typedef nsrv_wsnap_t (*nsrv_wsnap_fn_t)(void *ud);

/* The outcome of a requested write: 0 once durable, or -errno. Loop thread. */
typedef void (*nsrv_wdone_fn_t)(void *ud, int rc);

/* Starts the writer thread. Callbacks run on loop. Never NULL (aborts on failure). */
nsrv_writer_t *nsrv_writer_create(uv_loop_t *loop);

/*
 * Adds a file written at path (copied) with a ".bak" of its previous content
 * when keep_bak; snap takes its content. Loop thread, before any request.
 */
nsrv_wfile_t *nsrv_writer_add_file(nsrv_writer_t *w, const char *path, bool keep_bak,
                                   nsrv_wsnap_fn_t snap, void *snap_ud);

/*
 * The outcome of each of f's writes, on the loop thread before its requests' callbacks:
 * settle(ud, 0) when the snapshot taken for it is on disk, settle(ud, -errno) when it
 * failed. After a failure the owner puts its content back to what the file holds, so the
 * requests made since that snapshot (not yet in a write) built on content that is gone:
 * they fail with the same error, before any later request is written.
 */
typedef void (*nsrv_wsettle_fn_t)(void *ud, int rc);
void nsrv_writer_on_settle(nsrv_wfile_t *f, nsrv_wsettle_fn_t settle, void *ud);

/*
 * Asks for f's current content to be made durable. done (may be NULL) runs
 * later, never from inside this call. The snapshot is taken at the start of
 * the next loop turn, or when f's write in progress ends, so a burst of
 * requests shares one write.
 */
void nsrv_writer_request(nsrv_wfile_t *f, nsrv_wdone_fn_t done, void *done_ud);

/* True when no write is queued, running, or waiting to report. */
bool nsrv_writer_idle(const nsrv_writer_t *w);

/* Runs the loop until nsrv_writer_idle: for shutdown, after the last connection closed. */
void nsrv_writer_drain(nsrv_writer_t *w);

/* Counters for the status page: writes done (failed ones too), and the requests they carried
 * (a request failed with an earlier write it was not in is in neither). */
uint64_t nsrv_writer_writes(const nsrv_writer_t *w);
uint64_t nsrv_writer_requests(const nsrv_writer_t *w);
/* The writer thread's CPU time over all writes done (encoding, write, fsync: what a commit
 * costs the machine's cores), and in *max_ns (if not NULL) the most one write took. */
uint64_t nsrv_writer_cpu_ns(const nsrv_writer_t *w, uint64_t *max_ns);

/*
 * Stops the thread (after the write in progress, if any) and closes the
 * loop handles; pending callbacks are dropped, so drain first. The memory
 * is freed by the handles' close callbacks: run the loop once more after.
 * Accepts NULL and *w == NULL; sets *w to NULL.
 */
void nsrv_writer_destroy(nsrv_writer_t **w);
