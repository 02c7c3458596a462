/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Splits a nameserver's response stream into frames. A read may hold part of
 * a frame, one frame or many; whole frames are handed out straight from the
 * caller's read buffer and only an incomplete tail is copied, so thousands
 * of idle connections cost no buffer at all. Lengths come from the server:
 * nsrv_frame_peek rejects a prefix above max_frame before anything is
 * buffered for it. Pure code.
 */
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/remoting.h"
#include "bsim_int.h"

/* A buffer grown beyond this (by one large frame) is released after use. */
#define RX_KEEP_BYTES (64 * 1024)
#define RX_MIN_BYTES 4096

void nsrv__bsim_rx_init(nsrv_bsim_rx_t *rx, size_t max_frame) {
    memset(rx, 0, sizeof(*rx));
    rx->max_frame = max_frame;
}

void nsrv__bsim_rx_deinit(nsrv_bsim_rx_t *rx) {
    nsrv_free(rx->p);
    rx->p = NULL;
    rx->len = rx->cap = 0;
}

void nsrv__bsim_rx_reset(nsrv_bsim_rx_t *rx) {
    rx->len = 0;
    if (rx->cap > RX_KEEP_BYTES)
        nsrv__bsim_rx_deinit(rx);
}

static void reserve(nsrv_bsim_rx_t *rx, size_t need) {
    if (rx->cap >= need)
        return;
    size_t cap = NSRV_MAX(NSRV_MAX(need, rx->cap * 2), (size_t)RX_MIN_BYTES);
    rx->p = nsrv_realloc(rx->p, cap);
    rx->cap = cap;
}

int nsrv__bsim_rx_feed(nsrv_bsim_rx_t *rx, const uint8_t *data, size_t len, nsrv_bsim_frame_fn fn,
                       void *ctx) {
    const uint8_t *p = data;
    size_t avail = len;
    bool own = rx->len > 0;
    if (own) {
        /* rx->len is below one frame's length, so this stays bounded by
         * max_frame plus the size of one read. */
        reserve(rx, rx->len + len);
        if (len)
            memcpy(rx->p + rx->len, data, len);
        rx->len += len;
        p = rx->p;
        avail = rx->len;
    }
    size_t off = 0;
    for (;;) {
        size_t flen = 0;
        int rc = nsrv_frame_peek(p + off, avail - off, rx->max_frame, &flen);
        if (rc == NSRV_AGAIN)
            break;
        if (rc < 0)
            return rc;
        rc = fn(ctx, p + off, flen);
        if (rc < 0)
            return rc;
        off += flen;
    }
    size_t rest = avail - off;
    if (own) {
        if (off && rest)
            memmove(rx->p, rx->p + off, rest);
        rx->len = rest;
        if (rest == 0)
            nsrv__bsim_rx_reset(rx);
    } else if (rest) {
        reserve(rx, rest);
        memcpy(rx->p, data + off, rest);
        rx->len = rest;
    }
    return 0;
}
