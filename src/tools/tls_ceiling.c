/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrv-tls-ceiling: the benchmark's TLS ceiling server (cluster-tests/bench/README.md "TLS").
 * nsrv-ceiling's canned replies through OpenSSL, one thread, TLS only: what this machine's
 * TCP path plus TLS can do, so "% of the TLS ceiling" is meaningful for nsrvd over TLS.
 *
 * The SSL context is nsrvd's own (nsrv_tls_ctx_create with the test-mode defaults: the same
 * self-signed P-256 certificate kind, protocol versions, options and session tickets), so
 * the two differ only in what is done around OpenSSL. So does its TLS session layer
 * (nsrv_tls_session_*, whose output BIO appends to a buffer instead of zeroing a memory
 * BIO's growth): around it, the least there is: one read() of the socket fed whole, every
 * frame of it answered into one write to the session, and the records sent with one write().
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
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
#include "nsrv/config.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"
#include "nsrv/tls.h"

#define READ_CHUNK (64 * 1024)
#define MAX_EVENTS 256

typedef struct {
    int fd;
    nsrv_tls_session_t *tls;
    nsrv_buf_t in;     /* plaintext of an unfinished frame */
    nsrv_buf_t cipher; /* records the socket did not take yet */
    bool want_out, established;
} tconn_t;

typedef struct {
    nsrv_buf_t canned, replies;
    nsrv_arena_t arena;
    nsrv_ssl_ctx_t *ctx;
    int ep;
    unsigned long long answered, handshakes, resumed;
} tceiling_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static void conn_free(tconn_t *c) {
    close(c->fd);
    nsrv_tls_session_free(c->tls);
    nsrv_buf_deinit(&c->in);
    nsrv_buf_deinit(&c->cipher);
    nsrv_free(c);
}

/* Moves what the session has to send to the socket, in one write when it takes it all. */
static bool flush(tceiling_t *s, tconn_t *c) {
    const char *p;
    size_t n = nsrv_tls_session_output(c->tls, &p);
    if (n > 0) {
        nsrv_buf_append(&c->cipher, p, n);
        nsrv_tls_session_output_clear(c->tls);
    }
    size_t off = 0;
    while (off < c->cipher.len) {
        ssize_t w = write(c->fd, c->cipher.data + off, c->cipher.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w <= 0)
            return false;
        off += (size_t)w;
    }
    memmove(c->cipher.data, c->cipher.data + off, c->cipher.len - off);
    c->cipher.len -= off;
    bool want = c->cipher.len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = want ? EPOLLOUT : EPOLLIN, .data.ptr = c};
        epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    return true;
}

/* Answers every whole frame of c->in into s->replies. False: a bad frame. */
static bool answer(tceiling_t *s, tconn_t *c) {
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
        nsrv__canned_append(&s->replies, &s->canned, (uint32_t)opaque);
        used += flen;
        s->answered++;
    }
    memmove(c->in.data, c->in.data + used, c->in.len - used);
    c->in.len -= used;
    return true;
}

static bool on_readable(tceiling_t *s, tconn_t *c) {
    char buf[READ_CHUNK];
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (n <= 0)
        return false;
    const char *why;
    if (nsrv_tls_session_feed(c->tls, buf, (size_t)n, &c->in, &why) != NSRV_TLS_OK)
        return false;
    if (!c->established && nsrv_tls_session_established(c->tls)) {
        c->established = true;
        s->handshakes++;
        s->resumed += nsrv_tls_session_resumed(c->tls);
    }
    nsrv_buf_reset(&s->replies);
    if (!answer(s, c))
        return false;
    if (s->replies.len && !nsrv_tls_session_write(c->tls, s->replies.data, s->replies.len))
        return false;
    return flush(s, c);
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 4096) != 0) {
        perror("nsrv-tls-ceiling: listen");
        exit(1);
    }
    return fd;
}

static void accept_all(tceiling_t *s, int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
            return;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        tconn_t *c = nsrv_calloc(1, sizeof *c);
        c->fd = fd;
        c->tls = nsrv_tls_session_new(s->ctx);
        if (!c->tls) {
            close(fd);
            nsrv_free(c);
            continue;
        }
        nsrv_buf_init(&c->in);
        nsrv_buf_init(&c->cipher);
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
    tceiling_t s = {0};
    nsrv_buf_init(&s.canned);
    nsrv_buf_init(&s.replies);
    if (port == 0 || frame_bytes == 0 || !nsrv__canned_build(&s.canned, (size_t)frame_bytes)) {
        fprintf(stderr, "usage: nsrv-tls-ceiling -p PORT --frame-bytes N\n");
        return 2;
    }
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    nsrv_free(cfg.tls_config_file);
    cfg.tls_config_file = nsrv_strdup("");
    char err[512] = "";
    nsrv_tls_ctx_t *tls = nsrv_tls_ctx_create(&cfg, err, sizeof err);
    nsrv_config_free(&cfg);
    if (!tls || !(s.ctx = nsrv_tls_ctx_ssl(tls))) {
        fprintf(stderr, "nsrv-tls-ceiling: %s\n", err);
        return 1;
    }
    nsrv_arena_init(&s.arena, 4096);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int lfd = listen_on((int)port);
    s.ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(s.ep, EPOLL_CTL_ADD, lfd, &lev);
    printf("listening on 127.0.0.1:%d (TLS), %zu-byte replies; %s\n", (int)port, s.canned.len,
           nsrv_tls_ctx_describe(tls));
    fflush(stdout);
    struct epoll_event evs[MAX_EVENTS];
    while (!stop) {
        int n = epoll_wait(s.ep, evs, MAX_EVENTS, 200);
        for (int i = 0; i < n; i++) {
            tconn_t *c = evs[i].data.ptr;
            if (!c) {
                accept_all(&s, lfd);
                continue;
            }
            bool ok = (evs[i].events & EPOLLOUT) ? flush(&s, c) : on_readable(&s, c);
            if (ERR_peek_error() != 0) /* SSL_get_error reads the queue: nothing stale */
                ERR_clear_error();
            if (!ok || (evs[i].events & (EPOLLERR | EPOLLHUP)))
                conn_free(c); /* closing the fd removes it from the epoll set */
        }
    }
    printf("answered %llu, handshakes %llu (%llu resumed)\n", s.answered, s.handshakes, s.resumed);
    close(lfd);
    nsrv_tls_ctx_destroy(tls);
    nsrv_buf_deinit(&s.canned);
    nsrv_buf_deinit(&s.replies);
    nsrv_arena_deinit(&s.arena);
    return 0;
}
