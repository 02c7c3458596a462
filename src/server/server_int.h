/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the server module: server and connection state. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/tls_names.h"
#include "nsrv/processor.h"
#include "nsrv/remoting.h"
#include "nsrv/route.h"
#include "nsrv/uthash.h"
#include "conn_engine.h"
#include "out_batch.h"

#include "metrics.h"

struct nsrv_config;
/* kvConfigPath, configStorePath, the gossip state file. */
#define NSRV_DATA_LOCKS_MAX 3
typedef struct nsrv_kv nsrv_kv_t;
typedef struct nsrv_processor nsrv_processor_t;
typedef struct nsrv_server nsrv_server_t;
typedef struct nsrv_writer nsrv_writer_t;
typedef struct nsrv_wfile nsrv_wfile_t;
struct nsrv_conn;
struct nsrv_offload_job;
struct nsrv_tls_ctx;
struct nsrv_tls_session;

typedef struct nsrv_conn {
    uv_tcp_t tcp; /* first: handle <-> conn casts */
    nsrv_server_t *srv;
    uint64_t id;
    char peer[64];
    /* For the allow lists; valid if has_peer_addr. A TCP peer is IPv4 or IPv6, so not the
     * 128 bytes of a sockaddr_storage in every connection. */
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } peer_addr;
    bool has_peer_addr;
    nsrv_ce_t eng;     /* what the connection decides (conn_engine.h) */
    size_t in_counted; /* eng.in.cap as last added to srv->in_buffered_bytes */
    bool closing;
    bool saw_first_byte;
    bool deferred_close;
    /* A big frame decoded on a worker (conn_offload.c): the connection is neither read nor
     * processed until it has run, so replies keep their request order. */
    struct nsrv_offload_job *job;
    struct nsrv_conn *prev, *next; /* server's connection list */
    UT_hash_handle hh;             /* by id */
    /* The lists that keep the once-a-second idle sweep and the resume of yielded batches
     * from visiting every connection (conn_lists.c): by last read, oldest first; with
     * replies queued in the socket; with a yielded batch. */
    struct nsrv_conn *heard_prev, *heard_next;
    uint64_t heard_ms;
    struct nsrv_conn *out_prev, *out_next;
    struct nsrv_conn *yield_prev, *yield_next;
    bool out_listed, yield_listed;
    struct nsrv_conn *held_prev, *held_next; /* conn_light_first.c */
    bool held_listed;
} nsrv_conn_t;

