/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-tls-bench: nsrv-bench's measurements over TLS 1.3 (an OpenSSL client, one thread,
 * non-blocking sockets under epoll), for the benchmark's TLS profiles
 * (cluster-tests/bench/README.md "TLS"). Three modes, each printing one JSON line:
 *
 *   load (default)        C connections each keep D GET_ROUTEINFO_BY_TOPIC requests in
 *                         flight, topics cycled as nsrv-bench does: qps, latency percentiles,
 *                         mean reply bytes.
 *   --handshakes full|resumed
 *                         C slots each loop: connect, TLS handshake, one route query answered,
 *                         close_notify, close. "resumed" offers the session ticket the slot's
 *                         previous connection received (the first one is a full handshake):
 *                         handshakes per second, how many the server resumed, the latency of
 *                         connect to first answer.
 *   --hold N              opens N connections (handshake and one answered query each, 64 at
 *                         a time), prints {"held":N,...} and keeps them until -s runs out or
 *                         SIGTERM, idle but for one query each every 30 s (as a client polls
 *                         its routes): the driver reads the server's memory meanwhile.
 *
 * Certificates are not verified (Java's test mode). Loopback or test-network targets only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bsim_int.h"
#include "route_requests.h"
#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/netaddr.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"

#define MAX_CONNS 19000
#define MAX_DEPTH 256
#define DUE_SLOTS 1024 /* opaque modulo this: far more than the requests in flight */
#define HOLD_OPENING 64
#define HOLD_POLL_NS (30 * 1000000000ull)

typedef enum { MODE_LOAD, MODE_HS_FULL, MODE_HS_RESUMED, MODE_HOLD } mode_t_;
typedef enum { ST_IDLE, ST_CONNECTING, ST_HANDSHAKE, ST_ACTIVE } state_t;

typedef struct {
    int fd;
    SSL *ssl;
    state_t state;
    nsrv_buf_t in;
    uint32_t next_opaque, in_flight;
    uint64_t started_ns;
    uint64_t *due_ns; /* load mode only */
    SSL_SESSION *ticket;
    bool up; /* hold mode: its first query answered */
} tconn_t;

typedef struct {
    const char *addr;
    mode_t_ mode;
    int conns, depth, seconds, warmup, hold;
    int sim_brokers, sim_topics, shared;
} opts_t;

typedef struct {
    opts_t o;
    struct sockaddr_in sa;
    SSL_CTX *ctx;
    int ep;
    nsrv_buf_t *reqs;
    uint64_t n_reqs, next_req;
    tconn_t *cs;
    nsrv_arena_t arena;
    nsrv_bsim_hist_t hist;
    uint64_t count_from_ns, end_ns;
    uint64_t done, errors, reply_bytes, handshakes, resumed, open, opening;
} tbench_t;

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static bool arg_int(const char *v, int *out) {
    int64_t x;
    if (!nsrv_parse_int(v, strlen(v), 0, INT32_MAX, &x))
        return false;
    *out = (int)x;
    return true;
}

static void usage(void) {
    fprintf(stderr, "usage: nsrv-tls-bench -a HOST:PORT [-c CONNS] [-d DEPTH] [-s SECONDS] "
                    "[-w WARMUP_SECONDS]\n"
                    "                      [--handshakes full|resumed | --hold N]\n"
                    "                      (--brokers N --topics M | --shared S)\n");
}

static bool parse_opts(int argc, char **argv, opts_t *o) {
    *o = (opts_t){.conns = 8, .depth = 1, .seconds = 10, .sim_brokers = 1, .sim_topics = 1};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        bool ok = true;
        if (!strcmp(a, "-a"))
            o->addr = v;
        else if (!strcmp(a, "-c"))
            ok = arg_int(v, &o->conns);
        else if (!strcmp(a, "-d"))
            ok = arg_int(v, &o->depth);
        else if (!strcmp(a, "-s"))
            ok = arg_int(v, &o->seconds);
        else if (!strcmp(a, "-w"))
            ok = arg_int(v, &o->warmup);
        else if (!strcmp(a, "--brokers"))
            ok = arg_int(v, &o->sim_brokers);
        else if (!strcmp(a, "--topics"))
            ok = arg_int(v, &o->sim_topics);
        else if (!strcmp(a, "--shared"))
            ok = arg_int(v, &o->shared);
        else if (!strcmp(a, "--hold"))
            ok = arg_int(v, &o->hold) && (o->mode = MODE_HOLD);
        else if (!strcmp(a, "--handshakes") && !strcmp(v, "full"))
            o->mode = MODE_HS_FULL;
        else if (!strcmp(a, "--handshakes") && !strcmp(v, "resumed"))
            o->mode = MODE_HS_RESUMED;
        else
            ok = false;
        if (!ok)
            return false;
    }
    if (o->mode == MODE_HOLD)
        o->conns = o->hold;
    return o->addr && o->conns >= 1 && o->conns <= MAX_CONNS && o->depth >= 1 &&
           o->depth <= MAX_DEPTH && o->seconds >= 1 && o->seconds <= 3600 &&
           o->warmup < o->seconds && o->sim_brokers >= 1 && o->sim_topics >= 1 &&
           o->sim_brokers <= 100000 && o->sim_topics <= 100000 && o->shared <= 1000000;
}

