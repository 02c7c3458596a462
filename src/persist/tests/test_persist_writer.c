/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for src/persist/writer.c, the group-commit durable writer:
 * requests made during a write are coalesced into the next one, no callback
 * runs before its data is on disk, a failed write reports its error to every
 * request it carried, and callbacks and writes keep request order. The
 * writer thread is held inside a write with nsrv_file_crash_hook, which runs
 * between the temp file's fsync and the rename.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "nsrv/alloc.h"
#include "nsrv/fileio.h"
#include "nsrv/writer.h"
#include "testlib.h"

/* The data a test "persists": a version number, rendered as "v<version>". */
typedef struct {
    int version;
    int snapshots; /* snapshot calls */
} model_t;

typedef struct {
    nsrv_test_dir_t dir;
    char path[128];
    uv_loop_t loop;
    nsrv_writer_t *w;
    model_t model;
} fixture_t;

/* What the writer thread's hook does: block until released, or fail. */
static uv_sem_t hook_entered, hook_release;
static atomic_int hook_mode; /* 0 off, 1 block once, 2 fail with -EIO once, 3 both */

static int hook(const char *tmp) {
    (void)tmp;
    int mode = atomic_exchange(&hook_mode, 0);
    if (mode == 1 || mode == 3) {
        uv_sem_post(&hook_entered);
        uv_sem_wait(&hook_release);
    }
    return mode >= 2 ? -EIO : 0;
}

/* "v" from the rope's own text, the number by reference into the snapshot: the file is
 * the pieces in order, and the snapshot outlives the write. */
static void encode_text(void *data, nsrv_rope_t *out) {
    const char *text = data;
    nsrv_buf_append_ch(&out->own, text[0]);
    nsrv_rope_ref(out, text + 1, strlen(text + 1));
}

static nsrv_wsnap_t snap_model(void *ud) {
    model_t *m = ud;
    m->snapshots++;
    char *text = nsrv_malloc(32);
    snprintf(text, 32, "v%d", m->version);
    return (nsrv_wsnap_t){text, encode_text, nsrv_free};
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    if (nsrv_test_dir_make(&f->dir, "writer") != 0)
        return -1;
    snprintf(f->path, sizeof f->path, "%s/kv.json", f->dir.path);
    uv_loop_init(&f->loop);
    f->w = nsrv_writer_create(&f->loop);
    uv_sem_init(&hook_entered, 0);
    uv_sem_init(&hook_release, 0);
    atomic_store(&hook_mode, 0);
    nsrv_file_crash_hook = hook;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    nsrv_writer_drain(f->w);
    nsrv_writer_destroy(&f->w);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    nsrv_file_crash_hook = NULL;
    uv_sem_destroy(&hook_entered);
    uv_sem_destroy(&hook_release);
    nsrv_test_dir_remove(&f->dir);
    free(f);
    return 0;
}

/* One request's outcome, with what the file held when the callback ran. */
typedef struct {
    int order[64];
    int rc[64];
    char seen[64][16];
    int n;
    const char *path;
} log_t;

/* n requests are done, the last with rc, having seen the file hold seen. */
static void assert_last_done(const log_t *log, size_t n, int rc, const char *seen) {
    assert_int_equal(log->n, n);
    assert_int_equal(log->rc[n - 1], rc);
    assert_string_equal(log->seen[n - 1], seen);
}

typedef struct {
    log_t *log;
    int id;
} req_t;

static void on_done(void *ud, int rc) {
    req_t *r = ud;
    log_t *l = r->log;
    l->order[l->n] = r->id;
    l->rc[l->n] = rc;
    char *text = nsrv_test_read_file(l->path);
    snprintf(l->seen[l->n], sizeof l->seen[0], "%s", text ? text : "(none)");
    nsrv_free(text);
    l->n++;
}

/* Starts the first write and waits until the writer thread is inside it. */
/* The model's file, and n requests for it (ids 0..n-1) that record their outcome in log. */
static nsrv_wfile_t *model_file(fixture_t *f, log_t *log, req_t *reqs, int n) {
    *log = (log_t){.path = f->path};
    for (int i = 0; i < n; i++)
        reqs[i] = (req_t){log, i};
    return nsrv_writer_add_file(f->w, f->path, true, snap_model, &f->model);
}

