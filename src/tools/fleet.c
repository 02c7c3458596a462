/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-fleet: a fleet of RocketMQ clients against one NameServer, the way
 * producers and consumers use it: many connections, each polling a few topics'
 * routes now and then (pollNameServerInterval), or all reconnecting at once.
 * nsrv-bench measures a server at full load on a few connections; this
 * measures what many mostly idle connections cost and how a storm of them is
 * served. Loopback or test-network targets only; bounded by -s.
 *
 * --mode poll: N connections are opened as fast as the server accepts them
 *   (at most --burst connects in progress); then, for -s seconds, each asks
 *   the routes of --per-client topics one after another (the next when the
 *   previous is answered, as the Java client's route update does) every
 *   --period-ms, the clients' rounds spread evenly over the period. A round's
 *   first request is timed from when it was due, so a stalled server is
 *   charged for the delay.
 * --mode storm: N connections are started within --storm-ms, each sending its
 *   first route query as soon as it is connected; a client's time runs from
 *   its connect() to its first answer.
 *
 * Source addresses are spread over 127.0.0.0/8 (client i binds 127.1.0.1 + i,
 * the port left to the kernel at connect), so no one address's port range
 * runs out. Prints JSON lines on stdout: {"event":"connected",...} when every
 * connection is open or failed (poll), then the result.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

#define MAX_CLIENTS 1000000
#define FIRST_SOURCE 0x7f010001u /* 127.1.0.1 */
#define READ_CHUNK (64 * 1024)
/* Descriptors the process needs besides its clients: stdio, epoll. */
#define FD_RESERVE 16
#define MS 1000000u

enum { CL_IDLE, CL_CONNECTING, CL_OPEN, CL_DEAD };

typedef struct {
    int fd;
    uint8_t state;
    uint8_t left;     /* poll: queries of the current round not yet answered */
    bool answered;    /* storm: its first answer arrived */
    uint32_t topic;   /* the first of its topics */
    uint64_t sent_ns; /* the request in flight: when it was due */
    uint64_t start_ns;
    nsrv_buf_t in; /* a partial reply, kept between reads (rare) */
} client_t;

typedef struct {
    const char *addr;
    bool storm, spread;
    int clients, seconds, period_ms, per_client, burst, storm_ms;
    int sim_brokers, sim_topics, shared;
} fleet_opts_t;

typedef struct {
    fleet_opts_t o;
    struct sockaddr_in server;
    int ep;
    client_t *cs;
    nsrv_buf_t *reqs;
    uint32_t n_reqs, next_opaque;
    nsrv_arena_t arena;
    nsrv_bsim_hist_t hist;
    uint64_t started, connect_failed, dropped, errors, late, answered, requests;
    int n_open, n_pending;
    uint64_t counting_from_ns, first_answer_last_ns;
    uint8_t rx[READ_CHUNK];
} fleet_t;

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(void) {
    fprintf(stderr,
            "usage: nsrv-fleet -a HOST:PORT -n CLIENTS [--mode poll|storm] [-s SECONDS]\n"
            "                  [--period-ms MS] [--per-client K] [--burst B] [--storm-ms MS]\n"
            "                  [--no-spread] (--brokers N --topics M | --shared S)\n");
}

static bool parse_opts(int argc, char **argv, fleet_opts_t *o) {
    *o = (fleet_opts_t){.spread = true,
                        .seconds = 180,
                        .period_ms = 30000,
                        .per_client = 3,
                        .burst = 512,
                        .storm_ms = 1000};
    const struct {
        const char *name;
        int *field;
        int64_t min, max;
    } ints[] = {{"-n", &o->clients, 1, MAX_CLIENTS},        {"-s", &o->seconds, 1, 3600},
                {"--period-ms", &o->period_ms, 1, 3600000}, {"--per-client", &o->per_client, 1, 64},
                {"--burst", &o->burst, 1, MAX_CLIENTS},     {"--storm-ms", &o->storm_ms, 0, 60000},
                {"--brokers", &o->sim_brokers, 1, 100000},  {"--topics", &o->sim_topics, 1, 100000},
                {"--shared", &o->shared, 1, 1000000}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-spread")) {
            o->spread = false;
            continue;
        }
        if (!v)
            return false;
        i++;
        bool ok = false;
        for (size_t k = 0; k < NSRV_ARRAY_LEN(ints) && !ok; k++) {
            int64_t x;
            if (!strcmp(a, ints[k].name)) {
                if (!nsrv_parse_int(v, strlen(v), ints[k].min, ints[k].max, &x))
                    return false;
                *ints[k].field = (int)x;
                ok = true;
            }
        }
        if (ok)
            continue;
        if (!strcmp(a, "-a"))
            o->addr = v;
        else if (!strcmp(a, "--mode") && (!strcmp(v, "poll") || !strcmp(v, "storm")))
            o->storm = !strcmp(v, "storm");
        else
            return false;
    }
    return o->addr && o->clients > 0 &&
           (o->shared > 0 || (o->sim_brokers > 0 && o->sim_topics > 0));
}