/* One pre-encoded request per topic name (nsrv-bench's names); only the opaque changes. */
static void encode_requests(tbench_t *b) {
    const opts_t *o = &b->o;
    b->n_reqs =
        o->shared ? (uint64_t)o->shared : (uint64_t)o->sim_brokers * (uint64_t)o->sim_topics;
    b->reqs = nsrv__bench_route_requests(b->n_reqs, (uint64_t)o->shared, (uint64_t)o->sim_topics);
}

static void watch(tbench_t *b, tconn_t *c, uint32_t events, int op) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(b->ep, op, c->fd, &ev);
}

static int send_request(tbench_t *b, tconn_t *c, uint64_t t) {
    nsrv_buf_t *r = &b->reqs[b->next_req++ % b->n_reqs];
    uint32_t op = c->next_opaque++;
    nsrv_buf_put_be32_at(r, NSRV__ROCKETMQ_OPAQUE_OFFSET, op);
    if (c->due_ns)
        c->due_ns[op % DUE_SLOTS] = t;
    c->in_flight++;
    /* A request is far smaller than the socket buffer, and few are in flight. */
    return SSL_write(c->ssl, r->data, (int)r->len) == (int)r->len ? 0 : -1;
}

/* Starts a connection in slot c: a non-blocking connect, then the handshake. */
static int conn_open(tbench_t *b, tconn_t *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->started_ns = nsrv_now_mono_ns();
    c->in_flight = 0;
    nsrv_buf_reset(&c->in);
    if (connect(c->fd, (struct sockaddr *)&b->sa, sizeof b->sa) != 0 && errno != EINPROGRESS) {
        fprintf(stderr, "nsrv-tls-bench: connect %s: %s\n", b->o.addr, strerror(errno));
        close(c->fd);
        return -1;
    }
    c->ssl = SSL_new(b->ctx);
    SSL_set_fd(c->ssl, c->fd);
    SSL_set_connect_state(c->ssl);
    if (c->ticket)
        SSL_set_session(c->ssl, c->ticket);
    c->state = ST_CONNECTING;
    b->opening++;
    watch(b, c, EPOLLOUT, EPOLL_CTL_ADD);
    return 0;
}

static void conn_close(tbench_t *b, tconn_t *c, bool graceful) {
    if (graceful)
        SSL_shutdown(c->ssl); /* close_notify; the server's is not waited for */
    SSL_free(c->ssl);
    c->ssl = NULL;
    close(c->fd); /* leaves the epoll set */
    c->fd = -1;
    c->state = ST_IDLE;
    ERR_clear_error();
    (void)b;
}

/* Drives the handshake; on completion the slot's first request goes out. -1: failed. */
static int on_handshake(tbench_t *b, tconn_t *c) {
    ERR_clear_error();
    int rc = SSL_do_handshake(c->ssl);
    if (rc != 1) {
        int e = SSL_get_error(c->ssl, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            watch(b, c, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT, EPOLL_CTL_MOD);
            return 0;
        }
        char why[160] = "closed";
        unsigned long err = ERR_peek_last_error();
        if (err)
            ERR_error_string_n(err, why, sizeof why);
        fprintf(stderr, "nsrv-tls-bench: handshake: %s\n", why);
        return -1;
    }
    c->state = ST_ACTIVE;
    b->opening--;
    watch(b, c, EPOLLIN, EPOLL_CTL_MOD);
    uint64_t t = nsrv_now_mono_ns();
    if (t >= b->count_from_ns) {
        b->handshakes++;
        b->resumed += SSL_session_reused(c->ssl) == 1;
    }
    int depth = b->o.mode == MODE_LOAD ? b->o.depth : 1;
    for (int d = 0; d < depth; d++)
        if (send_request(b, c, t) != 0)
            return -1;
    return 0;
}

