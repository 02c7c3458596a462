/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server lifecycle: start-up (KV load, bind, boot line), the expiry scan and
 * idle-connection timers, signals, and graceful shutdown.
 *
 * Shutdown (SIGTERM/SIGINT): stop accepting; keep serving connections until
 * each has no partial request buffered, nothing unread in the kernel and
 * every reply written, then close it. Requests that arrive meanwhile are
 * answered, never with GO_AWAY: a 5.3.x client would retry at the closed
 * listener (conn.c request_started). The loop
 * ends when the last connection is closed, or at shutdownWaitTimeSeconds
 * when the stragglers are closed by force. A second signal exits at once.
 */
#include "nsrv/server.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/gossip.h"
#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/processor.h"
#include "nsrv/route.h"
#include "sd_notify.h"
#include "nsaddr.h"
#include "server_int.h"

/* How often idle connections are looked for; the timeout itself is configured. */
#define IDLE_CHECK_MS 1000

static void route_conn_close_cb(void *ud, uint64_t conn_id) {
    nsrv__conn_defer_close(ud, conn_id);
}

static void scan_cb(uv_timer_t *t) {
    nsrv_server_t *srv = t->data;
    size_t n = nsrv_route_expire(srv->rt, nsrv_now_mono_ms());
    if (n)
        nsrv_log_notice("ROUTE", "expiry scan removed %zu inactive broker(s)", n);
}

static void idle_cb(uv_timer_t *t) {
    nsrv__conn_idle_sweep(t->data, nsrv_now_mono_ms());
}

static void listener_cb(uv_stream_t *s, int status) {
    nsrv_server_t *srv = s->data;
    if (status < 0) {
        nsrv__conn_accept_failed(srv, status);
        return;
    }
    if (srv->shutting_down)
        return;
    nsrv__conn_accept_or_refuse(srv);
}

static void deadline_cb(uv_timer_t *t) {
    nsrv_server_t *srv = t->data;
    nsrv_log_warn("SERVER", "shutdown wait over: closing %zu connection(s) by force", srv->n_conns);
    for (nsrv_conn_t *c = srv->conns, *next; c; c = next) {
        next = c->next;
        nsrv__conn_close(c, "shutdown deadline");
    }
    if (srv->n_conns == 0)
        uv_stop(&srv->loop);
}

static void idle_grace_cb(uv_timer_t *t) {
    nsrv_server_t *srv = t->data;
    srv->conn_host.idle_grace_over = true;
    for (nsrv_conn_t *c = srv->conns, *next; c; c = next) {
        next = c->next;
        nsrv__conn_maybe_finish(c);
    }
    if (srv->n_conns == 0)
        uv_stop(&srv->loop);
}

/* Until the node is ready by the rule of GET /ready (a gossip node: synced with a peer, or
 * its start-up window over), the service manager hears why; READY=1 when it is, so that
 * `systemctl start` and the units ordered after nsrvd wait for a node that holds the
 * cluster's view, whether or not a status port is configured. */
#define READY_POLL_MS 100

static void ready_cb(uv_timer_t *t) {
    nsrv_server_t *srv = t->data;
    nsrv_buf_t why = NSRV_BUF_INIT;
    if (nsrv__ready(srv, &why)) {
        uv_timer_stop(t);
        if (why.len && why.data[why.len - 1] == '\n')
            why.len--;
        nsrv_log_notice("SERVER", "%.*s", (int)why.len, why.data);
        nsrv_sd_notify_ready(srv->bound_port);
    }
    nsrv_buf_deinit(&why);
}

static void notify_ready_when_ready(nsrv_server_t *srv) {
    nsrv_buf_t why = NSRV_BUF_INIT;
    if (nsrv__ready(srv, &why)) {
        nsrv_sd_notify_ready(srv->bound_port);
    } else {
        if (why.len && why.data[why.len - 1] == '\n')
            why.len--;
        nsrv_buf_append_ch(&why, '\0');
        nsrv_sd_notify_status(why.data);
        uv_timer_start(&srv->ready_timer, ready_cb, READY_POLL_MS, READY_POLL_MS);
    }
    nsrv_buf_deinit(&why);
}