static void encode_requests(fleet_t *f) {
    const fleet_opts_t *o = &f->o;
    f->n_reqs =
        o->shared ? (uint32_t)o->shared : (uint32_t)o->sim_brokers * (uint32_t)o->sim_topics;
    f->reqs = nsrv__bench_route_requests(f->n_reqs, (uint64_t)o->shared, (uint64_t)o->sim_topics);
}

static int send_query(fleet_t *f, client_t *c, uint32_t topic, uint64_t due) {
    nsrv_buf_t *r = &f->reqs[topic % f->n_reqs];
    nsrv_buf_put_be32_at(r, NSRV__ROCKETMQ_OPAQUE_OFFSET, f->next_opaque++);
    c->sent_ns = due;
    f->requests++;
    /* A query is tiny next to the socket buffer, and one is in flight. */
    return write(c->fd, r->data, r->len) == (ssize_t)r->len ? 0 : -1;
}

static void client_fail(fleet_t *f, client_t *c, bool was_open) {
    if (was_open) {
        f->n_open--;
        f->dropped++;
    } else {
        f->connect_failed++;
    }
    if (f->o.storm && !c->answered)
        f->errors++;
    epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->state = CL_DEAD;
}

static int start_connect(fleet_t *f, client_t *c, uint32_t i) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        fprintf(stderr, "nsrv-fleet: socket: %s\n", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (f->o.spread) {
        /* The port is chosen at connect, per (source, destination): no range runs out. */
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in src = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(FIRST_SOURCE + i)};
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src) != 0) {
            fprintf(stderr, "nsrv-fleet: bind source address: %s\n", strerror(errno));
            return -1;
        }
    }
    c->start_ns = nsrv_now_mono_ns();
    c->state = CL_CONNECTING;
    f->started++;
    f->n_pending++;
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
    epoll_ctl(f->ep, EPOLL_CTL_ADD, c->fd, &ev);
    if (connect(c->fd, (struct sockaddr *)&f->server, sizeof f->server) != 0 &&
        errno != EINPROGRESS) {
        f->n_pending--;
        client_fail(f, c, false);
    }
    return 0;
}

static void on_connected(fleet_t *f, client_t *c) {
    int err = 0;
    socklen_t len = sizeof err;
    f->n_pending--;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
        client_fail(f, c, false);
        return;
    }
    c->state = CL_OPEN;
    f->n_open++;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(f->ep, EPOLL_CTL_MOD, c->fd, &ev);
    if (f->o.storm && send_query(f, c, c->topic, c->start_ns) != 0)
        client_fail(f, c, true);
}

/* One whole reply: timed, and in a poll round the next topic asked. */
static int on_reply(fleet_t *f, client_t *c, const uint8_t *frame, size_t len, uint64_t t) {
    nsrv_arena_reset(&f->arena);
    nsrv_cmd_t resp = {0};
    bool bad = nsrv_cmd_decode(frame, len, &f->arena, &resp) != 0 || resp.code != NSRV_RESP_SUCCESS;
    if (f->o.storm) {
        if (c->answered)
            return 0;
        c->answered = true;
        if (bad) {
            f->errors++;
            return 0;
        }
        f->answered++;
        f->first_answer_last_ns = t;
        nsrv__bsim_hist_add(&f->hist, (t - c->start_ns) / 1000u);
        return 0;
    }
    if (c->left == 0)
        return 0; /* nothing asked: not ours to count */
    if (t >= f->counting_from_ns) {
        f->errors += bad;
        f->answered++;
        nsrv__bsim_hist_add(&f->hist, t > c->sent_ns ? (t - c->sent_ns) / 1000u : 0);
    }
    if (--c->left > 0)
        return send_query(f, c, c->topic + (uint32_t)(f->o.per_client - c->left), t);
    return 0;
}

