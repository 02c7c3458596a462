/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replies of one read batch, ready for one scatter/gather write: headers
 * (and small bodies) are encoded into one byte buffer, while large cached
 * bodies (nsrv_cmd_t.body_rc) are referenced, not copied, until the batch is
 * written or copied into a queued write. Loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "nsrv/buf.h"
#include "nsrv/rcbuf.h"
#include "nsrv/remoting.h"

/* Bodies shorter than this are copied: a separate iovec costs more than the copy. */
#define NSRV_OUT_SHARE_MIN 1024
/* iovecs per batch, below IOV_MAX (1024) so one writev takes the whole batch. */
#define NSRV_OUT_MAX_SEGS 960

typedef struct {
    size_t off, len;  /* in the batch's bytes, or in rc when rc is set */
    nsrv_rcbuf_t *rc; /* a referenced body */
} nsrv_out_seg_t;

typedef struct {
    nsrv_buf_t bytes;
    nsrv_out_seg_t segs[NSRV_OUT_MAX_SEGS];
    size_t n_segs;
    size_t total; /* bytes of every segment */
} nsrv_out_batch_t;

void nsrv__out_init(nsrv_out_batch_t *b);
void nsrv__out_deinit(nsrv_out_batch_t *b);
/* Appends a reply frame. Returns false when the batch is full (nothing appended):
 * send it, reset it and add again. */
bool nsrv__out_add(nsrv_out_batch_t *b, const nsrv_cmd_t *resp);
/* nsrv__out_add with the frame's bytes up to the body already encoded (head: what
 * nsrv_cmd_encode_head writes for resp; NULL: encode them here). */
bool nsrv__out_add_head(nsrv_out_batch_t *b, const nsrv_cmd_t *resp, const void *head,
                        size_t head_len);
/* Appends bytes that are already a reply's encoding (a deferred reply and those behind it).
 * Returns false when the batch is full, as nsrv__out_add. */
bool nsrv__out_add_bytes(nsrv_out_batch_t *b, const void *data, size_t len);
/* Fills iov (NSRV_OUT_MAX_SEGS entries) with the batch in order; returns the count.
 * Valid until the batch changes. */
unsigned nsrv__out_iov(const nsrv_out_batch_t *b, struct iovec *iov);
/* Empties the batch and drops its body references. Inline: it ends every batch's write. */
static inline void nsrv__out_reset(nsrv_out_batch_t *b) {
    for (size_t i = 0; i < b->n_segs; i++)
        nsrv_rcbuf_unref(b->segs[i].rc);
    b->n_segs = 0;
    b->total = 0;
    nsrv_buf_reset(&b->bytes);
}
