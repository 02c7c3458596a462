/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A direct writev on the socket (sock_write.h). uv_try_write costs ~55 instructions of
 * its own (uv_try_write2's checks, a copy of the stream's state) before glibc's writev,
 * which in a process with threads (the offload worker, the gossip thread) wraps the
 * system call in __pthread_enable/disable_asynccancel: ~60 more, for a cancellation
 * nsrvd never requests. The raw system call keeps the checks that matter and drops the
 * rest: every reply of the route query path goes through here.
 */
#include "sock_write.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* AddressSanitizer checks the bytes libc's writev sends (its interceptor reads every iovec),
 * as it did under uv_try_write: a reply body released before its write shows up there. The
 * raw system call would pass them unchecked, so sanitizer builds keep libc's writev. */
#if defined(__SANITIZE_ADDRESS__)
#define SOCK_WRITE_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOCK_WRITE_CHECKED 1
#endif
#endif
#ifndef SOCK_WRITE_CHECKED
#define SOCK_WRITE_CHECKED 0
#endif

/* libuv's unix uv_buf_t is laid out as struct iovec (uv.h: "readv/writev compatible"). */
_Static_assert(sizeof(uv_buf_t) == sizeof(struct iovec) &&
                   offsetof(uv_buf_t, base) == offsetof(struct iovec, iov_base) &&
                   offsetof(uv_buf_t, len) == offsetof(struct iovec, iov_len),
               "uv_buf_t is not an iovec");

int nsrv__sock_try_write(uv_tcp_t *tcp, const uv_buf_t *bufs, unsigned n_bufs) {
    /* uv_try_write2's own conditions (libuv 1.44, src/unix/stream.c), in its order. */
    if (tcp->connect_req != NULL || tcp->write_queue_size != 0)
        return UV_EAGAIN;
    int fd = tcp->io_watcher.fd;
    if (fd < 0)
        return UV_EBADF;
    if (!uv_is_writable((const uv_stream_t *)tcp))
        return UV_EPIPE;
    if (n_bufs > IOV_MAX)
        n_bufs = IOV_MAX; /* a partial write, as libuv's */
    long n;
    const struct iovec *iov = (const struct iovec *)bufs;
    do
        n = SOCK_WRITE_CHECKED ? writev(fd, iov, (int)n_bufs)
                               : syscall(SYS_writev, fd, iov, (int)n_bufs);
    while (n == -1 && errno == EINTR);
    if (n >= 0)
        return (int)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
        return UV_EAGAIN;
    return -errno; /* UV__ERR on unix: libuv's error codes are negated errnos */
}
