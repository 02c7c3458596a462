/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-brokersim: simulates N RocketMQ brokers (with K slaves each) that
 * register with every nameserver, re-register every period, optionally send
 * light heartbeats, and obey stdin commands that stop, kill, freeze or cut
 * chosen brokers from chosen nodes (used by the cluster,
 * chaos and benchmark tests). One libuv loop thread; links live in
 * bsim_net.c, the pure parts in bsim_*.c. Output contract (stdout, one line
 * each): "ok <command>" / "err <reason>" per command, "ready ok=.. failed=..
 * elapsed_ms=.." once the first registration round is over, JSON stats lines
 * starting with '{', and "list ..." lines. Logs go to stderr.
 */
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <uv.h>

#include "nsrv/alloc.h"
#include "nsrv/log.h"
#include "nsrv/register_body.h"
#include "bsim_sim.h"

/* How often pending requests are checked against their deadline. */
#define SWEEP_MS 100
/* File descriptors kept free for stdio, the loop and its signal pipe. */
#define FD_RESERVE 64
/* The arena holds one decoded response header at a time. */
#define ARENA_CHUNK (16 * 1024)

void nsrv__bsim_print_line(const char *line) {
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

uint64_t nsrv__bsim_elapsed_ms(const nsrv_bsim_t *sim) {
    return (uv_hrtime() - sim->start_ns) / 1000000u;
}

bool nsrv__bsim_broker_wants_links(const nsrv_bsim_broker_t *b) {
    return b->state == NSRV_BSIM_BROKER_ACTIVE && !b->sim->exiting;
}

static void print_stats(nsrv_bsim_t *sim, const char *event) {
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv__bsim_stats_json(&sim->stats, event, nsrv__bsim_elapsed_ms(sim), sim->n_members,
                          sim->opts.n_nodes, &out);
    nsrv__bsim_print_line(out.data);
    nsrv_buf_deinit(&out);
}

/* ---- exit ---------------------------------------------------------------- */

static void close_walk_cb(uv_handle_t *h, void *arg) {
    NSRV_UNUSED(arg);
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void finish_exit(nsrv_bsim_t *sim) {
    if (sim->finished)
        return;
    sim->finished = true;
    if (sim->opts.json_stats)
        print_stats(sim, "exit");
    const nsrv_bsim_stats_t *s = &sim->stats;
    nsrv_log_notice("BSIM",
                    "exiting after %llu ms: registrations sent %llu ok %llu failed %llu, "
                    "p50 %llu us p99 %llu us max %llu us",
                    (unsigned long long)nsrv__bsim_elapsed_ms(sim), (unsigned long long)s->reg_sent,
                    (unsigned long long)s->reg_ok,
                    (unsigned long long)(s->reg_err + s->reg_timeout + s->reg_lost),
                    (unsigned long long)nsrv__bsim_hist_percentile(&s->reg_lat_us, 0.5),
                    (unsigned long long)nsrv__bsim_hist_percentile(&s->reg_lat_us, 0.99),
                    (unsigned long long)s->reg_lat_us.max);
    for (uint32_t g = 0; g < sim->n_groups; g++)
        for (uint32_t m = 0; m < sim->groups[g].n_members; m++)
            for (size_t n = 0; n < sim->opts.n_nodes; n++)
                nsrv__bsim_link_close(&sim->groups[g].members[m].links[n], "exit");
    uv_walk(&sim->loop, close_walk_cb, NULL);
}

static void batch_complete(nsrv_bsim_t *sim, nsrv_bsim_batch_t *batch) {
    bool then_exit = batch->then_exit;
    if (batch->ack[0])
        nsrv__bsim_print_line(batch->ack);
    nsrv_free(batch);
    if (then_exit)
        finish_exit(sim);
}

static void batch_release(nsrv_bsim_t *sim, nsrv_bsim_batch_t *batch) {
    if (--batch->remaining == 0)
        batch_complete(sim, batch);
}

/* ---- broker actions -------------------------------------------------------- */

/* Links a command takes out of play no longer count toward the first round. */
static void first_round_give_up(nsrv_bsim_broker_t *b) {
    for (size_t n = 0; n < b->sim->opts.n_nodes; n++)
        nsrv__bsim_link_first_done(&b->links[n], false);
}

static void close_links(nsrv_bsim_broker_t *b, const char *why) {
    for (size_t n = 0; n < b->sim->opts.n_nodes; n++) {
        nsrv_bsim_link_t *l = &b->links[n];
        uv_timer_stop(&l->retry_timer);
        l->retry_armed = false;
        nsrv__bsim_link_close(l, why);
    }
}

/* A registration round: REGISTER_BROKER on every open link that is not cut;
 * closed links connect and register once up. */
static void register_round(nsrv_bsim_broker_t *b) {
    for (size_t n = 0; n < b->sim->opts.n_nodes; n++) {
        nsrv_bsim_link_t *l = &b->links[n];
        if (l->cut || l->cut_closed)
            continue;
        if (l->state == NSRV_BSIM_LINK_UP)
            nsrv__bsim_link_send_register(l);
        else if (l->state == NSRV_BSIM_LINK_IDLE)
            nsrv__bsim_link_connect(l);
    }
}

static void leave_batch(nsrv_bsim_broker_t *b) {
    nsrv_bsim_batch_t *batch = b->batch;
    b->batch = NULL;
    if (batch)
        batch_release(b->sim, batch);
}

static void finish_stop(nsrv_bsim_broker_t *b) {
    b->state = NSRV_BSIM_BROKER_STOPPED;
    close_links(b, "stopped");
    leave_batch(b);
}

void nsrv__bsim_broker_unreg_done(nsrv_bsim_broker_t *b) {
    if (b->state != NSRV_BSIM_BROKER_STOPPING)
        return;
    if (b->unreg_waiting && --b->unreg_waiting)
        return;
    finish_stop(b);
}

/* Graceful shutdown of one member (proto/peers.md §1.5): UNREGISTER_BROKER to every
 * node it can talk to, then close. The batch is released when done. */
static void begin_stop(nsrv_bsim_broker_t *b, nsrv_bsim_batch_t *batch) {
    if (b->state != NSRV_BSIM_BROKER_ACTIVE && b->state != NSRV_BSIM_BROKER_FROZEN)
        return;
    first_round_give_up(b);
    b->state = NSRV_BSIM_BROKER_STOPPING;
    b->batch = batch;
    batch->remaining++;
    b->unreg_waiting = 0;
    for (size_t n = 0; n < b->sim->opts.n_nodes; n++)
        if (nsrv__bsim_link_send_unregister(&b->links[n]) == 0)
            b->unreg_waiting++;
    if (b->unreg_waiting == 0)
        finish_stop(b);
}

static void do_die(nsrv_bsim_broker_t *b) {
    if (b->state == NSRV_BSIM_BROKER_DEAD || b->state == NSRV_BSIM_BROKER_STOPPED)
        return;
    first_round_give_up(b);
    b->state = NSRV_BSIM_BROKER_DEAD;
    close_links(b, "die");
    leave_batch(b);
}

static void do_resume(nsrv_bsim_broker_t *b) {
    switch (b->state) {
    case NSRV_BSIM_BROKER_FROZEN:
        b->state = NSRV_BSIM_BROKER_ACTIVE;
        register_round(b);
        break;
    case NSRV_BSIM_BROKER_DEAD:
    case NSRV_BSIM_BROKER_STOPPED:
        /* A restarted broker: fresh connections, immediate registration. */
        b->state = NSRV_BSIM_BROKER_ACTIVE;
        for (size_t n = 0; n < b->sim->opts.n_nodes; n++)
            b->links[n].backoff_ms = NSRV_BSIM_BACKOFF_MIN_MS;
        register_round(b);
        break;
    case NSRV_BSIM_BROKER_ACTIVE:
    case NSRV_BSIM_BROKER_STOPPING:
        break;
    }
}

static void do_link(nsrv_bsim_broker_t *b, nsrv_bsim_verb_t verb, uint32_t node) {
    nsrv_bsim_link_t *l = &b->links[node];
    switch (verb) {
    case NSRV_BSIM_CMD_CUT:
        l->cut = true;
        nsrv__bsim_link_first_done(l, false);
        break;
    case NSRV_BSIM_CMD_CUT_CLOSE:
        l->cut_closed = true;
        nsrv__bsim_link_first_done(l, false);
        uv_timer_stop(&l->retry_timer);
        l->retry_armed = false;
        nsrv__bsim_link_close(l, "cut-close");
        break;
    case NSRV_BSIM_CMD_HEAL:
        l->cut = l->cut_closed = false;
        if (b->state != NSRV_BSIM_BROKER_ACTIVE)
            break;
        if (l->state == NSRV_BSIM_LINK_UP)
            nsrv__bsim_link_send_register(l);
        else if (l->state == NSRV_BSIM_LINK_IDLE)
            nsrv__bsim_link_connect(l);
        break;
    default:
        break;
    }
}

/* A topic-config change: one more topic, a new DataVersion, re-registration
 * of the active members (registerIncrementBrokerData sends the full table
 * here, which a nameserver treats the same, proto/peers.md §1.2). */
static int do_bump(nsrv_bsim_group_t *g, nsrv_bsim_t *sim) {
    nsrv__bsim_topics_bump(&g->topics, g->name, (int32_t)sim->opts.queues);
    g->dv.counter++;
    g->dv.timestamp = nsrv_now_wall_ms();
    nsrv_buf_reset(&g->body);
    int rc = nsrv__bsim_topics_encode(&g->topics, &g->dv, sim->opts.compressed, NSRV_MQ_CURRENT,
                                      &g->body);
    if (rc < 0)
        return rc;
    snprintf(g->body_crc, sizeof(g->body_crc), "%u",
             (unsigned)nsrv_body_crc32(g->body.data, g->body.len));
    for (uint32_t m = 0; m < g->n_members; m++)
        if (g->members[m].state == NSRV_BSIM_BROKER_ACTIVE)
            register_round(&g->members[m]);
    return 0;
}

/* ---- commands --------------------------------------------------------------- */

static const char *state_name(nsrv_bsim_broker_state_t s) {
    static const char *names[] = {"active", "frozen", "stopping", "stopped", "dead"};
    return names[s];
}

static void list_broker(const nsrv_bsim_broker_t *b) {
    static const char *link_names[] = {"idle", "connecting", "up", "closing"};
    char line[512];
    int n = snprintf(line, sizeof(line), "list %s/%u %s %s", b->group->name, b->id, b->addr,
                     state_name(b->state));
    for (size_t i = 0; i < b->sim->opts.n_nodes && n > 0 && (size_t)n < sizeof(line); i++) {
        const nsrv_bsim_link_t *l = &b->links[i];
        n += snprintf(line + n, sizeof(line) - (size_t)n, " %s%s", link_names[l->state],
                      l->cut_closed ? "+cut-close" : (l->cut ? "+cut" : ""));
    }
    nsrv__bsim_print_line(line);
}

static nsrv_bsim_group_t *find_group(nsrv_bsim_t *sim, const char *name) {
    for (uint32_t g = 0; g < sim->n_groups; g++)
        if (strcmp(sim->groups[g].name, name) == 0)
            return &sim->groups[g];
    return NULL;
}

static void reply_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void reply_err(const char *fmt, ...) {
    char line[256] = "err ";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + 4, sizeof(line) - 4, fmt, ap);
    va_end(ap);
    nsrv__bsim_print_line(line);
}

static void sim_exit(nsrv_bsim_t *sim, const char *why);

static void run_command(nsrv_bsim_t *sim, const nsrv_bsim_cmd_t *cmd) {
    char text[160], ack[200];
    nsrv__bsim_cmd_format(cmd, text, sizeof(text));
    snprintf(ack, sizeof(ack), "ok %s", text);
    switch (cmd->verb) {
    case NSRV_BSIM_CMD_NONE:
        return;
    case NSRV_BSIM_CMD_STATS:
        print_stats(sim, "stats");
        nsrv__bsim_print_line(ack);
        return;
    case NSRV_BSIM_CMD_LIST:
        for (uint32_t g = 0; g < sim->n_groups; g++)
            for (uint32_t m = 0; m < sim->groups[g].n_members; m++)
                list_broker(&sim->groups[g].members[m]);
        nsrv__bsim_print_line(ack);
        return;
    case NSRV_BSIM_CMD_QUIT:
        nsrv__bsim_print_line(ack);
        sim_exit(sim, "quit command");
        return;
    default:
        break;
    }
    if (sim->exiting) {
        nsrv__bsim_print_line("err exiting");
        return;
    }
    /* Targets: every member of every group ("all"), of one group, or one member. */
    uint32_t g_lo = 0, g_hi = sim->n_groups;
    if (strcmp(cmd->target, "all") != 0) {
        nsrv_bsim_group_t *g = find_group(sim, cmd->target);
        if (!g) {
            reply_err("unknown broker '%s'", cmd->target);
            return;
        }
        g_lo = g->index;
        g_hi = g->index + 1;
        if (cmd->member_id >= 0 && (uint32_t)cmd->member_id >= g->n_members) {
            reply_err("broker '%s' has no member %d", cmd->target, (int)cmd->member_id);
            return;
        }
    }
    if (cmd->node >= 0 && (size_t)cmd->node >= sim->opts.n_nodes) {
        reply_err("node index %d out of range (%zu nodes)", (int)cmd->node, sim->opts.n_nodes);
        return;
    }
    nsrv_bsim_batch_t *batch = NULL;
    if (cmd->verb == NSRV_BSIM_CMD_STOP) {
        batch = nsrv_calloc(1, sizeof(*batch));
        snprintf(batch->ack, sizeof(batch->ack), "%s", ack);
        batch->remaining = 1; /* held until every target is started */
    }
    for (uint32_t gi = g_lo; gi < g_hi; gi++) {
        nsrv_bsim_group_t *g = &sim->groups[gi];
        if (cmd->verb == NSRV_BSIM_CMD_BUMP) {
            if (do_bump(g, sim) < 0) {
                reply_err("cannot encode the body of '%s'", g->name);
                return;
            }
            continue;
        }
        for (uint32_t m = 0; m < g->n_members; m++) {
            if (cmd->member_id >= 0 && (uint32_t)cmd->member_id != m)
                continue;
            nsrv_bsim_broker_t *b = &g->members[m];
            switch (cmd->verb) {
            case NSRV_BSIM_CMD_STOP:
                begin_stop(b, batch);
                break;
            case NSRV_BSIM_CMD_DIE:
                do_die(b);
                break;
            case NSRV_BSIM_CMD_FREEZE:
                if (b->state == NSRV_BSIM_BROKER_ACTIVE) {
                    first_round_give_up(b);
                    b->state = NSRV_BSIM_BROKER_FROZEN;
                }
                break;
            case NSRV_BSIM_CMD_RESUME:
                do_resume(b);
                break;
            case NSRV_BSIM_CMD_CUT:
            case NSRV_BSIM_CMD_CUT_CLOSE:
            case NSRV_BSIM_CMD_HEAL:
                do_link(b, cmd->verb, (uint32_t)cmd->node);
                break;
            default:
                break;
            }
        }
    }
    if (batch)
        batch_release(sim, batch);
    else
        nsrv__bsim_print_line(ack);
}

static void run_line(nsrv_bsim_t *sim, const char *line, size_t len) {
    nsrv_bsim_cmd_t cmd;
    char err[200];
    if (nsrv__bsim_cmd_parse(line, len, &cmd, err, sizeof(err)) < 0) {
        char out[220];
        snprintf(out, sizeof(out), "err %s", err);
        nsrv__bsim_print_line(out);
        return;
    }
    run_command(sim, &cmd);
}

/* ---- stdin ---------------------------------------------------------------- */

static void stdin_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    NSRV_UNUSED(suggested);
    nsrv_bsim_t *sim = h->data;
    *buf = uv_buf_init(sim->read_buf, sizeof(sim->read_buf));
}

