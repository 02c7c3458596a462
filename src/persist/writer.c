/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The durable writer (include/nsrv/writer.h): one thread that encodes and
 * writes snapshots, and the loop-side bookkeeping that folds a burst of
 * requests into one write per file (group commit).
 *
 * Threads: everything here runs on the loop thread except writer_main and
 * run_job. They share only the two job lists and the stop flag, under mu;
 * a job belongs to the writer thread from the moment it is queued until it
 * is on the done list, and its file's path and keep_bak never change.
 *
 * A done write's callbacks (the replies to its requests) run in slices of
 * REPORT_BUDGET per loop turn, so answering a big group commit never holds
 * the loop for long.
 */
#include "nsrv/writer.h"

#include <time.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/fileio.h"

typedef struct waiter {
    struct waiter *next;
    nsrv_wdone_fn_t done;
    void *ud;
    int rc; /* the outcome, once its write is done */
} waiter_t;

/*
 * Callbacks run per loop turn at most: a group commit of 1000 pipelined
 * writes answers 1000 requests, about 1 ms of reply encoding; in slices of
 * this many, route queries of other clients are answered between them.
 */
#define REPORT_BUDGET 128

/* A FIFO of waiters; callbacks run in request order. */
typedef struct {
    waiter_t *head;
    waiter_t **tail;
    size_t n;
} waiters_t;

struct nsrv_wfile {
    nsrv_wfile_t *next;
    nsrv_writer_t *w;
    char *path;
    bool keep_bak;
    nsrv_wsnap_fn_t snap;
    void *snap_ud;
    nsrv_wsettle_fn_t settle; /* may be NULL */
    void *settle_ud;
    waiters_t pending; /* requests not yet in a write */
    bool dirty;        /* pending is non-empty: a write must follow */
    bool busy;         /* a job of this file is queued, running or reporting */
};

typedef struct job {
    struct job *next;
    nsrv_wfile_t *f;
    nsrv_wsnap_t snap;
    waiters_t waiters;
    int rc;
    uint64_t cpu_ns; /* the writer thread's CPU time for this job: encode, write, fsync */
} job_t;

typedef struct {
    job_t *head;
    job_t **tail;
} jobs_t;

struct nsrv_writer {
    uv_loop_t *loop;
    uv_async_t async;      /* writer thread -> loop: jobs are done */
    uv_idle_t kick;        /* next loop turn: start writes of dirty files */
    uv_idle_t report_turn; /* next loop turn: more callbacks of done writes */
    waiters_t report;      /* done writes' requests, in order, callbacks not yet run */
    uv_thread_t thread;
    uv_mutex_t mu;
    uv_cond_t cv;
    jobs_t todo; /* under mu */
    jobs_t done; /* under mu */
    bool stop;   /* under mu */
    nsrv_wfile_t *files;
    size_t busy_files;
    uint64_t writes;
    uint64_t requests;
    uint64_t cpu_ns;     /* sum of the jobs' cpu_ns */
    uint64_t cpu_max_ns; /* the most one job took */
    int open_handles;
};

static void waiters_init(waiters_t *q) {
    q->head = NULL;
    q->tail = &q->head;
    q->n = 0;
}

static void jobs_init(jobs_t *q) {
    q->head = NULL;
    q->tail = &q->head;
}

static void jobs_push(jobs_t *q, job_t *j) {
    j->next = NULL;
    *q->tail = j;
    q->tail = &j->next;
}