struct nsrv_server {
    uv_loop_t loop;
    struct nsrv_config *cfg;
    nsrv_route_t *rt;
    nsrv_kv_t *kv;
    nsrv_processor_t *proc;
    struct nsrv_gossip *gossip; /* NULL unless gossipEnable */
    const char *config_file;
    uv_tcp_t listener;
    uv_timer_t scan_timer;
    uv_timer_t idle_timer;
    uv_timer_t deadline_timer;
    uv_timer_t idle_grace_timer; /* shutdown: when connections with no request since are closed */
    uv_timer_t ready_timer;      /* until the readiness rule holds: then READY=1 */
    uv_idle_t deferred;
    uv_idle_t resume;                     /* continues connections that yielded their batch */
    uv_check_t held_check;                /* runs busy connections' held input (light first) */
    uv_idle_t keep_polling;               /* the poll must not block while input is held */
    nsrv_conn_t *held_head, *held_tail;   /* conn_light_first.c, oldest first */
    uint64_t light_read_ns;               /* the last read run at once (not held) */
    nsrv_conn_t *heard_head, *heard_tail; /* conn_lists.c */
    nsrv_conn_t *out_list, *yield_list;
    /* Durable writes off the loop (durable.c). */
    nsrv_writer_t *writer;
    nsrv_wfile_t *kv_wfile;     /* NULL: no kvConfigPath */
    nsrv_wfile_t *config_wfile; /* NULL: no configStorePath */
    /* Content of each file's last good write and of its write in flight (durable.c). */
    nsrv_kv_t *kv_good, *kv_inflight;
    struct nsrv_config *cfg_good, *cfg_inflight;
    /* Connections' limits, hooks and counters (conn_engine.h: replies pending, batch
     * yields, bad frames). */
    nsrv_ce_host_t conn_host;
    uint64_t frames_offloaded_total;    /* big frames decoded on a worker (conn_offload.c) */
    uint64_t big_frame_loop_cpu_max_ns; /* most loop-thread CPU time one big frame took */
    nsrv_hist_t big_frame_loop_cpu;     /* all of them */
    uv_signal_t sig_term, sig_int, sig_hup;
    nsrv_conn_t *conns; /* list head */
    nsrv_conn_t *conn_by_id;
    size_t n_conns;
    uint64_t next_conn_id;
    bool shutting_down;
    bool listener_open;
    int signals_seen;
    uint64_t start_ms;
    int bound_port;
    /* Descriptors holding the data files' locks for the process's life (data_locks.c). */
    int data_lock_fds[NSRV_DATA_LOCKS_MAX];
    size_t n_data_locks;
    uint64_t requests_total;
    uint64_t route_fast_total; /* of those, route queries the fast path answered */
    nsrv_req_metrics_t reqm;   /* per request code, latency, bytes (metrics.c) */
    /* Connection hygiene (conn_hygiene.c). */
    size_t out_queued_bytes;          /* reply bytes queued across all open connections */
    size_t in_buffered_bytes;         /* partial-request buffer bytes across all open connections */
    uint64_t conns_refused_total;     /* accepted and closed at the connection limit */
    uint64_t fd_limit;                /* RLIMIT_NOFILE after start-up's raise; 0: unlimited */
    size_t fd_conn_cap;               /* connections the descriptors allow (conn_limit.c) */
    uint64_t accept_failed_total;     /* accepts that failed (EMFILE, ENFILE, ENOMEM, ...) */
    uint64_t idle_sweep_visits_total; /* connections the idle sweep examined */
    uint64_t accept_failed_logged_ms, accept_failed_since_log;
    uint64_t conns_stalled_total; /* closed: queued replies not drained for the idle time */
    uint64_t output_shed_total;   /* closed: held the most output past totalOutputLimitBytes */
    uint64_t input_shed_total;    /* closed: held the most input past totalInputLimitBytes */
    uint64_t refused_logged_ms, shed_logged_ms; /* rate limit of the log lines */
    uint64_t refused_since_log, shed_since_log;
    uint64_t in_shed_logged_ms, in_shed_since_log;
    bool trim_due; /* big buffers were freed (stuck connections, big frames): give pages back */
    /* Status endpoint (status.c). */
    uv_tcp_t status_listener;
    bool status_open;
    size_t status_conns;
    struct status_conn *status_list; /* oldest first */
    uv_timer_t status_timer;
    uint64_t status_timeouts_total, status_evicted_total;
    /* Address service (nsaddr.c). */
    char nsaddr_self[128];                /* NSRV_NSADDR_MAX */
    char nsaddr_subgroup[64];             /* /rocketmq/<this> */
    int nsaddr_self_id;                   /* gossipNodeId, 0 without gossip */
    struct nsrv_nsaddr_map *nsaddr_peers; /* advertised addresses by node id */
    /* Optional hooks filled by the gossip layer for status output. */
    void (*gossip_status)(void *ud, nsrv_buf_t *out);   /* appends a JSON value */
    void (*gossip_metrics)(void *ud, nsrv_buf_t *out);  /* appends Prometheus lines */
    bool (*gossip_degraded)(void *ud, nsrv_buf_t *why); /* peers refused lately: why */
    void *gossip_status_ud;
    /* Where a broker heard only through peers was last reported from (e.g. "peer:2"). */
    const char *(*liveness_source)(void *ud, const nsrv_route_live_info_t *li);
    void *liveness_ud;
    /* TLS on the listen port (conn_tls.c). */
    struct nsrv_tls_ctx *tls;             /* NULL: disabled, or not made yet (on demand) */
    const struct nsrv_crypto_api *crypto; /* nsrvd-crypto.so's table once loaded */
    nsrv_tls_mode_t tls_mode;             /* the first-byte rule, fixed at start */
    bool tls_on_demand;                   /* the context waits for the first TLS client */
    uint64_t tls_refused_total, plain_refused_total; /* closed by tls.server.mode at byte one */
    /* The request being run: a reply slot reserved for it records these. */
    int cur_metrics_slot;
    uint64_t cur_start_ns;
    /* While a read callback runs: its clock reading, which the batch it starts reuses
     * (a vDSO clock read costs as much as a tenth of a route query's user time); else 0. */
    uint64_t read_ns;
    /* Per-request scratch reused across requests: no allocation in steady state. */
    nsrv_arena_t arena;
    nsrv_buf_t body;
    nsrv_out_batch_t out; /* the replies of the batch being processed */
    /* Reads of connections with no partial frame pending land here. */
    char read_buf[64 * 1024];
};

