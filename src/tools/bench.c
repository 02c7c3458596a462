/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-bench: measures GET_ROUTEINFO_BY_TOPIC throughput and latency against
 * any NameServer (nsrvd or the Java one), so both are measured the same way
 * on the same machine. C connections each keep D requests in flight for S
 * seconds, cycling over topics topic-<broker>-<i> or the given names.
 * Prints one JSON line: requests, errors, qps, latency percentiles in µs.
 * Loopback or test-network targets only; bounded by --duration.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bsim_int.h"
#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/netaddr.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"

#define MAX_CONNS 512
#define MAX_DEPTH 256
/* Send times by opaque modulo this; far more than MAX_DEPTH, so even a server
 * that answers out of order (the Java one has thread pools) cannot collide. */
#define SLOTS 4096
/* The opaque of a ROCKETMQ binary header: after the length, the header-length
 * word, code (2), language (1) and version (2). */
#define OPAQUE_OFFSET 13

typedef struct {
    int fd;
    nsrv_buf_t in;
    size_t in_off;
    uint64_t sent_at[SLOTS];
    uint32_t next_opaque;
} bench_conn_t;

static int send_request(bench_conn_t *c, nsrv_buf_t *r, uint64_t t) {
    uint32_t op = c->next_opaque++;
    nsrv_buf_put_be32_at(r, OPAQUE_OFFSET, op);
    c->sent_at[op % SLOTS] = t;
    /* Requests are tiny next to the socket buffer, and at most `depth` are in flight. */
    return write(c->fd, r->data, r->len) == (ssize_t)r->len ? 0 : -1;
}

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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
    fprintf(stderr, "usage: nsrv-bench -a HOST:PORT [-c CONNS] [-d DEPTH] [-s SECONDS] "
                    "[-v VERSION] [-t TOPIC]... [--brokers N --topics M (brokersim names)]\n");
}

