/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A text built from pieces (include/nsrv/rope.h). Own text is one growing
 * buffer, so its pieces are kept as offsets (the buffer may move while it
 * grows) and turned into pointers only by nsrv_rope_iov.
 */
#include "nsrv/rope.h"

#include "nsrv/alloc.h"

static void push(nsrv_rope_t *r, const char *ext, size_t off, size_t len) {
    if (len == 0)
        return;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->pieces = nsrv_realloc(r->pieces, r->cap * sizeof *r->pieces);
    }
    r->pieces[r->n++] = (nsrv_rope_piece_t){ext, off, len};
}

/* Turns the own text appended since the last piece into a piece. */
static void close_own(nsrv_rope_t *r) {
    push(r, NULL, r->own_mark, r->own.len - r->own_mark);
    r->own_mark = r->own.len;
}

void nsrv_rope_deinit(nsrv_rope_t *r) {
    nsrv_buf_deinit(&r->own);
    nsrv_free(r->pieces);
    *r = (nsrv_rope_t)NSRV_ROPE_INIT;
}

void nsrv_rope_ref(nsrv_rope_t *r, const void *p, size_t len) {
    close_own(r);
    push(r, p, 0, len);
    r->ext_bytes += len;
}

size_t nsrv_rope_len(const nsrv_rope_t *r) {
    return r->own.len + r->ext_bytes;
}

struct iovec *nsrv_rope_iov(nsrv_rope_t *r, size_t *n) {
    close_own(r);
    struct iovec *iov = nsrv_malloc((r->n ? r->n : 1) * sizeof *iov);
    for (size_t i = 0; i < r->n; i++) {
        const nsrv_rope_piece_t *p = &r->pieces[i];
        iov[i].iov_base = (void *)(p->ext ? p->ext : r->own.data + p->off);
        iov[i].iov_len = p->len;
    }
    *n = r->n;
    return iov;
}

void nsrv_rope_flatten(nsrv_rope_t *r, nsrv_buf_t *out) {
    size_t n = 0;
    struct iovec *iov = nsrv_rope_iov(r, &n);
    nsrv_buf_reserve(out, nsrv_rope_len(r));
    for (size_t i = 0; i < n; i++)
        nsrv_buf_append(out, iov[i].iov_base, iov[i].iov_len);
    nsrv_free(iov);
}