/* conn.c */
/* Plugs the request runner and the writes into the connection engine's host. */
void nsrv__conn_host_init(nsrv_server_t *srv);
void nsrv__conn_accept(nsrv_server_t *srv);
void nsrv__conn_close(nsrv_conn_t *c, const char *why);
/* During shutdown: closes c once it has no partial request and nothing left to write. */
void nsrv__conn_maybe_finish(nsrv_conn_t *c);
void nsrv__conn_defer_close(nsrv_server_t *srv, uint64_t conn_id);
/* Pending reply slots (nsrv_reply_host_t): NULL if the connection is gone. */
nsrv_reply_slot_t *nsrv__conn_reply_reserve(nsrv_server_t *srv, uint64_t conn_id);
void nsrv__conn_reply_fill(nsrv_server_t *srv, nsrv_reply_slot_t *slot, const nsrv_cmd_t *resp);
/* Continues the connections that yielded their read batch (srv->resume). */
void nsrv__conn_resume_cb(uv_idle_t *h);

/* Runs one decoded request and appends its reply; prep: its part done ahead, or NULL. */
void nsrv__conn_run_request(nsrv_conn_t *c, const nsrv_cmd_t *req, nsrv_proc_prep_t *prep);
/* Sends the replies batched so far. */
void nsrv__conn_flush(nsrv_conn_t *c);
/* After a worker job: what the connection holds is processed on the next loop turn, and
 * reading resumes then if it may. */
void nsrv__conn_continue(nsrv_conn_t *c);

/* conn_offload.c */
/* Hands the engine's offload frame (NSRV_CE_ACT_OFFLOAD) to a worker; its buffer moves to
 * the job. */
void nsrv__offload_start(nsrv_conn_t *c);
/* The connection closes: its job, if any, finishes without it. */
void nsrv__offload_orphan(nsrv_conn_t *c);
/* Loop-thread CPU time of the calling thread, in ns. */
uint64_t nsrv__thread_cpu_ns(void);
/* Records the loop-thread CPU one big frame took (the /metrics maximum). */
void nsrv__big_frame_cpu(nsrv_server_t *srv, uint64_t cpu_ns);

/* conn_tls.c */
/* Builds the TLS context (tls.* keys); logs and returns -1 if it cannot. */
int nsrv__tls_start(nsrv_server_t *srv);
/* SIGHUP: new connections get the certificate and key of fresh; on an error the running
 * ones are kept (logged) and the result is false. */
bool nsrv__tls_reload(nsrv_server_t *srv, const struct nsrv_config *fresh);
void nsrv__tls_stop(nsrv_server_t *srv);
/* Appends the TLS counters in Prometheus text. */
void nsrv__tls_metrics(nsrv_server_t *srv, nsrv_buf_t *out);
/* Applies tls.server.mode to the first byte: false if it closed c; starts TLS on 0x16. */
bool nsrv__conn_first_byte(nsrv_conn_t *c, uint8_t first);
/* NSRV_CE_ACT_TLS_UP: logs the handshake's outcome. */
void nsrv__conn_tls_up(nsrv_conn_t *c);
/* Best-effort close_notify before a graceful close with nothing left queued. */
void nsrv__conn_tls_close_notify(nsrv_conn_t *c);

/* durable.c: starts the writer thread and makes the processor's KV and config
 * writes asynchronous; stop waits for every requested write, then ends it. */