/* A reply: counted; then the slot's next step by mode. 1: the connection was closed here. */
static int on_reply(tbench_t *b, tconn_t *c, const nsrv_cmd_t *resp, bool bad, size_t flen) {
    uint64_t t = nsrv_now_mono_ns();
    c->in_flight--;
    bool counted = t >= b->count_from_ns;
    if (counted) {
        if (bad || (resp->code != NSRV_RESP_SUCCESS && resp->code != NSRV_RESP_TOPIC_NOT_EXIST))
            b->errors++;
        uint64_t since =
            b->o.mode == MODE_LOAD ? c->due_ns[(uint32_t)resp->opaque % DUE_SLOTS] : c->started_ns;
        nsrv__bsim_hist_add(&b->hist, t > since ? (t - since) / 1000u : 0);
        b->done++;
        b->reply_bytes += flen;
    }
    if (b->o.mode == MODE_LOAD)
        return t < b->end_ns && send_request(b, c, t) != 0 ? -1 : 0;
    if (b->o.mode == MODE_HOLD) {
        b->open += !c->up;
        c->up = true;
        c->started_ns = t;
        return 0;
    }
    if (b->o.mode == MODE_HS_RESUMED) {
        if (c->ticket)
            SSL_SESSION_free(c->ticket);
        c->ticket = SSL_get1_session(c->ssl); /* the ticket this connection received */
    }
    conn_close(b, c, true);
    if (t < b->end_ns && !stop_requested && conn_open(b, c) != 0)
        return -1;
    return 1;
}

static int on_readable(tbench_t *b, tconn_t *c) {
    for (;;) {
        nsrv_buf_reserve(&c->in, 32 * 1024);
        ERR_clear_error();
        int n = SSL_read(c->ssl, c->in.data + c->in.len, (int)(c->in.cap - c->in.len - 1));
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_READ)
                break;
            fprintf(stderr, "nsrv-tls-bench: connection closed by the server\n");
            return -1;
        }
        c->in.len += (size_t)n;
    }
    size_t off = 0, flen;
    while (nsrv_frame_peek((const uint8_t *)c->in.data + off, c->in.len - off,
                           NSRV_FRAME_MAX_DEFAULT, &flen) == 0) {
        nsrv_arena_reset(&b->arena);
        nsrv_cmd_t resp = {0};
        bool bad = nsrv_cmd_decode((const uint8_t *)c->in.data + off, flen, &b->arena, &resp) != 0;
        off += flen;
        int rc = on_reply(b, c, &resp, bad, flen);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    memmove(c->in.data, c->in.data + off, c->in.len - off);
    c->in.len -= off;
    return 0;
}

static int on_event(tbench_t *b, tconn_t *c, uint32_t events) {
    if (c->state == ST_CONNECTING) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
        if (soerr) {
            fprintf(stderr, "nsrv-tls-bench: connect %s: %s\n", b->o.addr, strerror(soerr));
            return -1;
        }
        c->state = ST_HANDSHAKE;
    }
    if (c->state == ST_HANDSHAKE)
        return on_handshake(b, c);
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        return on_readable(b, c);
    return 0;
}

/* Hold mode: a held connection asks for a route every HOLD_POLL_NS, as a client polls its
 * routes (pollNameServerInterval), so no server's idle timeout closes it (Java's: 120 s). */
static int hold_poll(tbench_t *b, uint64_t now) {
    for (int i = 0; i < b->o.conns; i++) {
        tconn_t *c = &b->cs[i];
        if (!c->up || c->in_flight > 0 || now - c->started_ns <= HOLD_POLL_NS)
            continue;
        c->started_ns = now;
        if (send_request(b, c, now) != 0)
            return -1;
    }
    return 0;
}

/* Hold mode opens HOLD_OPENING at a time, so no listen backlog overflows. */
static int open_more(tbench_t *b, int *next) {
    while (*next < b->o.conns && (b->o.mode != MODE_HOLD || b->opening < HOLD_OPENING)) {
        if (conn_open(b, &b->cs[(*next)++]) != 0)
            return -1;
    }
    return 0;
}

