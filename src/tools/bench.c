/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-bench: measures GET_ROUTEINFO_BY_TOPIC throughput and latency against
 * any NameServer (nsrvd, the Java one, rocketmq-rust's, the ceiling server),
 * so all are measured the same way on the same machine.
 *
 * Closed loop (default): C connections each keep D requests in flight.
 * Open loop (-r RATE): requests are due at fixed times, RATE per second over
 * all connections, whatever the server does; a request's latency runs from
 * the time it was due, not from when it could be sent, so a server that
 * stalls is charged for every request it delayed (no coordinated omission).
 * Topics cycle over topic-<broker>-<i> (--brokers/--topics), shared-topic-<j>
 * (--shared) or the -t names. The first -w seconds warm up and are not counted.
 * Prints one JSON line: requests, errors, qps, mean reply bytes, latency
 * percentiles in µs. Loopback or test-network targets only; bounded by -s.
 * SIGTERM or SIGINT ends the run early, and the figures are printed as usual
 * (a driver such as cluster-tests/lib/kv_stall.py stops it when its work is
 * done). -o FILE records every counted reply as a line "DUE_NS LATENCY_NS"
 * (CLOCK_MONOTONIC, the clock of Python's time.monotonic_ns), so a driver can
 * pool the requests that fell due while something else was happening.
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

#define MAX_CONNS 4096
#define MAX_DEPTH 256
/* Due times by opaque modulo this. An open-loop connection has at most
 * OPEN_MAX_IN_FLIGHT requests out, so even a server answering out of order
 * (the Java one has thread pools) cannot make two collide. */
#define SLOTS 4096
#define OPEN_MAX_IN_FLIGHT (SLOTS / 2)
/* JSON headers (--header json) carry the opaque in decimal: every connection counts from
 * here, so it is always 10 digits and is rewritten in place like the binary one. */
#define JSON_OPAQUE_FIRST 1000000000u
#define MAX_NAMES 64

typedef struct {
    int fd;
    nsrv_buf_t in;
    uint32_t next_opaque;
    uint32_t in_flight;
    uint64_t due_ns[SLOTS];
} bench_conn_t;

typedef struct {
    const char *addr;
    int conns, depth, seconds, warmup, version;
    bool json;    /* --header json: fastjson's form, as the Java client sends by default */
    int64_t rate; /* 0 = closed loop */
    const char *names[MAX_NAMES];
    int n_names, sim_brokers, sim_topics, shared;
    const char *record_path; /* -o: one line per counted reply */
} bench_opts_t;

typedef struct {
    bench_opts_t o;
    nsrv_buf_t *reqs;
    size_t *opaque_at; /* JSON: where each request's opaque digits are */
    uint64_t n_reqs, next_req;
    bench_conn_t *cs;
    nsrv_arena_t arena;
    nsrv_bsim_hist_t hist;
    uint64_t count_from_ns, end_ns;
    uint64_t done, errors, not_found, reply_bytes;
    FILE *record;
} bench_t;

/* Set by SIGTERM/SIGINT: the run ends at the next wake-up (at most 100 ms). */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int send_request(bench_t *b, bench_conn_t *c, uint64_t due) {
    uint64_t i = b->next_req++ % b->n_reqs;
    nsrv_buf_t *r = &b->reqs[i];
    uint32_t op = c->next_opaque++;
    if (b->o.json) {
        char digits[11];
        snprintf(digits, sizeof digits, "%010" PRIu32, op);
        memcpy(r->data + b->opaque_at[i], digits, 10);
    } else {
        nsrv_buf_put_be32_at(r, NSRV__ROCKETMQ_OPAQUE_OFFSET, op);
    }
    c->due_ns[op % SLOTS] = due;
    c->in_flight++;
    /* Requests are tiny next to the socket buffer, and few are in flight. */
    return write(c->fd, r->data, r->len) == (ssize_t)r->len ? 0 : -1;
}

/* A whole decimal int argument; false for anything else. */
static bool arg_int(const char *v, int *out) {
    int64_t x;
    if (!nsrv_parse_int(v, strlen(v), INT32_MIN, INT32_MAX, &x))
        return false;
    *out = (int)x;
    return true;
}

static void usage(void) {
    fprintf(stderr, "usage: nsrv-bench -a HOST:PORT [-c CONNS] [-d DEPTH | -r RATE] [-s SECONDS] "
                    "[-w WARMUP_SECONDS] [-v VERSION] [-o RECORD_FILE]\n"
                    "                  [--header rocketmq|json]\n"
                    "                  (-t TOPIC... | --brokers N --topics M | --shared S)\n");
}

/* The option's int field, or NULL when a is not an int option. */
static int *int_option(bench_opts_t *o, const char *a) {
    const struct {
        const char *name;
        int *field;
    } ints[] = {{"-c", &o->conns},
                {"-d", &o->depth},
                {"-s", &o->seconds},
                {"-w", &o->warmup},
                {"-v", &o->version},
                {"--brokers", &o->sim_brokers},
                {"--topics", &o->sim_topics},
                {"--shared", &o->shared}};
    for (size_t k = 0; k < NSRV_ARRAY_LEN(ints); k++)
        if (!strcmp(a, ints[k].name))
            return ints[k].field;
    return NULL;
}

static bool parse_opts(int argc, char **argv, bench_opts_t *o) {
    *o = (bench_opts_t){.conns = 8, .depth = 16, .seconds = 10, .version = NSRV_MQ_CURRENT};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *field = int_option(o, a);
        bool ok = v != NULL;
        if (!ok)
            break;
        if (field)
            ok = arg_int(v, field);
        else if (!strcmp(a, "-a"))
            o->addr = v;
        else if (!strcmp(a, "-r"))
            ok = nsrv_parse_int(v, strlen(v), 1, 10000000, &o->rate);
        else if (!strcmp(a, "-o"))
            o->record_path = v;
        else if (!strcmp(a, "--header") && (!strcmp(v, "json") || !strcmp(v, "rocketmq")))
            o->json = !strcmp(v, "json");
        else if (!strcmp(a, "-t") && o->n_names < MAX_NAMES)
            o->names[o->n_names++] = v;
        else
            ok = false;
        if (!ok)
            return false;
    }
    bool have_names = o->n_names > 0 || o->shared > 0 || (o->sim_brokers > 0 && o->sim_topics > 0);
    return o->addr && o->conns >= 1 && o->conns <= MAX_CONNS && o->depth >= 1 &&
           o->depth <= MAX_DEPTH && o->seconds >= 1 && o->seconds <= 3600 && o->warmup >= 0 &&
           o->warmup < o->seconds && have_names && o->sim_brokers <= 100000 &&
           o->sim_topics <= 100000 && o->shared <= 1000000;
}

/* Pre-encodes one request per topic name; only the opaque changes later. */
static void encode_requests(bench_t *b) {
    const bench_opts_t *o = &b->o;
    b->n_reqs = o->n_names  ? (uint64_t)o->n_names
                : o->shared ? (uint64_t)o->shared
                            : (uint64_t)o->sim_brokers * (uint64_t)o->sim_topics;
    b->reqs = nsrv_calloc(b->n_reqs, sizeof *b->reqs);
    b->opaque_at = nsrv_calloc(b->n_reqs, sizeof *b->opaque_at);
    for (uint64_t i = 0; i < b->n_reqs; i++) {
        char name[128];
        if (o->n_names)
            snprintf(name, sizeof name, "%s", o->names[i]);
        else
            nsrv__bench_topic_name(name, sizeof name, i, (uint64_t)o->shared,
                                   (uint64_t)o->sim_topics);
        nsrv_ext_field_t ext = {NSRV_STR_LIT("topic"), nsrv_str_c(name)};
        nsrv_cmd_t cmd = {.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                          .language = NSRV_LANG_JAVA,
                          .version = o->version,
                          .has_ext = true,
                          .ext = &ext,
                          .n_ext = 1,
                          .opaque = o->json ? (int32_t)JSON_OPAQUE_FIRST : 0,
                          .ser_type = o->json ? NSRV_SER_JSON : NSRV_SER_ROCKETMQ};
        nsrv_cmd_encode(&b->reqs[i], &cmd);
        if (o->json) {
            static const char key[] = "\"opaque\":";
            const char *at = memmem(b->reqs[i].data, b->reqs[i].len, key, sizeof key - 1);
            b->opaque_at[i] = (size_t)(at - b->reqs[i].data) + sizeof key - 1;
        }
    }
}

static int connect_all(bench_t *b, int ep) {
    struct sockaddr_in sa = {.sin_family = AF_INET};
    char host[64];
    uint16_t port;
    if (nsrv_hostport_split(b->o.addr, host, sizeof host, &port) != 0 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "nsrv-bench: IPv4 HOST:PORT expected: %s\n", b->o.addr);
        return -1;
    }
    sa.sin_port = htons(port);
    b->cs = nsrv_calloc((size_t)b->o.conns, sizeof *b->cs);
    for (int i = 0; i < b->o.conns; i++) {
        bench_conn_t *c = &b->cs[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        c->next_opaque = b->o.json ? JSON_OPAQUE_FIRST : 0;
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            fprintf(stderr, "nsrv-bench: connect %s: %s\n", b->o.addr, strerror(errno));
            return -1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    return 0;
}

/* Reads what arrived and accounts every whole reply; in a closed loop each
 * reply sends the connection's next request. -1: the connection failed. */
static int on_readable(bench_t *b, bench_conn_t *c) {
    nsrv_buf_reserve(&c->in, 64 * 1024);
    ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        fprintf(stderr, "nsrv-bench: connection closed by the server\n");
        return -1;
    }
    c->in.len += (size_t)n;
    size_t off = 0, flen;
    while (nsrv_frame_peek((const uint8_t *)c->in.data + off, c->in.len - off,
                           NSRV_FRAME_MAX_DEFAULT, &flen) == 0) {
        nsrv_arena_reset(&b->arena);
        nsrv_cmd_t resp = {0};
        bool bad = nsrv_cmd_decode((const uint8_t *)c->in.data + off, flen, &b->arena, &resp) != 0;
        off += flen;
        uint64_t t = now_ns();
        c->in_flight--;
        if (t >= b->count_from_ns) {
            if (bad || (resp.code != NSRV_RESP_SUCCESS && resp.code != NSRV_RESP_TOPIC_NOT_EXIST))
                b->errors++;
            b->not_found += !bad && resp.code == NSRV_RESP_TOPIC_NOT_EXIST;
            uint64_t due = c->due_ns[(uint32_t)resp.opaque % SLOTS];
            nsrv__bsim_hist_add(&b->hist, t > due ? (t - due) / 1000u : 0);
            if (b->record)
                fprintf(b->record, "%" PRIu64 " %" PRIu64 "\n", due, t > due ? t - due : 0);
            b->done++;
            b->reply_bytes += flen;
        }
        if (!b->o.rate && t < b->end_ns && send_request(b, c, t) != 0)
            return -1;
    }
    memmove(c->in.data, c->in.data + off, c->in.len - off);
    c->in.len -= off;
    return 0;
}

/* Open loop: sends every request due by now, round robin over the connections;
 * returns the time the next one is due. A connection at its in-flight cap
 * holds the schedule back, and what it delays is charged to the server. */
static uint64_t send_due(bench_t *b, uint64_t start, uint64_t *k, uint64_t now) {
    for (;;) {
        uint64_t due = start + (uint64_t)((double)*k * 1e9 / (double)b->o.rate);
        if (due > now || due >= b->end_ns)
            return due;
        bench_conn_t *c = &b->cs[*k % (uint64_t)b->o.conns];
        if (c->in_flight >= OPEN_MAX_IN_FLIGHT)
            return now + 100000u;
        if (send_request(b, c, due) != 0)
            return 0;
        (*k)++;
    }
}

static int run(bench_t *b) {
    int ep = epoll_create1(0);
    if (connect_all(b, ep) != 0)
        return -1;
    uint64_t start = now_ns(), k = 0;
    b->count_from_ns = start + (uint64_t)b->o.warmup * 1000000000u;
    b->end_ns = start + (uint64_t)b->o.seconds * 1000000000u;
    for (int i = 0; !b->o.rate && i < b->o.conns; i++) {
        for (int d = 0; d < b->o.depth; d++) {
            if (send_request(b, &b->cs[i], start) != 0)
                return -1;
        }
    }
    struct epoll_event evs[256];
    uint64_t next_due = start;
    for (uint64_t now = start; now < b->end_ns && !stop_requested; now = now_ns()) {
        struct timespec wait = {0, 100 * 1000 * 1000};
        if (b->o.rate) {
            next_due = send_due(b, start, &k, now);
            if (next_due == 0)
                return -1;
            uint64_t ns = next_due > now ? next_due - now : 0;
            if (ns < (uint64_t)wait.tv_nsec)
                wait.tv_nsec = (long)ns;
        }
        int n = epoll_pwait2(ep, evs, 256, &wait, NULL);
        for (int i = 0; i < n; i++) {
            if (on_readable(b, evs[i].data.ptr) != 0)
                return -1;
        }
    }
    close(ep);
    /* Stopped early: the figures cover the time that ran (at least 1 ms past the warm-up). */
    uint64_t now = now_ns();
    if (stop_requested && now < b->end_ns)
        b->end_ns = now > b->count_from_ns + 1000000u ? now : b->count_from_ns + 1000000u;
    return 0;
}

int main(int argc, char **argv) {
    bench_t b = {0};
    if (!parse_opts(argc, argv, &b.o)) {
        usage();
        return 2;
    }
    if (b.o.record_path && !(b.record = fopen(b.o.record_path, "w"))) {
        fprintf(stderr, "nsrv-bench: %s: %s\n", b.o.record_path, strerror(errno));
        return 2;
    }
    /* No SA_RESTART: the signal cuts the epoll wait short. */
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    encode_requests(&b);
    nsrv_arena_init(&b.arena, 16 * 1024);
    if (run(&b) != 0) {
        fprintf(stderr, "nsrv-bench: %s\n", errno ? strerror(errno) : "failed");
        return 1;
    }
    double secs = (double)(b.end_ns - b.count_from_ns) / 1e9;
    printf("{\"target\":\"%s\",\"connections\":%d,\"depth\":%d,\"rate\":%" PRId64
           ",\"seconds\":%.2f,\"requests\":%" PRIu64 ",\"notFound\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"qps\":%.0f,\"reply_bytes\":%" PRIu64 ",\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64
           ",\"p999_us\":%" PRIu64 ",\"max_us\":%" PRIu64 "}\n",
           b.o.addr, b.o.conns, b.o.rate ? 0 : b.o.depth, b.o.rate, secs, b.done, b.not_found,
           b.errors, (double)b.done / secs, b.done ? b.reply_bytes / b.done : 0,
           nsrv__bsim_hist_percentile(&b.hist, 0.50), nsrv__bsim_hist_percentile(&b.hist, 0.99),
           nsrv__bsim_hist_percentile(&b.hist, 0.999), b.hist.max);
    for (int i = 0; i < b.o.conns; i++) {
        close(b.cs[i].fd);
        nsrv_buf_deinit(&b.cs[i].in);
    }
    for (uint64_t i = 0; i < b.n_reqs; i++)
        nsrv_buf_deinit(&b.reqs[i]);
    nsrv_free(b.reqs);
    nsrv_free(b.cs);
    nsrv_arena_deinit(&b.arena);
    if (b.record && fclose(b.record) != 0) {
        fprintf(stderr, "nsrv-bench: %s: %s\n", b.o.record_path, strerror(errno));
        return 1;
    }
    return b.errors ? 1 : 0;
}