static void start_blocked_write(fixture_t *f, nsrv_wfile_t *wf, req_t *r) {
    atomic_store(&hook_mode, 1);
    nsrv_writer_request(wf, on_done, r);
    uv_run(&f->loop, UV_RUN_NOWAIT); /* the next loop turn takes the snapshot */
    uv_sem_wait(&hook_entered);
}

static void test_burst_during_a_write_is_one_more_write(void **state) {
    fixture_t *f = *state;
    log_t log;
    req_t reqs[11];
    nsrv_wfile_t *wf = model_file(f, &log, reqs, 11);

    f->model.version = 1;
    start_blocked_write(f, wf, &reqs[0]);
    for (int i = 1; i < 11; i++) {
        f->model.version = 1 + i;
        nsrv_writer_request(wf, on_done, &reqs[i]);
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    /* Still one snapshot: the ten wait for the write in progress to end. */
    assert_int_equal(f->model.snapshots, 1);
    assert_int_equal(log.n, 0);
    uv_sem_post(&hook_release);
    nsrv_writer_drain(f->w);

    assert_int_equal(f->model.snapshots, 2);
    assert_int_equal(nsrv_writer_writes(f->w), 2);
    assert_int_equal(nsrv_writer_requests(f->w), 11);
    assert_int_equal(log.n, 11);
    for (int i = 0; i < 11; i++) {
        assert_int_equal(log.order[i], i);
        assert_int_equal(log.rc[i], 0);
    }
    assert_string_equal(log.seen[0], "v1");
    assert_string_equal(log.seen[10], "v11");
    char *text = nsrv_test_read_file(f->path);
    assert_string_equal(text, "v11");
    nsrv_free(text);
    /* .bak keeps the content before the last write, as Java does. */
    char bak[160];
    snprintf(bak, sizeof bak, "%s.bak", f->path);
    text = nsrv_test_read_file(bak);
    assert_string_equal(text, "v1");
    nsrv_free(text);
}

static void test_requests_in_one_loop_turn_share_a_write(void **state) {
    fixture_t *f = *state;
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, f->path, false, snap_model, &f->model);
    log_t log = {.path = f->path};
    req_t reqs[5];
    for (int i = 0; i < 5; i++) {
        reqs[i] = (req_t){&log, i};
        f->model.version = 10 + i;
        nsrv_writer_request(wf, on_done, &reqs[i]);
    }
    assert_int_equal(f->model.snapshots, 0); /* nothing is copied inside the request */
    nsrv_writer_drain(f->w);
    assert_int_equal(f->model.snapshots, 1);
    assert_int_equal(nsrv_writer_writes(f->w), 1);
    assert_int_equal(log.n, 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal(log.seen[i], "v14");
}

static void test_no_callback_before_the_data_is_on_disk(void **state) {
    fixture_t *f = *state;
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, f->path, true, snap_model, &f->model);
    log_t log = {.path = f->path};
    req_t r = {&log, 0};
    f->model.version = 7;
    start_blocked_write(f, wf, &r);
    /* The temp file is written and synced, the rename has not happened. */
    for (int i = 0; i < 20; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(1000);
    }
    assert_int_equal(log.n, 0);
    assert_null(nsrv_test_read_file(f->path));
    uv_sem_post(&hook_release);
    nsrv_writer_drain(f->w);
    assert_last_done(&log, 1, 0, "v7");
}