static job_t *jobs_take_all(jobs_t *q) {
    job_t *all = q->head;
    jobs_init(q);
    return all;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void run_job(job_t *j) {
    uint64_t cpu0 = thread_cpu_ns();
    nsrv_rope_t text = NSRV_ROPE_INIT;
    j->snap.encode(j->snap.data, &text);
    size_t n = 0;
    struct iovec *iov = nsrv_rope_iov(&text, &n);
    j->rc = nsrv_file_write_atomic_iov(j->f->path, iov, n, j->f->keep_bak);
    nsrv_free(iov);
    nsrv_rope_deinit(&text);
    /* The rope referenced the snapshot's memory: release it only now. */
    j->snap.release(j->snap.data);
    j->snap.data = NULL;
    j->cpu_ns = thread_cpu_ns() - cpu0;
}

/* Waits for the next queued job; NULL once the writer stops (queued jobs are released by
 * destroy). */
static job_t *next_job(nsrv_writer_t *w) {
    uv_mutex_lock(&w->mu);
    while (!w->todo.head && !w->stop)
        uv_cond_wait(&w->cv, &w->mu);
    job_t *j = w->stop ? NULL : w->todo.head;
    if (j) {
        w->todo.head = j->next;
        if (!w->todo.head)
            w->todo.tail = &w->todo.head;
    }
    uv_mutex_unlock(&w->mu);
    return j;
}

static void writer_main(void *arg) {
    nsrv_writer_t *w = arg;
    job_t *j;
    while ((j = next_job(w)) != NULL) {
        run_job(j);
        uv_mutex_lock(&w->mu);
        jobs_push(&w->done, j);
        uv_mutex_unlock(&w->mu);
        uv_async_send(&w->async);
    }
}

/* Snapshots f now and hands the write, with every request so far, to the thread. */
static void start_job(nsrv_wfile_t *f) {
    nsrv_writer_t *w = f->w;
    job_t *j = nsrv_calloc(1, sizeof *j);
    j->f = f;
    j->snap = f->snap(f->snap_ud);
    j->waiters = f->pending;
    if (!j->waiters.head)
        j->waiters.tail = &j->waiters.head;
    waiters_init(&f->pending);
    f->dirty = false;
    f->busy = true;
    uv_mutex_lock(&w->mu);
    jobs_push(&w->todo, j);
    uv_cond_signal(&w->cv);
    uv_mutex_unlock(&w->mu);
    /* The loop stays alive while a write is out, and only then. */
    if (w->busy_files++ == 0)
        uv_ref((uv_handle_t *)&w->async);
}

static void kick_cb(uv_idle_t *h) {
    nsrv_writer_t *w = h->data;
    uv_idle_stop(h);
    for (nsrv_wfile_t *f = w->files; f; f = f->next) {
        if (f->dirty && !f->busy)
            start_job(f);
    }
}

/* Gives q's waiters the outcome rc and moves them behind those already waiting to report
 * (earlier writes' requests), so callbacks keep request order; q is left empty. */
static void settle_waiters(nsrv_writer_t *w, waiters_t *q, int rc) {
    if (!q->head)
        return;
    for (waiter_t *x = q->head; x; x = x->next)
        x->rc = rc;
    *w->report.tail = q->head;
    w->report.tail = q->tail;
    w->report.n += q->n;
    waiters_init(q);
}

static void finish_job(nsrv_writer_t *w, job_t *j) {
    nsrv_wfile_t *f = j->f;
    f->busy = false;
    if (--w->busy_files == 0)
        uv_unref((uv_handle_t *)&w->async);
    w->writes++;
    w->requests += j->waiters.n;
    w->cpu_ns += j->cpu_ns;
    if (j->cpu_ns > w->cpu_max_ns)
        w->cpu_max_ns = j->cpu_ns;
    settle_waiters(w, &j->waiters, j->rc);
    if (f->settle)
        f->settle(f->settle_ud, j->rc);
    if (j->rc < 0 && f->settle) {
        /* Built on the content the owner just rolled back: they fail with this write. Not
         * counted: no write carried them, and requests per write is the group commit. */
        settle_waiters(w, &f->pending, j->rc);
        f->dirty = false;
    }
    nsrv_free(j);
    /* What arrived during this write goes out now, as one write. */
    if (f->dirty && !f->busy)
        start_job(f);
}

static void report_turn_cb(uv_idle_t *h);

/* Runs up to REPORT_BUDGET callbacks; the rest in the next loop turns. */
static void report_some(nsrv_writer_t *w) {
    for (int k = 0; k < REPORT_BUDGET && w->report.head; k++) {
        waiter_t *x = w->report.head;
        w->report.head = x->next;
        if (!w->report.head)
            w->report.tail = &w->report.head;
        w->report.n--;
        if (x->done)
            x->done(x->ud, x->rc);
        nsrv_free(x);
    }
    if (w->report.head)
        uv_idle_start(&w->report_turn, report_turn_cb);
    else
        uv_idle_stop(&w->report_turn);
}

static void report_turn_cb(uv_idle_t *h) {
    report_some(h->data);
}

static void async_cb(uv_async_t *h) {
    nsrv_writer_t *w = h->data;
    uv_mutex_lock(&w->mu);
    job_t *all = jobs_take_all(&w->done);
    uv_mutex_unlock(&w->mu);
    for (job_t *j = all, *next; j; j = next) {
        next = j->next;
        finish_job(w, j);
    }
    report_some(w);
}

nsrv_writer_t *nsrv_writer_create(uv_loop_t *loop) {
    nsrv_writer_t *w = nsrv_calloc(1, sizeof *w);
    w->loop = loop;
    jobs_init(&w->todo);
    jobs_init(&w->done);
    NSRV_REQUIRE(uv_mutex_init(&w->mu) == 0);
    NSRV_REQUIRE(uv_cond_init(&w->cv) == 0);
    NSRV_REQUIRE(uv_async_init(loop, &w->async, async_cb) == 0);
    w->async.data = w;
    uv_unref((uv_handle_t *)&w->async);
    uv_idle_init(loop, &w->kick);
    w->kick.data = w;
    uv_idle_init(loop, &w->report_turn);
    w->report_turn.data = w;
    waiters_init(&w->report);
    w->open_handles = 3;
    NSRV_REQUIRE(uv_thread_create(&w->thread, writer_main, w) == 0);
    return w;
}

nsrv_wfile_t *nsrv_writer_add_file(nsrv_writer_t *w, const char *path, bool keep_bak,
                                   nsrv_wsnap_fn_t snap, void *snap_ud) {
    nsrv_wfile_t *f = nsrv_calloc(1, sizeof *f);
    f->w = w;
    f->path = nsrv_strdup(path);
    f->keep_bak = keep_bak;
    f->snap = snap;
    f->snap_ud = snap_ud;
    waiters_init(&f->pending);
    f->next = w->files;
    w->files = f;
    return f;
}

void nsrv_writer_on_settle(nsrv_wfile_t *f, nsrv_wsettle_fn_t settle, void *ud) {
    f->settle = settle;
    f->settle_ud = ud;
}

void nsrv_writer_request(nsrv_wfile_t *f, nsrv_wdone_fn_t done, void *done_ud) {
    waiter_t *x = nsrv_calloc(1, sizeof *x);
    x->done = done;
    x->ud = done_ud;
    *f->pending.tail = x;
    f->pending.tail = &x->next;
    f->pending.n++;
    f->dirty = true;
    if (!f->busy)
        uv_idle_start(&f->w->kick, kick_cb);
}

bool nsrv_writer_idle(const nsrv_writer_t *w) {
    if (w->report.head)
        return false;
    for (const nsrv_wfile_t *f = w->files; f; f = f->next) {
        if (f->dirty || f->busy)
            return false;
    }
    return true;
}

void nsrv_writer_drain(nsrv_writer_t *w) {
    while (!nsrv_writer_idle(w))
        uv_run(w->loop, UV_RUN_ONCE);
}

uint64_t nsrv_writer_writes(const nsrv_writer_t *w) {
    return w->writes;
}

uint64_t nsrv_writer_requests(const nsrv_writer_t *w) {
    return w->requests;
}

uint64_t nsrv_writer_cpu_ns(const nsrv_writer_t *w, uint64_t *max_ns) {
    if (max_ns)
        *max_ns = w->cpu_max_ns;
    return w->cpu_ns;
}

static void free_waiters(waiters_t *q) {
    for (waiter_t *x = q->head, *next; x; x = next) {
        next = x->next;
        nsrv_free(x);
    }
    waiters_init(q);
}

static void free_jobs(job_t *j) {
    for (job_t *next; j; j = next) {
        next = j->next;
        if (j->snap.data)
            j->snap.release(j->snap.data);
        free_waiters(&j->waiters);
        nsrv_free(j);
    }
}

static void handle_closed(uv_handle_t *h) {
    nsrv_writer_t *w = h->data;
    if (--w->open_handles == 0)
        nsrv_free(w);
}

void nsrv_writer_destroy(nsrv_writer_t **wp) {
    if (!wp || !*wp)
        return;
    nsrv_writer_t *w = *wp;
    *wp = NULL;
    uv_mutex_lock(&w->mu);
    w->stop = true;
    uv_cond_signal(&w->cv);
    uv_mutex_unlock(&w->mu);
    uv_thread_join(&w->thread);
    free_jobs(jobs_take_all(&w->todo));
    free_jobs(jobs_take_all(&w->done));
    free_waiters(&w->report);
    for (nsrv_wfile_t *f = w->files, *next; f; f = next) {
        next = f->next;
        free_waiters(&f->pending);
        nsrv_free(f->path);
        nsrv_free(f);
    }
    uv_mutex_destroy(&w->mu);
    uv_cond_destroy(&w->cv);
    uv_close((uv_handle_t *)&w->async, handle_closed);
    uv_close((uv_handle_t *)&w->kick, handle_closed);
    uv_close((uv_handle_t *)&w->report_turn, handle_closed);
}