static void on_readable(fleet_t *f, client_t *c) {
    ssize_t n = read(c->fd, f->rx, sizeof f->rx);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        client_fail(f, c, true);
        return;
    }
    const uint8_t *p = f->rx;
    size_t avail = (size_t)n;
    if (c->in.len) {
        nsrv_buf_append(&c->in, f->rx, (size_t)n);
        p = (const uint8_t *)c->in.data;
        avail = c->in.len;
    }
    uint64_t t = nsrv_now_mono_ns();
    size_t off = 0, flen;
    int rc;
    while ((rc = nsrv_frame_peek(p + off, avail - off, NSRV_FRAME_MAX_DEFAULT, &flen)) == 0) {
        if (on_reply(f, c, p + off, flen, t) != 0) {
            client_fail(f, c, true);
            return;
        }
        off += flen;
    }
    if (rc != NSRV_AGAIN) {
        f->errors++;
        client_fail(f, c, true);
        return;
    }
    if (c->in.len) {
        memmove(c->in.data, c->in.data + off, c->in.len - off);
        c->in.len -= off;
    } else if (off < avail) {
        nsrv_buf_append(&c->in, p + off, avail - off);
    }
}

/* Waits at most timeout_ns, and at most 100 ms so a stop is seen. A millisecond
 * timeout would make the fleet spin through the last millisecond before each
 * due round (18,000 clients every 30 s are a round every 1.7 ms): the spinning
 * took over a quarter of the load CPU from the P1 generator beside it and
 * delayed the fleet's own sends. */
static int handle_events(fleet_t *f, uint64_t timeout_ns) {
    struct epoll_event evs[512];
    if (timeout_ns > 100 * MS)
        timeout_ns = 100 * MS;
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                          .tv_nsec = (long)(timeout_ns % 1000000000u)};
    int n = epoll_pwait2(f->ep, evs, 512, &ts, NULL);
    for (int i = 0; i < n; i++) {
        client_t *c = evs[i].data.ptr;
        if (c->state == CL_CONNECTING)
            on_connected(f, c);
        else if (c->state == CL_OPEN)
            on_readable(f, c);
    }
    return n < 0 && errno != EINTR ? -1 : 0;
}

/* Poll: connect everyone (at most --burst in progress), then the rounds. */
static int run_poll(fleet_t *f, uint64_t t0) {
    uint32_t next = 0, n = (uint32_t)f->o.clients;
    while ((next < n || f->n_pending > 0) && !stop_requested) {
        while (next < n && f->n_pending < f->o.burst)
            if (start_connect(f, &f->cs[next], next) != 0)
                return -1;
            else
                next++;
        if (handle_events(f, 100 * MS) != 0)
            return -1;
        if (nsrv_now_mono_ns() - t0 > (uint64_t)f->o.seconds * 1000000000u)
            break; /* a server that never accepts does not hold the run forever */
    }
    uint64_t start = nsrv_now_mono_ns();
    printf("{\"event\":\"connected\",\"clients\":%d,\"open\":%d,\"connect_failed\":%" PRIu64
           ",\"connect_ms\":%.1f}\n",
           f->o.clients, f->n_open, f->connect_failed, (double)(start - t0) / 1e6);
    fflush(stdout);
    f->counting_from_ns = start;
    uint64_t end = start + (uint64_t)f->o.seconds * 1000000000u, k = 0;
    uint64_t period_ns = (uint64_t)f->o.period_ms * 1000000u;
    while (!stop_requested) {
        uint64_t now = nsrv_now_mono_ns();
        if (now >= end)
            break;
        uint64_t due;
        while ((due = start + k * period_ns / n) <= now) {
            client_t *c = &f->cs[k++ % n];
            if (c->state != CL_OPEN)
                continue;
            if (c->left > 0) {
                f->late++; /* its last round is still unanswered: skipped, and counted */
                continue;
            }
            c->left = (uint8_t)f->o.per_client;
            if (send_query(f, c, c->topic, due) != 0)
                client_fail(f, c, true);
        }
        if (handle_events(f, due - now) != 0)
            return -1;
    }
    return 0;
}

/* Storm: connect i starts at i/N of --storm-ms; ends when every client has its answer. */
static int run_storm(fleet_t *f, uint64_t t0) {
    uint32_t next = 0, n = (uint32_t)f->o.clients;
    uint64_t end = t0 + (uint64_t)f->o.seconds * 1000000000u;
    uint64_t span_ns = (uint64_t)f->o.storm_ms * 1000000u;
    while (!stop_requested && f->answered + f->errors < n) {
        uint64_t now = nsrv_now_mono_ns();
        if (now >= end)
            break;
        while (next < n && t0 + next * span_ns / n <= now)
            if (start_connect(f, &f->cs[next], next) != 0)
                return -1;
            else
                next++;
        if (handle_events(f, next < n ? t0 + next * span_ns / n - now : 100 * MS) != 0)
            return -1;
    }
    return 0;
}