static void test_failure_reaches_every_request_of_the_write(void **state) {
    fixture_t *f = *state;
    log_t log;
    req_t reqs[4];
    nsrv_wfile_t *wf = model_file(f, &log, reqs, 4);
    atomic_store(&hook_mode, 2);
    f->model.version = 1;
    for (int i = 0; i < 3; i++)
        nsrv_writer_request(wf, on_done, &reqs[i]);
    nsrv_writer_drain(f->w);
    assert_int_equal(log.n, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(log.rc[i], -EIO);
    assert_null(nsrv_test_read_file(f->path));
    /* The next request writes again, and succeeds. */
    nsrv_writer_request(wf, on_done, &reqs[3]);
    nsrv_writer_drain(f->w);
    assert_last_done(&log, 4, 0, "v1");
}

/* settle: records each outcome; a failure puts the model back to what the file holds. */
typedef struct {
    model_t *model;
    int good_version; /* the version of the last good write */
    int inflight;     /* the version the write in flight holds */
    int rcs[8];
    int n;
} settle_log_t;

static nsrv_wsnap_t snap_tracked(void *ud) {
    settle_log_t *s = ud;
    s->inflight = s->model->version;
    return snap_model(s->model);
}

static void on_settle(void *ud, int rc) {
    settle_log_t *s = ud;
    s->rcs[s->n++] = rc;
    if (rc == 0)
        s->good_version = s->inflight;
    else
        s->model->version = s->good_version;
}

/* A failed write is settled before its callbacks; the requests made during it built on
 * content the owner undid, so they fail with it and are not written; later ones are. The
 * counters are the group commit: writes, and the requests each carried, so those failed
 * with a write they were not in count in neither. */
static void test_failure_settles_and_fails_requests_made_during_it(void **state) {
    fixture_t *f = *state;
    settle_log_t s = {.model = &f->model};
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, f->path, true, snap_tracked, &s);
    nsrv_writer_on_settle(wf, on_settle, &s);
    log_t log = {.path = f->path};
    req_t reqs[4];
    for (int i = 0; i < 4; i++)
        reqs[i] = (req_t){&log, i};
    f->model.version = 1;
    nsrv_writer_request(wf, on_done, &reqs[0]);
    nsrv_writer_drain(f->w);
    f->model.version = 2;
    atomic_store(&hook_mode, 3);
    nsrv_writer_request(wf, on_done, &reqs[1]);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    uv_sem_wait(&hook_entered);
    f->model.version = 3; /* made while version 2 is being written */
    nsrv_writer_request(wf, on_done, &reqs[2]);
    uv_sem_post(&hook_release);
    nsrv_writer_drain(f->w);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.rcs[0], 0);
    assert_int_equal(s.rcs[1], -EIO);
    assert_int_equal(f->model.version, 1);
    assert_int_equal(f->model.snapshots, 2); /* version 3 was never written */
    assert_int_equal(log.n, 3);
    assert_int_equal(log.rc[1], -EIO);
    assert_int_equal(log.rc[2], -EIO);
    assert_string_equal(log.seen[2], "v1");
    assert_int_equal(nsrv_writer_writes(f->w), 2);
    assert_int_equal(nsrv_writer_requests(f->w), 2);
    f->model.version = 5;
    nsrv_writer_request(wf, on_done, &reqs[3]);
    nsrv_writer_drain(f->w);
    assert_last_done(&log, 4, 0, "v5");
    assert_int_equal(nsrv_writer_writes(f->w), 3);
    assert_int_equal(nsrv_writer_requests(f->w), 3);
}

static void test_unwritable_path_reports_errno(void **state) {
    fixture_t *f = *state;
    char blocker[160], path[200];
    snprintf(blocker, sizeof blocker, "%s/plain", f->dir.path);
    snprintf(path, sizeof path, "%s/sub/kv.json", blocker);
    assert_int_equal(nsrv_file_write_atomic(blocker, "x", 1, false), 0);
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, path, true, snap_model, &f->model);
    log_t log = {.path = path};
    req_t r = {&log, 0};
    nsrv_writer_request(wf, on_done, &r);
    nsrv_writer_drain(f->w);
    assert_int_equal(log.n, 1);
    assert_int_equal(log.rc[0], -ENOTDIR);
}

/* Two files: each file's callbacks in request order; a file's writes never overlap. */
static void test_order_across_files_and_writes(void **state) {
    fixture_t *f = *state;
    char path2[160];
    snprintf(path2, sizeof path2, "%s/conf.properties", f->dir.path);
    model_t m2 = {.version = 100};
    nsrv_wfile_t *a = nsrv_writer_add_file(f->w, f->path, true, snap_model, &f->model);
    nsrv_wfile_t *b = nsrv_writer_add_file(f->w, path2, true, snap_model, &m2);
    log_t la = {.path = f->path}, lb = {.path = path2};
    req_t ra[30], rb[30];
    for (int i = 0; i < 30; i++) {
        ra[i] = (req_t){&la, i};
        rb[i] = (req_t){&lb, i};
        f->model.version = i;
        m2.version = 100 + i;
        nsrv_writer_request(a, on_done, &ra[i]);
        nsrv_writer_request(b, on_done, &rb[i]);
        if (i % 3 == 0)
            uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    nsrv_writer_drain(f->w);
    assert_int_equal(la.n, 30);
    assert_int_equal(lb.n, 30);
    int last_a = -1, last_b = -1;
    for (int i = 0; i < 30; i++) {
        assert_int_equal(la.order[i], i);
        assert_int_equal(lb.order[i], i);
        /* What a request sees on disk is at least as new as the request itself. */
        int va = atoi(la.seen[i] + 1), vb = atoi(lb.seen[i] + 1);
        assert_true(va >= i && va >= last_a);
        assert_true(vb >= 100 + i && vb >= last_b);
        last_a = va;
        last_b = vb;
    }
    assert_int_equal(last_a, 29);
    assert_int_equal(last_b, 129);
    assert_true(nsrv_writer_writes(f->w) < 60);
}

static void test_request_without_callback_is_still_written(void **state) {
    fixture_t *f = *state;
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, f->path, false, snap_model, &f->model);
    f->model.version = 3;
    nsrv_writer_request(wf, NULL, NULL);
    assert_false(nsrv_writer_idle(f->w));
    nsrv_writer_drain(f->w);
    assert_true(nsrv_writer_idle(f->w));
    char *text = nsrv_test_read_file(f->path);
    assert_string_equal(text, "v3");
    nsrv_free(text);
}

