/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module-internal msgpack helpers (mp.c). Writing goes through msgpack-c's
 * packer, which always picks the shortest encoding; reading uses a strict
 * cursor of our own, because msgpack-c's object unpacker allocates
 * count × 24 bytes for a declared array count before reading any element
 * (a 5-byte hostile header would ask for gigabytes) and cannot check types
 * while decoding into our structs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/gossip_msg.h"

/* Writer: appends to a nsrv_buf_t. */
typedef struct {
    nsrv_buf_t *out;
} nsrv__mp_w_t;

void nsrv__mp_w_array(nsrv__mp_w_t *w, uint32_t n);
void nsrv__mp_w_uint(nsrv__mp_w_t *w, uint64_t v);
void nsrv__mp_w_int(nsrv__mp_w_t *w, int64_t v);
void nsrv__mp_w_str(nsrv__mp_w_t *w, const char *p, size_t len);
void nsrv__mp_w_bin(nsrv__mp_w_t *w, const void *p, size_t len);
void nsrv__mp_w_nil(nsrv__mp_w_t *w);

/* Reader over p[0..len). Every function returns 0 or -EPROTO; on error the
 * offset is unspecified and the reader must not be used further. */
typedef nsrv_reader_t nsrv__mp_r_t; /* the project's bounds-checked reader (buf.h) */

static inline void nsrv__mp_r_init(nsrv__mp_r_t *r, const void *p, size_t len) {
    nsrv_reader_init(r, p, len);
}
static inline size_t nsrv__mp_r_left(const nsrv__mp_r_t *r) {
    return nsrv_reader_left(r);
}

/* An array header whose count is at most max and at most the bytes left
 * divided by min_elem_len (every element needs that many bytes). */
int nsrv__mp_r_array(nsrv__mp_r_t *r, uint32_t *n, uint32_t max, size_t min_elem_len);
/* An integer (either msgpack int family) in [0, max]. */
int nsrv__mp_r_uint(nsrv__mp_r_t *r, uint64_t *v, uint64_t max);
/* An integer (either family) in [min, max]. */
int nsrv__mp_r_int(nsrv__mp_r_t *r, int64_t *v, int64_t min, int64_t max);
/* A str of at most max bytes (view into the input). */
int nsrv__mp_r_str(nsrv__mp_r_t *r, nsrv_str_t *s, size_t max);
/* A bin of at most max bytes (view into the input). */
int nsrv__mp_r_bin(nsrv__mp_r_t *r, const uint8_t **p, size_t *n, size_t max);
/* True (and consumed) if the next value is nil. */
bool nsrv__mp_r_nil(nsrv__mp_r_t *r);

/* ---- msg.c pieces reused by sender.c ---- */

/* Smallest encoded list element: fixarray(6) + six fixints. */
#define NSRV__GOSSIP_MIN_ITEM 7

/* -EINVAL unless m is something the decoder accepts (sizes aside). */
int nsrv__gossip_msg_check(const nsrv_gossip_msg_t *m);
/*
 * Appends the envelope from its array header up to and including the header
 * of the body's list (declared with nlist elements), or the whole body for
 * SYNC_REQ. The list elements follow, then the signature.
 */
void nsrv__gossip_put_prefix(nsrv_buf_t *out, const nsrv_gossip_msg_t *m, size_t nlist);
void nsrv__gossip_put_entry(nsrv_buf_t *out, const nsrv_gossip_entry_t *e);
void nsrv__gossip_put_tomb(nsrv_buf_t *out, const nsrv_gossip_tomb_t *t);