static bool enough_descriptors(int clients) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return false;
    rlim_t need = (rlim_t)clients + FD_RESERVE;
    if (rl.rlim_cur < need && rl.rlim_max >= need) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        fprintf(stderr, "nsrv-fleet: %d clients need %lu descriptors; RLIMIT_NOFILE allows %lu\n",
                clients, (unsigned long)need, (unsigned long)rl.rlim_cur);
        return false;
    }
    return true;
}

static int resolve(fleet_t *f) {
    char host[64];
    uint16_t port;
    f->server.sin_family = AF_INET;
    if (nsrv_hostport_split(f->o.addr, host, sizeof host, &port) != 0 ||
        inet_pton(AF_INET, host, &f->server.sin_addr) != 1) {
        fprintf(stderr, "nsrv-fleet: IPv4 HOST:PORT expected: %s\n", f->o.addr);
        return -1;
    }
    f->server.sin_port = htons(port);
    return 0;
}

static void print_result(fleet_t *f, uint64_t t0) {
    nsrv_bsim_hist_t *h = &f->hist;
    /* A client still waiting when the run ends counts in the percentiles with the time it
     * waited so far: a server that answers few clients is not judged by those few. */
    uint64_t unanswered = 0, end = nsrv_now_mono_ns();
    for (int i = 0; f->o.storm && i < f->o.clients; i++) {
        const client_t *c = &f->cs[i];
        if ((c->state == CL_OPEN || c->state == CL_CONNECTING) && !c->answered) {
            unanswered++;
            nsrv__bsim_hist_add(h, (end - c->start_ns) / 1000u);
        }
    }
    double all_ms = f->o.storm && f->answered == (uint64_t)f->o.clients
                        ? (double)(f->first_answer_last_ns - t0) / 1e6
                        : -1;
    printf("{\"mode\":\"%s\",\"clients\":%d,\"open\":%d,\"connect_failed\":%" PRIu64
           ",\"dropped\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"late\":%" PRIu64
           ",\"unanswered\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"answered\":%" PRIu64
           ",\"all_answered_ms\":%.1f,\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64
           ",\"p999_us\":%" PRIu64 ",\"max_us\":%" PRIu64 "}\n",
           f->o.storm ? "storm" : "poll", f->o.clients, f->n_open, f->connect_failed, f->dropped,
           f->errors + unanswered, f->late, unanswered, f->requests, f->answered, all_ms,
           nsrv__bsim_hist_percentile(h, 0.50), nsrv__bsim_hist_percentile(h, 0.99),
           nsrv__bsim_hist_percentile(h, 0.999), h->max);
}

int main(int argc, char **argv) {
    static fleet_t f;
    if (!parse_opts(argc, argv, &f.o)) {
        usage();
        return 2;
    }
    if (!enough_descriptors(f.o.clients) || resolve(&f) != 0)
        return 2;
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Rounds are timed from when they were due: wake on time, not up to 50 µs late. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    encode_requests(&f);
    nsrv_arena_init(&f.arena, 16 * 1024);
    f.cs = nsrv_calloc((size_t)f.o.clients, sizeof *f.cs);
    for (int i = 0; i < f.o.clients; i++) {
        f.cs[i].fd = -1;
        f.cs[i].topic = (uint32_t)i * (uint32_t)f.o.per_client;
    }
    f.ep = epoll_create1(EPOLL_CLOEXEC);
    uint64_t t0 = nsrv_now_mono_ns();
    int rc = f.o.storm ? run_storm(&f, t0) : run_poll(&f, t0);
    if (rc != 0) {
        fprintf(stderr, "nsrv-fleet: %s\n", strerror(errno));
        return 1;
    }
    print_result(&f, t0);
    bool failed = f.connect_failed || f.dropped || f.errors ||
                  (f.o.storm && f.answered != (uint64_t)f.o.clients);
    for (int i = 0; i < f.o.clients; i++) {
        if (f.cs[i].fd >= 0)
            close(f.cs[i].fd);
        nsrv_buf_deinit(&f.cs[i].in);
    }
    for (uint32_t i = 0; i < f.n_reqs; i++)
        nsrv_buf_deinit(&f.reqs[i]);
    nsrv_free(f.reqs);
    nsrv_free(f.cs);
    nsrv_arena_deinit(&f.arena);
    close(f.ep);
    return failed ? 1 : 0;
}