static void stdin_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    nsrv_bsim_t *sim = s->data;
    for (ssize_t i = 0; i < nread; i++) {
        char c = buf->base[i];
        if (c == '\n') {
            if (sim->line_overflow)
                nsrv__bsim_print_line("err line too long");
            else
                run_line(sim, sim->line, sim->line_len);
            sim->line_len = 0;
            sim->line_overflow = false;
        } else if (sim->line_len < sizeof(sim->line)) {
            sim->line[sim->line_len++] = c;
        } else {
            sim->line_overflow = true;
        }
    }
    if (nread < 0) {
        if (sim->line_len && !sim->line_overflow)
            run_line(sim, sim->line, sim->line_len);
        sim->line_len = 0;
        uv_read_stop(s);
        if (!uv_is_closing((uv_handle_t *)s))
            uv_close((uv_handle_t *)s, NULL);
        sim->in = NULL;
        if (sim->opts.quit_on_eof)
            sim_exit(sim, "end of stdin");
    }
}

static void stdin_open(nsrv_bsim_t *sim) {
    uv_handle_type t = uv_guess_handle(0);
    if (t == UV_NAMED_PIPE) {
        uv_pipe_init(&sim->loop, &sim->in_pipe, 0);
        if (uv_pipe_open(&sim->in_pipe, 0) == 0)
            sim->in = (uv_stream_t *)&sim->in_pipe;
        else
            uv_close((uv_handle_t *)&sim->in_pipe, NULL);
    } else if (t == UV_TTY) {
        if (uv_tty_init(&sim->loop, &sim->in_tty, 0, 0) == 0)
            sim->in = (uv_stream_t *)&sim->in_tty;
    }
    if (sim->in)
        sim->in->data = sim;
    if (!sim->in || uv_read_start(sim->in, stdin_alloc_cb, stdin_read_cb) < 0) {
        sim->in = NULL;
        nsrv_log_info("BSIM", "stdin is not a pipe or terminal: no commands");
    }
}