static void begin_shutdown(nsrv_server_t *srv, int signum) {
    srv->shutting_down = true;
    srv->conn_host.shutting_down = true;
    uv_timer_stop(&srv->ready_timer);
    nsrv_sd_notify_stopping();
    nsrv_log_notice("SERVER", "received %s: shutting down, %zu connection(s) open",
                    strsignal(signum), srv->n_conns);
    if (srv->listener_open) {
        srv->listener_open = false;
        uv_close((uv_handle_t *)&srv->listener, NULL);
    }
    /* The status endpoint stays up: /health now answers 503 while we drain. */
    if (srv->gossip) {
        srv->gossip_status = NULL;
        srv->gossip_metrics = NULL;
        srv->gossip_degraded = NULL;
        srv->liveness_source = NULL;
        /* The peers drop us from their address service now, not after the alive window. */
        nsrv_gossip_leave(srv->gossip);
        nsrv_gossip_stop(srv->gossip);
        srv->gossip = NULL;
    }
    uint64_t wait_ms = (uint64_t)srv->cfg->shutdown_wait_time_seconds * 1000u;
    uv_timer_start(&srv->deadline_timer, deadline_cb, wait_ms, 0);
    uv_timer_start(
        &srv->idle_grace_timer, idle_grace_cb,
        wait_ms < NSRV_CE_SHUTDOWN_IDLE_GRACE_MS ? wait_ms : NSRV_CE_SHUTDOWN_IDLE_GRACE_MS, 0);
    for (nsrv_conn_t *c = srv->conns, *next; c; c = next) {
        next = c->next;
        nsrv__conn_maybe_finish(c);
    }
    if (srv->n_conns == 0)
        uv_stop(&srv->loop);
}

/* What a SIGHUP did, for its log lines: the changed keys it applied, those it could not. */
typedef struct {
    nsrv_server_t *srv;
    const nsrv_config_t *fresh;
    nsrv_buf_t applied;
    bool whole;
} reload_t;

static void append_name(nsrv_buf_t *b, const char *name) {
    if (b->len)
        nsrv_buf_append_c(b, ", ");
    nsrv_buf_append_c(b, name);
}

static bool key_changed(const reload_t *r, const char *name) {
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        if (strcmp(nsrv_config_key_name(i), name) == 0)
            return !nsrv_config_key_same(r->srv->cfg, r->fresh, i);
    }
    return false;
}

/* A part that applied is adopted into the running config (nsrv_config_adopt, so
 * GET_NAMESRV_CONFIG shows it and UPDATE_NAMESRV_CONFIG writes it back) and its changed keys
 * are named; a part that failed keeps its old values. The parts' keys are the
 * NSRV_CONFIG_RELOAD_* flags of config_keys.def. */
static bool reload_part(reload_t *r, unsigned part, bool applied) {
    const char *names[64];
    nsrv_config_keys_with(part, names, NSRV_ARRAY_LEN(names));
    if (!applied) {
        r->whole = false;
        return false;
    }
    for (const char *const *n = names; *n; n++) {
        if (key_changed(r, *n))
            append_name(&r->applied, *n);
    }
    (void)nsrv_config_adopt(r->srv->cfg, r->fresh, names);
    nsrv__durable_config_adopt(r->srv, names);
    return true;
}

/* One warning for every changed key a SIGHUP does not apply (they act at the next start). */
static void warn_needs_restart(const nsrv_config_t *running, const nsrv_config_t *fresh) {
    nsrv_buf_t names = NSRV_BUF_INIT;
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        const char *name = nsrv_config_key_name(i);
        if (!(nsrv_config_key_flags(name) & NSRV_CONFIG_RELOAD) &&
            !nsrv_config_key_same(running, fresh, i))
            append_name(&names, name);
    }
    if (names.len)
        nsrv_log_warn("SERVER", "SIGHUP: changed keys not applied, they need a restart: %.*s",
                      (int)names.len, names.data);
    nsrv_buf_deinit(&names);
}