/* A loop with only an idle writer has nothing to wait for: uv_run returns. */
/* Counts loop turns (a prepare handle runs once per turn). */
static void count_turn(uv_prepare_t *h) {
    (*(int *)h->data)++;
}

typedef struct {
    int *turn;
    int *next_id; /* callbacks must come in request order */
    int id, seen_turn;
} sliced_t;

static void on_sliced(void *ud, int rc) {
    sliced_t *r = ud;
    assert_int_equal(rc, 0);
    assert_int_equal(*r->next_id, r->id);
    (*r->next_id)++;
    r->seen_turn = *r->turn;
}

/* One write carrying 1000 requests answers them in order, a bounded slice per loop turn,
 * so the loop serves others in between; the writer is not idle until the last one ran. */
static void test_a_big_commit_answers_in_slices(void **state) {
    fixture_t *f = *state;
    nsrv_wfile_t *wf = nsrv_writer_add_file(f->w, f->path, true, snap_model, &f->model);
    int turn = 0, next_id = 0;
    uv_prepare_t prep;
    uv_prepare_init(&f->loop, &prep);
    prep.data = &turn;
    uv_prepare_start(&prep, count_turn);
    uv_unref((uv_handle_t *)&prep);
    enum { N = 1000 };
    static sliced_t reqs[N];
    f->model.version = 7;
    for (int i = 0; i < N; i++) {
        reqs[i] = (sliced_t){&turn, &next_id, i, -1};
        nsrv_writer_request(wf, on_sliced, &reqs[i]);
    }
    nsrv_writer_drain(f->w);
    assert_true(nsrv_writer_idle(f->w));
    assert_int_equal(next_id, N);
    assert_int_equal(f->model.snapshots, 1);
    nsrv_test_assert_file(f->path, "v7");
    int turns = reqs[N - 1].seen_turn - reqs[0].seen_turn + 1;
    assert_true(turns >= 4);     /* not all in one turn */
    assert_true(turns <= N / 8); /* and not one per turn */
    uv_close((uv_handle_t *)&prep, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT); /* the close completes while prep is in scope */
}

static void test_idle_writer_keeps_no_loop_alive(void **state) {
    fixture_t *f = *state;
    nsrv_writer_add_file(f->w, f->path, false, snap_model, &f->model);
    assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
}

NSRV_TEST_MAIN(NULL, NULL, NSRV_FIXTURE_TEST(test_burst_during_a_write_is_one_more_write),
               NSRV_FIXTURE_TEST(test_a_big_commit_answers_in_slices),
               NSRV_FIXTURE_TEST(test_requests_in_one_loop_turn_share_a_write),
               NSRV_FIXTURE_TEST(test_no_callback_before_the_data_is_on_disk),
               NSRV_FIXTURE_TEST(test_failure_reaches_every_request_of_the_write),
               NSRV_FIXTURE_TEST(test_failure_settles_and_fails_requests_made_during_it),
               NSRV_FIXTURE_TEST(test_unwritable_path_reports_errno),
               NSRV_FIXTURE_TEST(test_order_across_files_and_writes),
               NSRV_FIXTURE_TEST(test_request_without_callback_is_still_written),
               NSRV_FIXTURE_TEST(test_idle_writer_keeps_no_loop_alive))