/* ---- timers and signals ---------------------------------------------------- */

static void reg_timer_cb(uv_timer_t *t) {
    nsrv_bsim_broker_t *b = t->data;
    if (b->state == NSRV_BSIM_BROKER_ACTIVE && !b->sim->exiting)
        register_round(b);
}

static void hb_timer_cb(uv_timer_t *t) {
    nsrv_bsim_broker_t *b = t->data;
    if (b->state != NSRV_BSIM_BROKER_ACTIVE || b->sim->exiting)
        return;
    for (size_t n = 0; n < b->sim->opts.n_nodes; n++)
        nsrv__bsim_link_send_heartbeat(&b->links[n]);
}

static void sweep_cb(uv_timer_t *t) {
    nsrv_bsim_t *sim = t->data;
    uint64_t now = uv_hrtime();
    for (uint32_t g = 0; g < sim->n_groups; g++)
        for (uint32_t m = 0; m < sim->groups[g].n_members; m++)
            for (size_t n = 0; n < sim->opts.n_nodes; n++) {
                nsrv_bsim_link_t *l = &sim->groups[g].members[m].links[n];
                if (l->n_pending)
                    nsrv__bsim_link_sweep(l, now);
            }
}

static void exit_timer_cb(uv_timer_t *t) {
    finish_exit(t->data);
}

