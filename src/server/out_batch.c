/* SPDX-License-Identifier: Apache-2.0 */
/* A batch of reply frames for one scatter/gather write (out_batch.h). */
#include "out_batch.h"

void nsrv__out_init(nsrv_out_batch_t *b) {
    nsrv_buf_init(&b->bytes);
    b->n_segs = 0;
    b->total = 0;
}

void nsrv__out_deinit(nsrv_out_batch_t *b) {
    nsrv__out_reset(b);
    nsrv_buf_deinit(&b->bytes);
}

/* Extends the last byte segment, or starts one, to cover bytes[from..). */
static void cover_bytes(nsrv_out_batch_t *b, size_t from) {
    size_t n = b->bytes.len - from;
    nsrv_out_seg_t *last = b->n_segs ? &b->segs[b->n_segs - 1] : NULL;
    if (last && !last->rc && last->off + last->len == from)
        last->len += n;
    else
        b->segs[b->n_segs++] = (nsrv_out_seg_t){from, n, NULL};
    b->total += n;
}

bool nsrv__out_add(nsrv_out_batch_t *b, const nsrv_cmd_t *resp) {
    return nsrv__out_add_head(b, resp, NULL, 0);
}

bool nsrv__out_add_head(nsrv_out_batch_t *b, const nsrv_cmd_t *resp, const void *head,
                        size_t head_len) {
    bool share = resp->body_rc && resp->body_len >= NSRV_OUT_SHARE_MIN;
    /* At most two new segments: the head (or whole frame) and the shared body. */
    if (b->n_segs + 2 > NSRV_OUT_MAX_SEGS)
        return false;
    size_t from = b->bytes.len;
    if (head) {
        nsrv_buf_append(&b->bytes, head, head_len);
        if (!share && resp->body_len)
            nsrv_buf_append(&b->bytes, resp->body, resp->body_len);
    } else {
        int rc = share ? nsrv_cmd_encode_head(&b->bytes, resp) : nsrv_cmd_encode(&b->bytes, resp);
        if (rc != 0)
            return true; /* too big to encode: no reply, as before batching */
    }
    cover_bytes(b, from);
    if (share) {
        const char *p = (const char *)resp->body;
        nsrv_rcbuf_t *body = nsrv_rcbuf_ref(resp->body_rc);
        b->segs[b->n_segs++] = (nsrv_out_seg_t){(size_t)(p - body->data), resp->body_len, body};
        b->total += resp->body_len;
    }
    return true;
}

bool nsrv__out_add_bytes(nsrv_out_batch_t *b, const void *data, size_t len) {
    if (len == 0)
        return true;
    if (b->n_segs + 1 > NSRV_OUT_MAX_SEGS)
        return false;
    size_t from = b->bytes.len;
    nsrv_buf_append(&b->bytes, data, len);
    cover_bytes(b, from);
    return true;
}

unsigned nsrv__out_iov(const nsrv_out_batch_t *b, struct iovec *iov) {
    for (size_t i = 0; i < b->n_segs; i++) {
        const nsrv_out_seg_t *s = &b->segs[i];
        char *base = s->rc ? s->rc->data : b->bytes.data;
        iov[i] = (struct iovec){.iov_base = base + s->off, .iov_len = s->len};
    }
    return (unsigned)b->n_segs;
}
