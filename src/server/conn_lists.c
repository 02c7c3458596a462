/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What keeps the work of a timer tick proportional to the connections that need it,
 * not to all connections: a node holding 100,000 mostly idle clients must not walk them
 * all every second (each visit a cache miss: milliseconds in which no request is read).
 *
 *  - By last read, oldest first: a read moves a connection to the end, so the idle
 *    sweep visits only the head, those not read for the idle time (the only ones that
 *    can be idle: a read makes a connection active), and stops at the first other.
 *  - With replies queued in the socket: their drain is progress the sweep must see each
 *    tick (a slow reader that drains is active, one that stopped is not); they leave the
 *    list at a sweep that finds nothing queued.
 *  - With a yielded batch: the resume visits only them.
 * Loop thread only.
 */
#include "server_int.h"

void nsrv__conn_lists_add(nsrv_conn_t *c, uint64_t now_ms) {
    nsrv_server_t *srv = c->srv;
    c->heard_ms = now_ms;
    NSRV_QUEUE_APPEND(srv->heard_head, srv->heard_tail, c, heard_prev, heard_next);
}

static void heard_unlink(nsrv_conn_t *c) {
    nsrv_server_t *srv = c->srv;
    NSRV_QUEUE_UNLINK(srv->heard_head, srv->heard_tail, c, heard_prev, heard_next);
}

void nsrv__conn_heard(nsrv_conn_t *c, uint64_t now_ms) {
    if (c->srv->heard_tail != c) {
        heard_unlink(c);
        nsrv__conn_lists_add(c, now_ms);
    }
    c->heard_ms = now_ms;
}

void nsrv__conn_out_list(nsrv_conn_t *c) {
    if (!c->out_listed) {
        NSRV_DLIST_PUSH(c->srv->out_list, c, out_prev, out_next);
        c->out_listed = true;
    }
}

void nsrv__conn_out_unlist(nsrv_conn_t *c) {
    if (c->out_listed) {
        NSRV_DLIST_UNLINK(c->srv->out_list, c, out_prev, out_next);
        c->out_listed = false;
    }
}

void nsrv__conn_yield_list(nsrv_conn_t *c) {
    if (!c->yield_listed) {
        NSRV_DLIST_PUSH(c->srv->yield_list, c, yield_prev, yield_next);
        c->yield_listed = true;
    }
}

void nsrv__conn_lists_remove(nsrv_conn_t *c) {
    heard_unlink(c);
    nsrv__conn_out_unlist(c);
    nsrv__conn_held_unlist(c);
    if (c->yield_listed) {
        NSRV_DLIST_UNLINK(c->srv->yield_list, c, yield_prev, yield_next);
        c->yield_listed = false;
    }
}