static void duration_cb(uv_timer_t *t) {
    sim_exit(t->data, "duration elapsed");
}

static void signal_cb(uv_signal_t *h, int signum) {
    nsrv_bsim_t *sim = h->data;
    if (signum == SIGUSR1)
        print_stats(sim, "stats");
    else
        sim_exit(sim, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

static void sim_exit(nsrv_bsim_t *sim, const char *why) {
    if (sim->exiting)
        return;
    sim->exiting = true;
    nsrv_log_notice("BSIM", "exiting: %s", why);
    uv_timer_stop(&sim->duration_timer);
    if (!sim->opts.unregister_on_exit) {
        finish_exit(sim);
        return;
    }
    nsrv_bsim_batch_t *batch = nsrv_calloc(1, sizeof(*batch));
    batch->then_exit = true;
    batch->remaining = 1;
    for (uint32_t g = 0; g < sim->n_groups; g++)
        for (uint32_t m = 0; m < sim->groups[g].n_members; m++)
            begin_stop(&sim->groups[g].members[m], batch);
    /* Unregisters time out after NSRV_BSIM_UNREG_TIMEOUT_MS; this is a backstop. */
    uv_timer_start(&sim->exit_timer, exit_timer_cb, NSRV_BSIM_UNREG_TIMEOUT_MS + 1000, 0);
    batch_release(sim, batch);
}

/* ---- setup ------------------------------------------------------------------ */

static int raise_fd_limit(uint64_t need) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            return -errno;
    }
    return (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) ? 0 : -EMFILE;
}

