/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The direct write (src/server/sock_write.h) answers as uv_try_write does, on the same
 * socket state: every bytes count and error code below is checked against uv_try_write's
 * own answer in that state, and the bytes against what the peer reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../sock_write.h"
#include "testlib.h"

typedef struct {
    uv_loop_t loop;
    uv_tcp_t tcp;
    int peer;
} pair_t;

static void pair_open(pair_t *p) {
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    int small = 4096; /* a small send buffer fills after a few writes */
    assert_int_equal(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    assert_int_equal(uv_loop_init(&p->loop), 0);
    assert_int_equal(uv_tcp_init(&p->loop, &p->tcp), 0);
    assert_int_equal(uv_tcp_open(&p->tcp, fds[0]), 0);
    p->peer = fds[1];
}

static void pair_close(pair_t *p) {
    if (p->peer >= 0)
        close(p->peer);
    uv_close((uv_handle_t *)&p->tcp, NULL);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&p->loop), 0);
}

/* Reads everything the peer has now (non-blocking), compares it with want if given. */
static size_t peer_drain(pair_t *p, const char *want) {
    static char buf[1 << 16];
    size_t total = 0;
    for (;;) {
        ssize_t n = recv(p->peer, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0)
            break;
        if (want)
            assert_memory_equal(buf, want + total, (size_t)n);
        total += (size_t)n;
    }
    return total;
}

static void test_gathers_buffers(void **state) {
    (void)state;
    pair_t p;
    pair_open(&p);
    uv_buf_t iov[3] = {uv_buf_init("route", 5), uv_buf_init("", 0), uv_buf_init("-body", 5)};
    assert_int_equal(nsrv__sock_try_write(&p.tcp, iov, 3), 10);
    assert_int_equal(peer_drain(&p, "route-body"), 10);
    pair_close(&p);
}

/* A full socket: UV_EAGAIN, as uv_try_write says in the same state, and every byte the
 * writes before it counted is what the peer reads. */
static void test_full_socket(void **state) {
    (void)state;
    pair_t p;
    pair_open(&p);
    static char chunk[3000];
    memset(chunk, 'x', sizeof chunk);
    uv_buf_t iov[2] = {uv_buf_init(chunk, 1000), uv_buf_init(chunk + 1000, 2000)};
    size_t sent = 0;
    int n;
    while ((n = nsrv__sock_try_write(&p.tcp, iov, 2)) > 0) {
        sent += (size_t)n;
        assert_true(sent < (64u << 20));
    }
    assert_int_equal(n, UV_EAGAIN);
    assert_int_equal(uv_try_write((uv_stream_t *)&p.tcp, iov, 2), UV_EAGAIN);
    assert_int_equal(peer_drain(&p, NULL), sent);
    pair_close(&p);
}

static void write_cb(uv_write_t *req, int status) {
    (void)status;
    free(req);
}

/* Bytes queued in libuv: the direct write must not overtake them. */
static void test_queued_write_first(void **state) {
    (void)state;
    pair_t p;
    pair_open(&p);
    static char chunk[1 << 16];
    memset(chunk, 'q', sizeof chunk);
    uv_buf_t big = uv_buf_init(chunk, sizeof chunk);
    uv_write_t *req = malloc(sizeof *req);
    assert_int_equal(uv_write(req, (uv_stream_t *)&p.tcp, &big, 1, write_cb), 0);
    assert_true(p.tcp.write_queue_size > 0); /* 64 KiB do not fit a 4 KiB send buffer */
    assert_true(peer_drain(&p, NULL) > 0);   /* room in the socket, the queue still there */
    uv_buf_t small = uv_buf_init("late", 4);
    assert_int_equal(nsrv__sock_try_write(&p.tcp, &small, 1), UV_EAGAIN);
    assert_int_equal(uv_try_write((uv_stream_t *)&p.tcp, &small, 1), UV_EAGAIN);
    pair_close(&p); /* the queued write is cancelled: write_cb frees it */
}

/* Not writable after a shutdown; a closed peer is the system call's EPIPE. */
static void test_errors(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as nsrvd does */
    uv_buf_t b = uv_buf_init("x", 1);
    pair_t p;
    pair_open(&p);
    close(p.peer);
    p.peer = -1;
    int want = uv_try_write((uv_stream_t *)&p.tcp, &b, 1);
    assert_int_equal(want, UV_EPIPE);
    assert_int_equal(nsrv__sock_try_write(&p.tcp, &b, 1), want);
    pair_close(&p);

    pair_open(&p);
    uv_shutdown_t sreq;
    assert_int_equal(uv_shutdown(&sreq, (uv_stream_t *)&p.tcp, NULL), 0);
    want = uv_try_write((uv_stream_t *)&p.tcp, &b, 1);
    assert_true(want < 0);
    assert_int_equal(nsrv__sock_try_write(&p.tcp, &b, 1), want);
    pair_close(&p);
}

/* More buffers than one writev takes: the first IOV_MAX go, as with uv_try_write. */
static void test_iov_max(void **state) {
    (void)state;
    pair_t p;
    pair_open(&p);
    int big = 1 << 20;
    setsockopt(p.peer, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(p.tcp.io_watcher.fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    enum { N = IOV_MAX + 7 };
    static uv_buf_t iov[N];
    for (size_t i = 0; i < N; i++)
        iov[i] = uv_buf_init("ab", 2);
    assert_int_equal(nsrv__sock_try_write(&p.tcp, iov, N), 2 * IOV_MAX);
    assert_int_equal(uv_try_write((uv_stream_t *)&p.tcp, iov, N), 2 * IOV_MAX);
    assert_int_equal(peer_drain(&p, NULL), 4 * IOV_MAX);
    pair_close(&p);
}

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

/* In an AddressSanitizer build, a reply buffer freed before its write is reported (as libc's
 * intercepted writev reported it under uv_try_write): a child process writes a freed buffer
 * and must die of the report. Only in such builds (a skipped test fails a stage). */
#ifdef ASAN_BUILD
static void test_asan_sees_freed_buffer(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO); /* the expected report */
        pair_t p;
        pair_open(&p);
        char *volatile gone = malloc(64);
        memset(gone, 'r', 64);
        free(gone);
        uv_buf_t b = uv_buf_init(gone, 64);
        nsrv__sock_try_write(&p.tcp, &b, 1);
        _exit(0); /* the write went unchecked */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
#define ASAN_TESTS , cmocka_unit_test(test_asan_sees_freed_buffer)
#else
#define ASAN_TESTS
#endif

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_gathers_buffers),
               cmocka_unit_test(test_full_socket), cmocka_unit_test(test_queued_write_first),
               cmocka_unit_test(test_errors), cmocka_unit_test(test_iov_max) ASAN_TESTS)
