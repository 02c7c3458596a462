/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uv_try_write for a plain TCP connection, without libuv's wrapper and glibc's
 * cancellation bookkeeping around writev (cluster-tests/bench/README.md):
 * the same conditions, result and errors as libuv 1.44's uv_try_write.
 */
#pragma once

#include <uv.h>

/* Writes what the socket takes now of bufs, as uv_try_write does: the bytes written,
 * UV_EAGAIN when it takes none or libuv has writes queued (or a connect pending) on it,
 * UV_EBADF / UV_EPIPE when it is closed / not writable, or the write's error. */
int nsrv__sock_try_write(uv_tcp_t *tcp, const uv_buf_t *bufs, unsigned n_bufs);