/* A timer of the simulator's loop whose callbacks find `owner` in its data. */
static void init_timer(nsrv_bsim_t *sim, uv_timer_t *t, void *owner) {
    uv_timer_init(&sim->loop, t);
    t->data = owner;
}

static int setup_group(nsrv_bsim_t *sim, uint32_t gi) {
    const nsrv_bsim_opts_t *o = &sim->opts;
    nsrv_bsim_group_t *g = &sim->groups[gi];
    g->index = gi;
    nsrv__bsim_opts_group_name(o, gi, g->name, sizeof(g->name));
    if (nsrv__bsim_topics_build(&g->topics, o, g->name) < 0)
        return -EINVAL;
    g->dv.counter = 1;
    g->dv.timestamp = nsrv_now_wall_ms();
    nsrv_buf_init(&g->body);
    int rc = nsrv__bsim_topics_encode(&g->topics, &g->dv, o->compressed, NSRV_MQ_CURRENT, &g->body);
    if (rc < 0)
        return rc;
    /* Leave room for the header inside the 16 MiB frame. */
    if (g->body.len + 4096 > NSRV_FRAME_MAX_DEFAULT)
        return -EMSGSIZE;
    snprintf(g->body_crc, sizeof(g->body_crc), "%u",
             (unsigned)nsrv_body_crc32(g->body.data, g->body.len));
    g->n_members = o->n_slaves + 1;
    g->members = nsrv_calloc(g->n_members, sizeof(*g->members));
    /* Spread the groups' first registration evenly over --ramp. */
    uint64_t offset = o->ramp_ms * gi / sim->n_groups;
    for (uint32_t m = 0; m < g->n_members; m++) {
        nsrv_bsim_broker_t *b = &g->members[m];
        b->sim = sim;
        b->group = g;
        b->id = m;
        snprintf(b->id_text, sizeof(b->id_text), "%u", m);
        b->state = NSRV_BSIM_BROKER_ACTIVE;
        nsrv__bsim_opts_member_addr(o, gi, m, b->addr, sizeof(b->addr), b->ha_addr,
                                    sizeof(b->ha_addr));
        b->links = nsrv_calloc(o->n_nodes, sizeof(*b->links));
        for (size_t n = 0; n < o->n_nodes; n++)
            nsrv__bsim_link_init(sim, &b->links[n], b, (uint32_t)n);
        init_timer(sim, &b->reg_timer, b);
        uv_timer_start(&b->reg_timer, reg_timer_cb, offset, o->period_ms);
        init_timer(sim, &b->hb_timer, b);
        if (o->heartbeat_ms)
            uv_timer_start(&b->hb_timer, hb_timer_cb, offset + o->heartbeat_ms, o->heartbeat_ms);
    }
    return 0;
}

