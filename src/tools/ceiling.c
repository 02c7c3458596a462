/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-ceiling: the benchmark's ceiling server (cluster-tests/bench/README.md).
 * A trivial single-threaded epoll server that answers every RocketMQ frame with
 * one canned SUCCESS response of a fixed size, so it measures what this
 * machine's TCP path can do with replies of the size a NameServer sends; no
 * NameServer can be faster on the same pinning. Each readable event: one read,
 * every whole frame answered into one output buffer, one write.
 *
 * The reply carries the request's opaque (read at its fixed offset from a
 * ROCKETMQ binary header, or decoded from a JSON one), so any client can match
 * it. Loopback benchmarking only: frames are checked by nsrv_frame_peek and a
 * bad one closes the connection.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "canned_reply.h"
#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"

#define READ_CHUNK (64 * 1024)
#define MAX_EVENTS 256

typedef struct {
    int fd;
    nsrv_buf_t in;  /* bytes of an unfinished frame */
    nsrv_buf_t out; /* replies the socket did not take yet */
    bool want_out;
} ceil_conn_t;

typedef struct {
    nsrv_buf_t canned; /* the whole reply frame; only its opaque changes */
    nsrv_arena_t arena;
    int ep;
    unsigned long long answered;
} ceiling_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static void conn_free(ceil_conn_t *c) {
    close(c->fd);
    nsrv_buf_deinit(&c->in);
    nsrv_buf_deinit(&c->out);
    nsrv_free(c);
}

/* Writes what the socket takes; the rest waits for EPOLLOUT. False: close. */
static bool flush(ceiling_t *s, ceil_conn_t *c) {
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t n = write(c->fd, c->out.data + off, c->out.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0)
            return false;
        off += (size_t)n;
    }
    memmove(c->out.data, c->out.data + off, c->out.len - off);
    c->out.len -= off;
    bool want = c->out.len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = want ? EPOLLOUT : EPOLLIN, .data.ptr = c};
        epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    return true;
}

/* Answers every whole frame in c->in. False: a bad frame, close. */
static bool answer(ceiling_t *s, ceil_conn_t *c) {
    size_t used = 0;
    for (;;) {
        size_t flen;
        const uint8_t *p = (const uint8_t *)c->in.data + used;
        int rc = nsrv_frame_peek(p, c->in.len - used, NSRV_FRAME_MAX_DEFAULT, &flen);
        if (rc == NSRV_AGAIN)
            break;
        int64_t opaque = rc == 0 ? nsrv__canned_opaque(&s->arena, p, flen) : -1;
        if (opaque < 0)
            return false;
        nsrv__canned_append(&c->out, &s->canned, (uint32_t)opaque);
        used += flen;
        s->answered++;
    }
    memmove(c->in.data, c->in.data + used, c->in.len - used);
    c->in.len -= used;
    return true;
}

static bool on_readable(ceiling_t *s, ceil_conn_t *c) {
    nsrv_buf_reserve(&c->in, READ_CHUNK);
    ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0)
        return false;
    c->in.len += (size_t)n;
    return answer(s, c) && flush(s, c);
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0) {
        perror("nsrv-ceiling: listen");
        exit(1);
    }
    return fd;
}

static void accept_all(ceiling_t *s, int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ceil_conn_t *c = nsrv_calloc(1, sizeof *c);
        c->fd = fd;
        nsrv_buf_init(&c->in);
        nsrv_buf_init(&c->out);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
    }
}

int main(int argc, char **argv) {
    int64_t port = 0, frame_bytes = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];
        if (!strcmp(argv[i], "-p"))
            nsrv_parse_int(v, strlen(v), 1, 65535, &port);
        else if (!strcmp(argv[i], "--frame-bytes"))
            nsrv_parse_int(v, strlen(v), 1, 16 * 1024 * 1024, &frame_bytes);
    }
    ceiling_t s = {0};
    nsrv_buf_init(&s.canned);
    if (port == 0 || frame_bytes == 0 || !nsrv__canned_build(&s.canned, (size_t)frame_bytes)) {
        fprintf(stderr,
                "usage: nsrv-ceiling -p PORT --frame-bytes N  (N >= the bare reply header, "
                "%zu bytes)\n",
                s.canned.len);
        return 2;
    }
    nsrv_arena_init(&s.arena, 4096);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int lfd = listen_on((int)port);
    s.ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(s.ep, EPOLL_CTL_ADD, lfd, &lev);
    printf("listening on 127.0.0.1:%d, %zu-byte replies\n", (int)port, s.canned.len);
    fflush(stdout);
    struct epoll_event evs[MAX_EVENTS];
    while (!stop) {
        int n = epoll_wait(s.ep, evs, MAX_EVENTS, 200);
        for (int i = 0; i < n; i++) {
            ceil_conn_t *c = evs[i].data.ptr;
            if (!c) {
                accept_all(&s, lfd);
                continue;
            }
            bool ok = (evs[i].events & EPOLLOUT) ? flush(&s, c) : on_readable(&s, c);
            if (!ok || (evs[i].events & (EPOLLERR | EPOLLHUP)))
                conn_free(c); /* closing the fd removes it from the epoll set */
        }
    }
    printf("answered %llu\n", s.answered);
    close(lfd);
    nsrv_buf_deinit(&s.canned);
    nsrv_arena_deinit(&s.arena);
    return 0;
}
