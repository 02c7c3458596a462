/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Big frames off the event loop. Decoding a frame costs time in proportion to
 * its size (JSON header parse, escapes, UTF-8 checks, copies; for
 * REGISTER_BROKER the body's JSON parse or inflate): a 4 MiB KV value or a
 * 50,000-topic registration would hold the loop for milliseconds, and every
 * other connection's replies with it. A frame of at least bigFrameWorkerBytes
 * (64 KiB by default) is therefore decoded on libuv's thread pool, into an arena of its own; the
 * loop then only runs the decoded request.
 *
 * Order: while its job runs the connection is neither read nor processed
 * (nsrv__ce_blocked), so the request's reply goes out before those of the frames
 * behind it. Other connections are served meanwhile.
 *
 * Ownership: the connection's input buffer, which holds the whole frame, moves
 * to the job (no copy of the frame on the loop); the bytes behind the frame are
 * copied into a fresh buffer for the connection (conn_engine.c decides which frame
 * and prepares the buffer; this file runs the job).
 *
 * Close: the job is orphaned and frees itself when it completes. Shutdown: a
 * connection with a job is a request in flight (nsrv__conn_maybe_finish waits),
 * so it is answered before the connection closes.
 *
 * Priority: a worker thread runs at the lowest priority (nice 19, that thread only), so
 * where the worker and the loop share one core (a server pinned to one CPU, or a busy
 * machine) the loop still wins it at once when a request arrives: the decode then takes the
 * loop's idle time instead of delaying other connections' replies for a scheduler slice.
 *
 * The pool (UV_THREADPOOL_SIZE, 4 by default) is shared with the gossip resolver's
 * uv_getaddrinfo (src/gossip/io/resolve.c): a name lookup may wait behind big-frame jobs and run
 * at the lowered priority, which only delays a peer's address refresh.
 *
 * Thread safety: the worker touches only the job (frame, arena, result) and
 * limits copied on the loop; the decoders are pure (no static state, no
 * logging), and the allocator facade is plain malloc.
 */
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "nsrv/processor.h"
#include "server_int.h"

/* Arena chunks of a job. At the heap's mmap threshold (heap.c), so each chunk is mapped
 * and unmapped whole: a fleet re-registering 1.9 MB bodies every 30 s otherwise left its
 * decodes' chunks as free holes in the heap that every next decode touched again (about
 * 10 MB of a 57 MB process with 100 brokers x 10,000 topics). The mapping costs the worker
 * thread, never the loop. */
#define JOB_ARENA_CHUNK (256 * 1024)

typedef struct nsrv_offload_job {
    uv_work_t work;
    nsrv_conn_t *conn;    /* NULL once the connection closed */
    nsrv_buf_t frame_buf; /* the connection's former input buffer */
    size_t frame_off, frame_len;
    nsrv_prep_limits_t lim;
    nsrv_arena_t arena;
    int decode_rc;
    nsrv_cmd_t req;
    nsrv_proc_prep_t prep;
} nsrv_offload_job_t;

uint64_t nsrv__thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void nsrv__big_frame_cpu(nsrv_server_t *srv, uint64_t cpu_ns) {
    nsrv_hist_observe_us(&srv->big_frame_loop_cpu, cpu_ns / 1000u);
    if (cpu_ns > srv->big_frame_loop_cpu_max_ns)
        srv->big_frame_loop_cpu_max_ns = cpu_ns;
}

/* The job's big buffers: the frame and its decode's arena. */
static void job_free_buffers(nsrv_offload_job_t *j) {
    nsrv_arena_deinit(&j->arena);
    nsrv_buf_deinit(&j->frame_buf);
}

static void job_free(nsrv_offload_job_t *j) {
    nsrv_processor_prep_release(&j->prep);
    job_free_buffers(j);
    nsrv_free(j);
}

/* The worker half of job_free_later: the multi-megabyte frees (and their page unmapping). */
static void free_work_cb(uv_work_t *w) {
    job_free_buffers(w->data);
}

static void free_after_cb(uv_work_t *w, int status) {
    (void)status;
    nsrv_free(w->data);
}

/* job_free with the big buffers freed on a worker: giving a 4 MiB frame and its decode's arena
 * back to the system costs the loop a few hundred microseconds it owes no one. */
static void job_free_later(nsrv_server_t *srv, nsrv_offload_job_t *j) {
    nsrv_processor_prep_release(&j->prep);
    j->conn = NULL;
    if (uv_queue_work(&srv->loop, &j->work, free_work_cb, free_after_cb) != 0) {
        job_free_buffers(j);
        nsrv_free(j);
    }
}

/* Once per pool thread: only this thread's nice value changes (Linux: per thread). */
static void lower_this_thread_priority(void) {
    static _Thread_local bool lowered;
    if (lowered)
        return;
    lowered = true;
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}

/* Worker thread: everything here is pure work on the job. */
static void work_cb(uv_work_t *w) {
    nsrv_offload_job_t *j = w->data;
    lower_this_thread_priority();
    const uint8_t *frame = (const uint8_t *)j->frame_buf.data + j->frame_off;
    j->decode_rc = nsrv_cmd_decode(frame, j->frame_len, &j->arena, &j->req);
    if (j->decode_rc == 0)
        nsrv_processor_prepare(&j->lim, &j->req, &j->arena, &j->prep);
}

static void after_work_cb(uv_work_t *w, int status) {
    nsrv_offload_job_t *j = w->data;
    nsrv_conn_t *c = j->conn;
    if (!c) {
        job_free(j);
        return;
    }
    uint64_t cpu0 = nsrv__thread_cpu_ns();
    c->job = NULL;
    nsrv_server_t *srv = c->srv;
    if (status != 0 || j->decode_rc < 0) {
        int rc = status != 0 ? status : j->decode_rc;
        const char *why = status != 0 ? uv_strerror(status) : nsrv_strerror(rc);
        srv->conn_host.bad_frames_total++;
        nsrv_log_info("SERVER", "closing '%s': %s", c->peer, why);
        nsrv__conn_close(c, why);
        job_free(j);
        return;
    }
    nsrv_arena_reset(&srv->arena);
    nsrv__conn_run_request(c, &j->req, &j->prep);
    nsrv__conn_flush(c);
    job_free_later(srv, j);
    srv->trim_due = true; /* the decode's arena and the frame were big: see conn_hygiene.c */
    nsrv__big_frame_cpu(srv, nsrv__thread_cpu_ns() - cpu0);
    nsrv__conn_continue(c);
}

static nsrv_offload_job_t *job_new(nsrv_conn_t *c) {
    nsrv_offload_job_t *j = nsrv_calloc(1, sizeof *j);
    j->work.data = j;
    j->conn = c;
    nsrv_processor_prep_limits(c->srv->proc, &j->lim);
    nsrv_arena_init(&j->arena, JOB_ARENA_CHUNK);
    return j;
}

static void job_submit(nsrv_conn_t *c, nsrv_offload_job_t *j) {
    nsrv_server_t *srv = c->srv;
    c->job = j;
    srv->frames_offloaded_total++;
    int rc = uv_queue_work(&srv->loop, &j->work, work_cb, after_work_cb);
    if (rc != 0) {
        c->job = NULL;
        job_free(j);
        nsrv__conn_close(c, uv_strerror(rc));
    }
}

void nsrv__offload_start(nsrv_conn_t *c) {
    nsrv_offload_job_t *j = job_new(c);
    nsrv__ce_take_offload(&c->eng, &j->frame_buf, &j->frame_off, &j->frame_len);
    job_submit(c, j);
}

void nsrv__offload_orphan(nsrv_conn_t *c) {
    if (c->job) {
        c->job->conn = NULL;
        c->job = NULL;
    }
}