static void free_groups(nsrv_bsim_t *sim) {
    for (uint32_t g = 0; g < sim->n_groups; g++) {
        nsrv_bsim_group_t *grp = &sim->groups[g];
        for (uint32_t m = 0; m < grp->n_members; m++) {
            nsrv_bsim_broker_t *b = &grp->members[m];
            for (size_t n = 0; n < sim->opts.n_nodes; n++)
                nsrv__bsim_rx_deinit(&b->links[n].rx);
            nsrv_free(b->links);
        }
        nsrv_free(grp->members);
        nsrv__bsim_topics_deinit(&grp->topics);
        nsrv_buf_deinit(&grp->body);
    }
    nsrv_free(sim->groups);
}

static void init_signal(nsrv_bsim_t *sim, uv_signal_t *s, int signum) {
    uv_signal_init(&sim->loop, s);
    s->data = sim;
    uv_signal_start(s, signal_cb, signum);
}

static int run(nsrv_bsim_t *sim) {
    const nsrv_bsim_opts_t *o = &sim->opts;
    uint64_t n_links = (uint64_t)o->n_brokers * (o->n_slaves + 1) * o->n_nodes;
    int rc = raise_fd_limit(n_links + FD_RESERVE);
    if (rc < 0) {
        fprintf(stderr, "nsrv-brokersim: %llu connections need %llu file descriptors: %s\n",
                (unsigned long long)n_links, (unsigned long long)(n_links + FD_RESERVE),
                strerror(-rc));
        return 1;
    }
    for (size_t n = 0; n < o->n_nodes; n++) {
        rc = uv_ip4_addr(o->nodes[n].host, o->nodes[n].port, &sim->node_addr[n]);
        if (rc < 0) {
            fprintf(stderr, "nsrv-brokersim: bad nameserver address '%s'\n", o->nodes[n].host);
            return 1;
        }
    }
    uv_loop_init(&sim->loop);
    nsrv_arena_init(&sim->arena, ARENA_CHUNK);
    sim->start_ns = uv_hrtime();
    sim->n_groups = o->n_brokers;
    sim->n_members = (uint64_t)o->n_brokers * (o->n_slaves + 1);
    sim->stats.first_total = n_links;
    sim->groups = nsrv_calloc(sim->n_groups, sizeof(*sim->groups));
    rc = 0;
    for (uint32_t g = 0; g < sim->n_groups && rc == 0; g++) {
        rc = setup_group(sim, g);
        if (rc < 0) {
            fprintf(stderr, "nsrv-brokersim: cannot build the registration body of group %u: %s\n",
                    g, nsrv_strerror(rc));
            sim->n_groups = g + 1; /* free what was built */
        }
    }
    if ((uint64_t)o->n_topics + o->n_shared + (o->sys_topics ? 1 : 0) == 1)
        nsrv_log_warn("BSIM", "a one-topic table is refused before the first full registration "
                              "('register broker failed', proto/route.md §3 step 7)");
    init_timer(sim, &sim->sweep_timer, sim);
    init_timer(sim, &sim->duration_timer, sim);
    init_timer(sim, &sim->exit_timer, sim);
    init_signal(sim, &sim->sig_int, SIGINT);
    init_signal(sim, &sim->sig_term, SIGTERM);
    init_signal(sim, &sim->sig_usr1, SIGUSR1);
    if (rc == 0) {
        uv_timer_start(&sim->sweep_timer, sweep_cb, SWEEP_MS, SWEEP_MS);
        uv_timer_start(&sim->duration_timer, duration_cb, o->duration_ms, 0);
        stdin_open(sim);
        nsrv_log_notice("BSIM",
                        "%u broker group(s) x %u member(s), %zu topics each, %zu nameserver(s), "
                        "period %llu ms, heartbeat %llu ms, duration %llu s",
                        o->n_brokers, o->n_slaves + 1, sim->groups[0].topics.n, o->n_nodes,
                        (unsigned long long)o->period_ms, (unsigned long long)o->heartbeat_ms,
                        (unsigned long long)(o->duration_ms / 1000));
    } else {
        sim->exiting = true;
        uv_walk(&sim->loop, close_walk_cb, NULL);
    }
    uv_run(&sim->loop, UV_RUN_DEFAULT);
    int closed = uv_loop_close(&sim->loop);
    free_groups(sim);
    nsrv_arena_deinit(&sim->arena);
    if (closed != 0) {
        nsrv_log_error("BSIM", "loop still had handles at exit: %s", uv_strerror(closed));
        return 1;
    }
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    static nsrv_bsim_t sim; /* large (read buffer, histogram): not on the stack */
    char err[256];
    if (nsrv__bsim_opts_parse(&sim.opts, argc, argv, err, sizeof(err)) < 0) {
        fprintf(stderr, "nsrv-brokersim: %s (try --help)\n", err);
        return 2;
    }
    if (sim.opts.help) {
        nsrv__bsim_opts_usage(stdout);
        return 0;
    }
    nsrv_log_level = sim.opts.log_level;
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    return run(&sim);
}