static void reload_apply(nsrv_server_t *srv, nsrv_config_t *fresh) {
    reload_t r = {.srv = srv, .fresh = fresh, .whole = true};
    nsrv_buf_init(&r.applied);
    char err[512] = "";
    warn_needs_restart(srv->cfg, fresh);
    nsrv_config_apply_log_level(fresh);
    reload_part(&r, NSRV_CONFIG_RELOAD_LOG, true);
    reload_part(&r, NSRV_CONFIG_RELOAD_TLS, nsrv__tls_reload(srv, fresh));
    if (srv->status_open && !reload_part(&r, NSRV_CONFIG_RELOAD_NSADDR,
                                         nsrv__nsaddr_configure(srv, fresh, err, sizeof err) == 0))
        nsrv_log_error("SERVER", "SIGHUP: keeping the running address service: %s", err);
    nsrv_acl_t *acl = nsrv_acl_create(fresh, err, sizeof err);
    if (reload_part(&r, NSRV_CONFIG_RELOAD_ACL, acl != NULL))
        nsrv_processor_set_acl(srv->proc, acl);
    else
        nsrv_log_error("ACL", "SIGHUP: keeping the running access rules: %s", err);
    if (srv->gossip && !reload_part(&r, NSRV_CONFIG_RELOAD_GOSSIP,
                                    nsrv_gossip_reload(srv->gossip, fresh, err, sizeof err) == 0))
        nsrv_log_error("GOSSIP", "SIGHUP: keeping the running peers and keys: %s", err);
    if (srv->gossip) {
        nsrv__announce_t ann;
        nsrv__nsaddr_announce(srv, srv->cfg, &ann);
        nsrv_gossip_set_announce(srv->gossip, &ann.a);
    }
    /* "reloaded" only when every part applied: scripts wait for it. */
    nsrv_log_notice("SERVER", "SIGHUP: %s '%s'; changed keys applied: %.*s",
                    r.whole ? "reloaded" : "reload incomplete (errors above) of", srv->config_file,
                    r.applied.len ? (int)r.applied.len : 4,
                    r.applied.len ? r.applied.data : "none");
    nsrv_buf_deinit(&r.applied);
}

/* SIGHUP: re-reads the config file and applies the keys that can change live (the
 * NSRV_CONFIG_RELOAD_* keys: gossip peers and keys, the log level, TLS, the address
 * service's list, the access policy); other changed keys are named in a warning and take
 * effect at the next start. */
static void reload(nsrv_server_t *srv) {
    if (!srv->config_file) {
        nsrv_log_notice("SERVER", "SIGHUP: no config file to reload");
        return;
    }
    nsrv_config_t fresh;
    char err[512] = "";
    nsrv_config_init_defaults(&fresh);
    if (nsrv_config_load_file(&fresh, srv->config_file, err, sizeof err) != 0)
        nsrv_log_error("SERVER", "SIGHUP: keeping the running config: %s", err);
    else
        reload_apply(srv, &fresh);
    nsrv_config_free(&fresh);
}

static void signal_cb(uv_signal_t *h, int signum) {
    nsrv_server_t *srv = h->data;
    if (signum == SIGHUP) {
        reload(srv);
        return;
    }
    if (++srv->signals_seen > 1) {
        nsrv_log_warn("SERVER", "second signal: exiting without waiting");
        fflush(stderr);
        _exit(1);
    }
    begin_shutdown(srv, signum);
}

