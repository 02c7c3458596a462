/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the broker simulator: the runtime state shared by the event
 * loop code. One process, one libuv loop thread; every broker member has its
 * own TCP connection ("link") to every nameserver, because a nameserver
 * unregisters the broker whose registering connection closes (proto/route.md §7).
 *
 *   group  = one brokerName: topic table, DataVersion, encoded body;
 *   broker = one member of a group (brokerId 0 master, 1..K slaves);
 *   link   = one broker's connection to one nameserver (node).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/remoting.h"
#include "bsim_int.h"

/* Outstanding requests per link. A broker waits for each registration round
 * to finish (proto/peers.md §1.2), so more than a few in flight means the server is
 * not keeping up; further registrations are then skipped and counted. */
#define NSRV_BSIM_PENDING_MAX 8
/* UNREGISTER_BROKER timeout of a broker at shutdown (proto/peers.md §1.5). */
#define NSRV_BSIM_UNREG_TIMEOUT_MS 3000
/* Stop writing to a link whose unsent bytes exceed this. */
#define NSRV_BSIM_WRITE_QUEUE_MAX (8u * 1024 * 1024)
#define NSRV_BSIM_BACKOFF_MIN_MS 100

typedef struct nsrv_bsim nsrv_bsim_t;
typedef struct nsrv_bsim_group nsrv_bsim_group_t;
typedef struct nsrv_bsim_broker nsrv_bsim_broker_t;
typedef struct nsrv_bsim_link nsrv_bsim_link_t;
typedef struct nsrv_bsim_batch nsrv_bsim_batch_t;

typedef enum {
    NSRV_BSIM_LINK_IDLE,       /* no socket */
    NSRV_BSIM_LINK_CONNECTING, /* uv_tcp_connect in flight */
    NSRV_BSIM_LINK_UP,
    NSRV_BSIM_LINK_CLOSING, /* uv_close in flight */
} nsrv_bsim_link_state_t;

typedef enum {
    NSRV_BSIM_BROKER_ACTIVE,
    NSRV_BSIM_BROKER_FROZEN,   /* sends nothing, keeps its connections */
    NSRV_BSIM_BROKER_STOPPING, /* unregistering; closes when answered */
    NSRV_BSIM_BROKER_STOPPED,
    NSRV_BSIM_BROKER_DEAD,
} nsrv_bsim_broker_state_t;

typedef struct {
    int32_t opaque;
    int32_t code;
    uint64_t sent_ns;
    uint64_t deadline_ns;
} nsrv_bsim_pending_t;

struct nsrv_bsim_link {
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    uv_timer_t retry_timer;
    nsrv_bsim_broker_t *broker;
    uint32_t node;
    nsrv_bsim_link_state_t state;
    bool cut;        /* "cut": send nothing to this node, keep the connection */
    bool cut_closed; /* "cut-close": no connection to this node */
    bool retry_armed;
    bool first_done; /* the first registration's outcome is counted */
    uint64_t backoff_ms;
    nsrv_bsim_rx_t rx;
    nsrv_bsim_pending_t pending[NSRV_BSIM_PENDING_MAX];
    size_t n_pending;
};

struct nsrv_bsim_broker {
    nsrv_bsim_t *sim;
    nsrv_bsim_group_t *group;
    uint32_t id;
    char id_text[12]; /* id in decimal, as the request headers carry it */
    char addr[64];
    char ha_addr[64];
    nsrv_bsim_broker_state_t state;
    uv_timer_t reg_timer;
    uv_timer_t hb_timer;
    nsrv_bsim_link_t *links;  /* one per node */
    uint32_t unreg_waiting;   /* UNREGISTER_BROKER answers still awaited */
    nsrv_bsim_batch_t *batch; /* the "stop" this broker is part of */
};

struct nsrv_bsim_group {
    char name[NSRV_BSIM_NAME_MAX];
    uint32_t index;
    nsrv_bsim_topics_t topics;
    nsrv_data_version_t dv;
    nsrv_buf_t body;
    char body_crc[16]; /* bodyCrc32 ext value */
    nsrv_bsim_broker_t *members;
    uint32_t n_members;
};

/* A command acknowledged only when every broker it touched is done
 * ("stop", and the unregistering exit). */
struct nsrv_bsim_batch {
    char ack[200];
    uint32_t remaining;
    bool then_exit;
};

struct nsrv_bsim {
    uv_loop_t loop;
    nsrv_bsim_opts_t opts;
    struct sockaddr_in node_addr[NSRV_BSIM_MAX_NODES];
    nsrv_bsim_group_t *groups;
    uint32_t n_groups;
    uint64_t n_members;
    nsrv_bsim_stats_t stats;
    uint64_t start_ns;
    int32_t next_opaque;
    bool exiting;
    bool finished; /* final stats printed, handles closing */
    bool first_reported;
    nsrv_arena_t arena;   /* per-response decode scratch */
    char read_buf[65536]; /* libuv reads land here; see nsrv_bsim_rx_t */
    uv_timer_t sweep_timer;
    uv_timer_t duration_timer;
    uv_timer_t exit_timer;
    uv_signal_t sig_int, sig_term, sig_usr1;
    uv_pipe_t in_pipe;
    uv_tty_t in_tty;
    uv_stream_t *in; /* NULL when stdin is not a pipe or a tty */
    char line[4096];
    size_t line_len;
    bool line_overflow;
};

/* ---- bsim_net.c: links --------------------------------------------------- */

void nsrv__bsim_link_init(nsrv_bsim_t *sim, nsrv_bsim_link_t *l, nsrv_bsim_broker_t *b,
                          uint32_t node);
/* Opens the connection if the link is idle and allowed to connect; the
 * broker registers as soon as it is up. */
void nsrv__bsim_link_connect(nsrv_bsim_link_t *l);
/* Closes the socket (if any); pending requests fail. A link whose broker is
 * still active and not cut reconnects after a backoff. */
void nsrv__bsim_link_close(nsrv_bsim_link_t *l, const char *why);
/* Whether a request may be written now (up, not cut, not back-pressured). */
bool nsrv__bsim_link_writable(const nsrv_bsim_link_t *l);
void nsrv__bsim_link_send_register(nsrv_bsim_link_t *l);
void nsrv__bsim_link_send_heartbeat(nsrv_bsim_link_t *l);
/* @return 0 if sent (an answer or a timeout will follow), else negative. */
int nsrv__bsim_link_send_unregister(nsrv_bsim_link_t *l);
/* Fails requests past their deadline. */
void nsrv__bsim_link_sweep(nsrv_bsim_link_t *l, uint64_t now_ns);
/* Called when the first registration of a link has an outcome. */
void nsrv__bsim_link_first_done(nsrv_bsim_link_t *l, bool ok);

/* ---- brokersim.c: broker-level reactions the links report ---------------- */

/* One awaited UNREGISTER_BROKER of a stopping broker has an outcome. */
void nsrv__bsim_broker_unreg_done(nsrv_bsim_broker_t *b);
/* Whether the broker wants connections (active or frozen, not exiting). */
bool nsrv__bsim_broker_wants_links(const nsrv_bsim_broker_t *b);
uint64_t nsrv__bsim_elapsed_ms(const nsrv_bsim_t *sim);
/* Writes one line to stdout and flushes it. */
void nsrv__bsim_print_line(const char *line);