int main(int argc, char **argv) {
    const char *addr = NULL;
    int conns = 8, depth = 16, seconds = 10, version = NSRV_MQ_CURRENT;
    const char *topics[64];
    int n_topics = 0, sim_brokers = 0, sim_topics = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
            return 2;
        }
        bool ok = true;
        if (!strcmp(a, "-a"))
            addr = v;
        else if (!strcmp(a, "-c"))
            ok = arg_int(v, &conns);
        else if (!strcmp(a, "-d"))
            ok = arg_int(v, &depth);
        else if (!strcmp(a, "-s"))
            ok = arg_int(v, &seconds);
        else if (!strcmp(a, "-v"))
            ok = arg_int(v, &version);
        else if (!strcmp(a, "-t") && n_topics < 64)
            topics[n_topics++] = v;
        else if (!strcmp(a, "--brokers"))
            ok = arg_int(v, &sim_brokers);
        else if (!strcmp(a, "--topics"))
            ok = arg_int(v, &sim_topics);
        else
            ok = false;
        if (!ok) {
            usage();
            return 2;
        }
    }
    if (!addr || conns < 1 || conns > MAX_CONNS || depth < 1 || depth > MAX_DEPTH || seconds < 1 ||
        seconds > 600 || (!n_topics && (sim_brokers < 1 || sim_topics < 1))) {
        usage();
        return 2;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET};
    char host[64];
    uint16_t port;
    if (nsrv_hostport_split(addr, host, sizeof host, &port) != 0) {
        usage();
        return 2;
    }
    sa.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "nsrv-bench: IPv4 address expected: %s\n", host);
        return 2;
    }

    /* Pre-encode one request per topic name; only the opaque changes. */
    int n_names = n_topics ? n_topics : sim_brokers * sim_topics;
    nsrv_buf_t *reqs = nsrv_calloc((size_t)n_names, sizeof *reqs);
    for (int i = 0; i < n_names; i++) {
        char name[128];
        if (n_topics)
            snprintf(name, sizeof name, "%s", topics[i]);
        else
            snprintf(name, sizeof name, "topic-broker-%04d-%d", i / sim_topics, i % sim_topics);
        nsrv_ext_field_t ext = {NSRV_STR_LIT("topic"), nsrv_str_c(name)};
        nsrv_cmd_t cmd = {.code = NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                          .language = NSRV_LANG_JAVA,
                          .version = version,
                          .has_ext = true,
                          .ext = &ext,
                          .n_ext = 1,
                          .ser_type = NSRV_SER_ROCKETMQ};
        nsrv_cmd_encode(&reqs[i], &cmd);
    }

    bench_conn_t *cs = nsrv_calloc((size_t)conns, sizeof *cs);
    struct pollfd *pfd = nsrv_calloc((size_t)conns, sizeof *pfd);
    for (int i = 0; i < conns; i++) {
        cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(cs[i].fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            fprintf(stderr, "nsrv-bench: connect %s: %s\n", addr, strerror(errno));
            return 1;
        }
        fcntl(cs[i].fd, F_SETFL, O_NONBLOCK);
        pfd[i].fd = cs[i].fd;
        pfd[i].events = POLLIN;
    }
    nsrv_bsim_hist_t hist;
    memset(&hist, 0, sizeof hist);
    uint64_t done = 0, errors = 0, not_found = 0, name_i = 0;
    uint64_t start = now_us(), end = start + (uint64_t)seconds * 1000000u;
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 16 * 1024);

    for (int i = 0; i < conns; i++) {
        for (int d = 0; d < depth; d++) {
            if (send_request(&cs[i], &reqs[name_i++ % (uint64_t)n_names], now_us()) != 0) {
                fprintf(stderr, "nsrv-bench: short write\n");
                return 1;
            }
        }
    }
    while (now_us() < end) {
        if (poll(pfd, (nfds_t)conns, 100) <= 0)
            continue;
        for (int i = 0; i < conns; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
                continue;
            bench_conn_t *c = &cs[i];
            nsrv_buf_reserve(&c->in, 64 * 1024);
            ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
            if (n <= 0) {
                if (n < 0 && errno == EAGAIN)
                    continue;
                fprintf(stderr, "nsrv-bench: connection %d closed by the server\n", i);
                return 1;
            }
            c->in.len += (size_t)n;
            for (;;) {
                size_t flen;
                const uint8_t *p = (const uint8_t *)c->in.data + c->in_off;
                if (nsrv_frame_peek(p, c->in.len - c->in_off, NSRV_FRAME_MAX_DEFAULT, &flen) != 0)
                    break;
                nsrv_arena_reset(&arena);
                nsrv_cmd_t resp = {0};
                if (nsrv_cmd_decode(p, flen, &arena, &resp) != 0)
                    errors++;
                else if (resp.code == NSRV_RESP_TOPIC_NOT_EXIST)
                    not_found++;
                else if (resp.code != NSRV_RESP_SUCCESS)
                    errors++;
                c->in_off += flen;
                uint64_t t = now_us();
                nsrv__bsim_hist_add(&hist, t - c->sent_at[(uint32_t)resp.opaque % SLOTS]);
                done++;
                if (t < end && send_request(c, &reqs[name_i++ % (uint64_t)n_names], t) != 0) {
                    fprintf(stderr, "nsrv-bench: short write\n");
                    return 1;
                }
            }
            memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
            c->in.len -= c->in_off;
            c->in_off = 0;
        }
    }
    double secs = (double)(now_us() - start) / 1e6;
    printf("{\"target\":\"%s\",\"connections\":%d,\"depth\":%d,\"seconds\":%.2f,"
           "\"requests\":%" PRIu64 ",\"notFound\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"qps\":%.0f,\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 ",\"p999_us\":%" PRIu64 "}\n",
           addr, conns, depth, secs, done, not_found, errors, (double)done / secs,
           nsrv__bsim_hist_percentile(&hist, 0.50), nsrv__bsim_hist_percentile(&hist, 0.99),
           nsrv__bsim_hist_percentile(&hist, 0.999));
    for (int i = 0; i < conns; i++) {
        close(cs[i].fd);
        nsrv_buf_deinit(&cs[i].in);
    }
    for (int i = 0; i < n_names; i++)
        nsrv_buf_deinit(&reqs[i]);
    nsrv_free(reqs);
    nsrv_free(cs);
    nsrv_free(pfd);
    nsrv_arena_deinit(&arena);
    return errors ? 1 : 0;
}