static void close_walk_cb(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static int bind_listener(nsrv_server_t *srv) {
    struct sockaddr_storage addr;
    const char *host =
        srv->cfg->bind_address && *srv->cfg->bind_address ? srv->cfg->bind_address : "0.0.0.0";
    int port = srv->cfg->listen_port;
    int rc = nsrv_sockaddr_literal(host, port, &addr) == 0 ? 0 : UV_EINVAL;
    if (rc == 0)
        rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&srv->listener, srv->cfg->server_socket_backlog, listener_cb);
    if (rc != 0) {
        nsrv_log_error("SERVER", "cannot listen on %s:%d: %s", host, port, uv_strerror(rc));
        return rc;
    }
    srv->listener_open = true;
    struct sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&bound, &len);
    int bound_port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                                 : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    srv->bound_port = bound_port;
    return 0;
}

/* Scripts wait for this exact line (NamesrvStartup prints it on stdout), so it comes only
 * once every listener is bound and gossip runs: a node that is about to exit never says it. */
static void announce_serving(nsrv_server_t *srv) {
    const char *host =
        srv->cfg->bind_address && *srv->cfg->bind_address ? srv->cfg->bind_address : "0.0.0.0";
    printf("The Name Server boot success. serializeType=JSON, address %s:%d\n", host,
           srv->bound_port);
    fflush(stdout);
    notify_ready_when_ready(srv);
}

static void init_timer(nsrv_server_t *srv, uv_timer_t *t) {
    uv_timer_init(&srv->loop, t);
    t->data = srv;
}

static void init_signal(nsrv_server_t *srv, uv_signal_t *s, int signum) {
    uv_signal_init(&srv->loop, s);
    s->data = srv;
    uv_signal_start(s, signal_cb, signum);
}

static void gossip_status_hook(void *ud, nsrv_buf_t *out) {
    nsrv_server_t *srv = ud;
    nsrv_gossip_node_status_json(nsrv_gossip_engine(srv->gossip), nsrv_now_mono_ms(), out);
}

static void gossip_metrics_hook(void *ud, nsrv_buf_t *out) {
    nsrv_server_t *srv = ud;
    nsrv_gossip_node_metrics(nsrv_gossip_engine(srv->gossip), nsrv_now_mono_ms(), out);
}

static bool gossip_degraded_hook(void *ud, nsrv_buf_t *why) {
    nsrv_server_t *srv = ud;
    return nsrv_gossip_node_degraded(nsrv_gossip_engine(srv->gossip), nsrv_now_mono_ms(), why);
}

static const char *gossip_source_hook(void *ud, const nsrv_route_live_info_t *li) {
    nsrv_server_t *srv = ud;
    return nsrv_gossip_node_source(nsrv_gossip_engine(srv->gossip), li);
}

static void gossip_unregister_hook(void *ud, const char *cluster, const char *addr,
                                   const char *name, int64_t id) {
    nsrv_server_t *srv = ud;
    if (srv->gossip)
        nsrv_gossip_node_on_unregister(nsrv_gossip_engine(srv->gossip), cluster, addr, name, id,
                                       nsrv_now_mono_ms());
}

/* The access policy from cfg: a list or key file that cannot be used stops the
 * start (an open node where a closed one was asked for would be worse). */
static int start_acl(nsrv_server_t *srv) {
    char err[512] = "";
    nsrv_acl_t *acl = nsrv_acl_create(srv->cfg, err, sizeof err);
    if (!acl) {
        nsrv_log_error("ACL", "cannot start: %s", err);
        return -1;
    }
    nsrv_processor_set_acl(srv->proc, acl);
    return 0;
}

static int start_gossip(nsrv_server_t *srv) {
    if (!srv->cfg->gossip_enable)
        return 0;
    char err[512] = "";
    nsrv__announce_t ann;
    nsrv__nsaddr_announce(srv, srv->cfg, &ann);
    srv->gossip = nsrv_gossip_start(&srv->loop, srv->cfg, srv->rt, &ann.a, err, sizeof err);
    if (!srv->gossip) {
        nsrv_log_error("GOSSIP", "cannot start: %s", err);
        return -1;
    }
    srv->gossip_status = gossip_status_hook;
    srv->gossip_metrics = gossip_metrics_hook;
    srv->gossip_degraded = gossip_degraded_hook;
    srv->gossip_status_ud = srv;
    srv->liveness_source = gossip_source_hook;
    srv->liveness_ud = srv;
    nsrv_processor_set_unregister_hook(srv->proc, gossip_unregister_hook, srv);
    return 0;
}