static int run(tbench_t *b) {
    b->ep = epoll_create1(0);
    b->cs = nsrv_calloc((size_t)b->o.conns, sizeof *b->cs);
    for (int i = 0; i < b->o.conns; i++) {
        b->cs[i].fd = -1;
        nsrv_buf_init(&b->cs[i].in);
        if (b->o.mode == MODE_LOAD)
            b->cs[i].due_ns = nsrv_calloc(DUE_SLOTS, sizeof(uint64_t));
    }
    uint64_t start = nsrv_now_mono_ns();
    b->count_from_ns = start + (uint64_t)b->o.warmup * 1000000000u;
    b->end_ns = start + (uint64_t)b->o.seconds * 1000000000u;
    int next = 0;
    bool announced = false;
    uint64_t last_poll = start;
    if (open_more(b, &next) != 0)
        return -1;
    struct epoll_event evs[256];
    for (uint64_t now = start; now < b->end_ns && !stop_requested; now = nsrv_now_mono_ns()) {
        int n = epoll_wait(b->ep, evs, 256, 100);
        for (int i = 0; i < n; i++)
            if (on_event(b, evs[i].data.ptr, evs[i].events) != 0)
                return -1;
        if (b->o.mode == MODE_HOLD) {
            if (open_more(b, &next) != 0 ||
                (now >= last_poll + 1000000000u && (last_poll = now, hold_poll(b, now) != 0)))
                return -1;
            if (!announced && b->open == (uint64_t)b->o.conns) {
                printf("{\"held\":%d,\"connect_s\":%.3f}\n", b->o.conns,
                       (double)(nsrv_now_mono_ns() - start) / 1e9);
                fflush(stdout);
                announced = true;
            }
        }
    }
    uint64_t now = nsrv_now_mono_ns();
    if (stop_requested && now < b->end_ns)
        b->end_ns = now > b->count_from_ns + 1000000u ? now : b->count_from_ns + 1000000u;
    if (b->o.mode == MODE_HOLD && !announced) {
        fprintf(stderr, "nsrv-tls-bench: %" PRIu64 " of %d connections up\n", b->open, b->o.conns);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    tbench_t b = {0};
    if (!parse_opts(argc, argv, &b.o)) {
        usage();
        return 2;
    }
    char host[64];
    uint16_t port;
    b.sa.sin_family = AF_INET;
    if (nsrv_hostport_split(b.o.addr, host, sizeof host, &port) != 0 ||
        inet_pton(AF_INET, host, &b.sa.sin_addr) != 1) {
        fprintf(stderr, "nsrv-tls-bench: IPv4 HOST:PORT expected: %s\n", b.o.addr);
        return 2;
    }
    b.sa.sin_port = htons(port);
    b.ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(b.ctx, TLS1_3_VERSION);
    SSL_CTX_set_verify(b.ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_read_ahead(b.ctx, 1);
    SSL_CTX_set_session_cache_mode(b.ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    encode_requests(&b);
    nsrv_arena_init(&b.arena, 16 * 1024);
    if (run(&b) != 0)
        return 1;
    double secs = (double)(b.end_ns - b.count_from_ns) / 1e9;
    static const char *const mode_names[] = {"load", "handshakes-full", "handshakes-resumed",
                                             "hold"};
    printf("{\"target\":\"%s\",\"mode\":\"%s\",\"connections\":%d,\"depth\":%d,\"seconds\":%.2f,"
           "\"requests\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"qps\":%.0f,\"handshakes\":%" PRIu64
           ",\"resumed\":%" PRIu64 ",\"hs_per_s\":%.0f,\"reply_bytes\":%" PRIu64
           ",\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 ",\"p999_us\":%" PRIu64
           ",\"max_us\":%" PRIu64 "}\n",
           b.o.addr, mode_names[b.o.mode], b.o.conns, b.o.depth, secs, b.done, b.errors,
           (double)b.done / secs, b.handshakes, b.resumed, (double)b.handshakes / secs,
           b.done ? b.reply_bytes / b.done : 0, nsrv__bsim_hist_percentile(&b.hist, 0.50),
           nsrv__bsim_hist_percentile(&b.hist, 0.99), nsrv__bsim_hist_percentile(&b.hist, 0.999),
           b.hist.max);
    for (int i = 0; i < b.o.conns; i++) {
        tconn_t *c = &b.cs[i];
        if (c->ssl)
            conn_close(&b, c, false);
        SSL_SESSION_free(c->ticket);
        nsrv_buf_deinit(&c->in);
        nsrv_free(c->due_ns);
    }
    for (uint64_t i = 0; i < b.n_reqs; i++)
        nsrv_buf_deinit(&b.reqs[i]);
    nsrv_free(b.reqs);
    nsrv_free(b.cs);
    nsrv_arena_deinit(&b.arena);
    SSL_CTX_free(b.ctx);
    return b.errors ? 1 : 0;
}
