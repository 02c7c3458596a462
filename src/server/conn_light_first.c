/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Light first: the order in which one loop turn serves its connections. A NameServer's
 * clients are mostly thousands of producers and consumers that each ask a few routes every
 * 30 s, beside a few connections that ask flat out (a proxy, a script, a benchmark). The
 * loop's poll hands over all ready connections at once; served in that order, a client's
 * one query waits behind every busy connection's batch of the same turn.
 *
 * So the engine holds what a busy connection reads (conn_engine.h, nsrv__ce_hold) and this
 * file runs the held connections in the check phase, after the poll phase has served the
 * quiet ones, oldest first and, while quiet connections are asking, a slice of loop time
 * at a time: with some still held, the next poll does not block, and what became ready
 * meanwhile (a client's query) goes ahead of the rest. Busy connections lose nothing but the order:
 * every turn runs at least one of them, and none waits behind a newer one. Loop thread only.
 */
#include "nsrv/common.h"
#include "server_int.h"

static void keep_polling_cb(uv_idle_t *h) {
    (void)h; /* active only so that the loop's poll does not block while input is held */
}

/* Also when a connection closes (nsrv__conn_lists_remove): the check must not run on an
 * empty list, and with nothing held the loop may block again. */
static void held_unlink(nsrv_server_t *srv, nsrv_conn_t *c) {
    NSRV_QUEUE_UNLINK(srv->held_head, srv->held_tail, c, held_prev, held_next);
    c->held_listed = false;
    if (!srv->held_head) {
        uv_check_stop(&srv->held_check);
        uv_idle_stop(&srv->keep_polling);
    }
}

static void run_held_cb(uv_check_t *h) {
    nsrv_server_t *srv = h->data;
    uint64_t start_ns = nsrv_now_mono_ns();
    uint64_t now_ns = start_ns;
    /* Slices only while quiet connections are asking: each slice costs a loop turn (a poll
     * system call and the timers): 25 µs slices always on took 7 % more CPU per request from
     * 16 connections asking flat out with nothing else around (docs/benchmarks.md). */
    uint64_t slice_ns = start_ns - srv->light_read_ns < NSRV_LIGHT_FIRST_RECENT_NS
                            ? NSRV_LIGHT_FIRST_SLICE_NS
                            : UINT64_MAX;
    /* One at least, then while the slice lasts. A connection closed meanwhile has left the
     * list (nsrv__conn_lists_remove); reads, and so new holds, come only in the poll phase. */
    for (bool first = true; srv->held_head && (first || now_ns - start_ns < slice_ns);
         first = false) {
        nsrv_conn_t *c = srv->held_head;
        held_unlink(srv, c);
        nsrv__conn_run_held(c, now_ns);
        now_ns = nsrv_now_mono_ns();
    }
    if (srv->held_head)
        uv_idle_start(&srv->keep_polling, keep_polling_cb);
}

void nsrv__light_first_init(nsrv_server_t *srv) {
    uv_check_init(&srv->loop, &srv->held_check);
    srv->held_check.data = srv;
    uv_idle_init(&srv->loop, &srv->keep_polling);
    srv->keep_polling.data = srv;
}

void nsrv__conn_held_list(nsrv_conn_t *c) {
    nsrv_server_t *srv = c->srv;
    if (c->held_listed)
        return;
    c->held_listed = true;
    NSRV_QUEUE_APPEND(srv->held_head, srv->held_tail, c, held_prev, held_next);
    uv_check_start(&srv->held_check, run_held_cb);
}

void nsrv__conn_held_unlist(nsrv_conn_t *c) {
    if (c->held_listed)
        held_unlink(c->srv, c);
}