int nsrv_server_run(struct nsrv_config *cfg, const char *config_file) {
    nsrv__heap_policy_apply();
    nsrv_server_t *srv = nsrv_calloc(1, sizeof *srv);
    int exit_code = 1;
    srv->cfg = cfg;
    srv->config_file = config_file;
    srv->start_ms = nsrv_now_mono_ms();
    nsrv_arena_init(&srv->arena, 16 * 1024);
    nsrv_buf_init(&srv->body);
    nsrv__out_init(&srv->out);
    nsrv__conn_host_init(srv);
    uv_loop_init(&srv->loop);
    nsrv__conn_limit_init(srv);

    srv->kv = nsrv_kv_create(cfg->kv_config_path);
    char err[256] = "";
    if (nsrv__data_locks_take(srv) != 0)
        goto stop_loop;
    if (nsrv_kv_load(srv->kv, err, sizeof err) != 0) {
        nsrv_log_error("KV", "cannot load '%s': %s", cfg->kv_config_path, err);
        goto stop_loop;
    }
    srv->rt = nsrv_route_create();
    nsrv_route_set_conn_close_cb(srv->rt, route_conn_close_cb, srv);
    srv->proc = nsrv_processor_create(cfg, srv->rt, srv->kv, nsrv_now_mono_ms());

    uv_tcp_init(&srv->loop, &srv->listener);
    srv->listener.data = srv;
    uv_idle_init(&srv->loop, &srv->deferred);
    srv->deferred.data = srv;
    uv_idle_init(&srv->loop, &srv->resume);
    srv->resume.data = srv;
    nsrv__light_first_init(srv);
    nsrv__durable_start(srv);
    init_timer(srv, &srv->scan_timer);
    init_timer(srv, &srv->idle_timer);
    init_timer(srv, &srv->deadline_timer);
    init_timer(srv, &srv->idle_grace_timer);
    init_timer(srv, &srv->ready_timer);
    init_signal(srv, &srv->sig_term, SIGTERM);
    init_signal(srv, &srv->sig_int, SIGINT);
    init_signal(srv, &srv->sig_hup, SIGHUP);
    if (nsrv__tls_start(srv) != 0 || start_acl(srv) != 0 || bind_listener(srv) != 0 ||
        nsrv__status_start(srv) != 0 || start_gossip(srv) != 0)
        goto stop_loop;
    uint64_t scan_ms = (uint64_t)cfg->scan_not_active_broker_interval;
    uv_timer_start(&srv->scan_timer, scan_cb, scan_ms, scan_ms);
    uv_timer_start(&srv->idle_timer, idle_cb, IDLE_CHECK_MS, IDLE_CHECK_MS);
    announce_serving(srv);

    uv_run(&srv->loop, UV_RUN_DEFAULT);
    exit_code = 0;
    /* Every KV and config change is on disk once the writer is drained (their replies
     * went out before their connections closed); routes are never persisted (proto/requests.md
     * §5.6). */
    nsrv__durable_stop(srv);
    nsrv_log_notice("SERVER", "shutdown complete");

stop_loop:
    nsrv__durable_stop(srv);
    uv_walk(&srv->loop, close_walk_cb, NULL);
    uv_run(&srv->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&srv->loop) != 0)
        nsrv_log_warn("SERVER", "event loop closed with handles still open");
    nsrv_processor_destroy(&srv->proc);
    nsrv_route_destroy(&srv->rt);
    nsrv_kv_destroy(&srv->kv);
    nsrv__data_locks_release(srv);
    nsrv__tls_stop(srv);
    nsrv_free(srv->nsaddr_peers);
    nsrv_arena_deinit(&srv->arena);
    nsrv_buf_deinit(&srv->body);
    nsrv__out_deinit(&srv->out);
    nsrv_free(srv);
    return exit_code;
}
