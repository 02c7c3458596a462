/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A text built from pieces, for writing a big file without copying its big
 * parts: small text is appended to an own buffer (own, usable with every
 * nsrv_buf_* and nsrv_json_write_* appender), big blocks are referenced where
 * they already are (nsrv_rope_ref). The referenced memory must stay valid and
 * unchanged until the rope is written and freed; the durable writer's
 * snapshots hold the KV values they reference (src/kvconfig/kv_snapshot.c).
 * nsrv_rope_iov lists the pieces, in order, for writev.
 */
#pragma once

#include <stddef.h>
#include <sys/uio.h>

#include "nsrv/buf.h"

typedef struct {
    const char *ext; /* referenced memory, or NULL: [off, off + len) of own */
    size_t off;
    size_t len;
} nsrv_rope_piece_t;

typedef struct {
    nsrv_buf_t own;            /* append small text here directly */
    nsrv_rope_piece_t *pieces; /* closed pieces, in order */
    size_t n, cap;
    size_t own_mark; /* own[own_mark..own.len) is not yet in pieces */
    size_t ext_bytes;
} nsrv_rope_t;

#define NSRV_ROPE_INIT                                                                             \
    { NSRV_BUF_INIT, NULL, 0, 0, 0, 0 }

void nsrv_rope_deinit(nsrv_rope_t *r);

/* Appends a reference to p[0..len) (not copied; see above). */
void nsrv_rope_ref(nsrv_rope_t *r, const void *p, size_t len);

/* Total length of the text. */
size_t nsrv_rope_len(const nsrv_rope_t *r);

/*
 * The pieces as iovecs, in order, empty ones left out; *n gets their count.
 * The array is valid until the next change to r or its deinit (free with
 * nsrv_free).
 */
struct iovec *nsrv_rope_iov(nsrv_rope_t *r, size_t *n);

/* The whole text copied into out (for tests and small users). */
void nsrv_rope_flatten(nsrv_rope_t *r, nsrv_buf_t *out);