void nsrv__durable_start(nsrv_server_t *srv);
void nsrv__durable_stop(nsrv_server_t *srv);
/* A SIGHUP applied names: the config a failed write goes back to keeps them. */
void nsrv__durable_config_adopt(nsrv_server_t *srv, const char *const *names);

/* data_locks.c: locks the data files (or logs why not and returns -1); release closes the
 * lock descriptors. */
int nsrv__data_locks_take(nsrv_server_t *srv);
void nsrv__data_locks_release(nsrv_server_t *srv);

/* conn_hygiene.c */
/* The connection lists of conn_lists.c: a connection joins the read-order list at accept
 * and moves to its end at each read; the output list when replies wait in the socket; the
 * yield list when its batch yields. close_cb leaves all three. */
void nsrv__conn_lists_add(nsrv_conn_t *c, uint64_t now_ms);
void nsrv__conn_heard(nsrv_conn_t *c, uint64_t now_ms);
void nsrv__conn_out_list(nsrv_conn_t *c);
void nsrv__conn_out_unlist(nsrv_conn_t *c);
void nsrv__conn_yield_list(nsrv_conn_t *c);
void nsrv__conn_lists_remove(nsrv_conn_t *c);

/* Light first (conn_light_first.c): busy connections' held input runs in the check phase,
 * after the quiet connections, at most this much loop time a turn (one at least). */
#define NSRV_LIGHT_FIRST_SLICE_NS (50 * 1000)
/* Slices are cut only this long after a quiet connection's read (light_read_ns). */
#define NSRV_LIGHT_FIRST_RECENT_NS (10 * 1000 * 1000)
void nsrv__light_first_init(nsrv_server_t *srv);
void nsrv__conn_held_list(nsrv_conn_t *c);
void nsrv__conn_held_unlist(nsrv_conn_t *c);
/* conn.c: runs what nsrv__ce_hold kept for c. */
void nsrv__conn_run_held(nsrv_conn_t *c, uint64_t now_ns);

/* The connection limit (conn_limit.c): the smaller of maxConnections (0: none of its own) and
 * what RLIMIT_NOFILE allows after a reserve for files and peers; init raises the soft limit. */
uint64_t nsrv__fd_reserve(uint64_t fd_limit);
uint64_t nsrv__conns_for_fds(uint64_t fd_limit);
void nsrv__conn_limit_init(nsrv_server_t *srv);
size_t nsrv__conn_limit(const nsrv_server_t *srv);
/* A failed accept: counted, logged at most every 10 s with the count since the last line. */
void nsrv__conn_accept_failed(nsrv_server_t *srv, int status);
/* Listener callback: accepts one connection, or accepts and closes it at the connection limit. */
void nsrv__conn_accept_or_refuse(nsrv_server_t *srv);
/* Closes connections that made no progress (no byte read, no reply byte drained) for
 * serverChannelMaxIdleTimeSeconds; called every second. */
void nsrv__conn_idle_sweep(nsrv_server_t *srv, uint64_t now_ms);

/* heap.c: the allocator's thresholds, set once at start; giving freed pages back. */
void nsrv__heap_policy_apply(void);
void nsrv__heap_give_back(void);
/* Accounts reply bytes queued on c, then enforces totalOutputLimitBytes. */
void nsrv__conn_output_queued(nsrv_conn_t *c, size_t bytes);
/* Accounts reply bytes written (or dropped at close) on c. */
void nsrv__conn_output_done(nsrv_conn_t *c, size_t bytes);
/* Accounts c's partial-request buffer after it changed (or c closed), then enforces
 * totalInputLimitBytes. */
void nsrv__conn_input_changed(nsrv_conn_t *c);

/* status.c: binds the status endpoint when statusPort != 0. Returns 0 or a uv error. */
int nsrv__status_start(nsrv_server_t *srv);

/* GET /ready: a node with gossip whose peers never answer is ready this long after start. */
#define NSRV_READY_WINDOW_MS 30000
/* The readiness rule (status.c); appends one line saying why to why. */
bool nsrv__ready(nsrv_server_t *srv, nsrv_buf_t *why);
