/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer and bounds-checked reader. */
#include "nsrv/buf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"

void nsrv_buf_init(nsrv_buf_t *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void nsrv_buf_deinit(nsrv_buf_t *b) {
    nsrv_free(b->data);
    nsrv_buf_init(b);
}

void nsrv_buf_reset(nsrv_buf_t *b) {
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void nsrv_buf_reserve(nsrv_buf_t *b, size_t extra) {
    size_t need = b->len + extra + 1; /* room for the trailing NUL */
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    b->data = nsrv_realloc(b->data, cap);
    b->cap = cap;
}

void nsrv_buf_append(nsrv_buf_t *b, const void *p, size_t n) {
    nsrv_buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void nsrv_buf_append_c(nsrv_buf_t *b, const char *s) {
    nsrv_buf_append(b, s, strlen(s));
}

void nsrv_buf_append_ch(nsrv_buf_t *b, char c) {
    nsrv_buf_reserve(b, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

void nsrv_buf_append_sep(nsrv_buf_t *b, bool *first) {
    if (!*first)
        nsrv_buf_append_ch(b, ',');
    *first = false;
}

void nsrv_buf_append_u8(nsrv_buf_t *b, uint8_t v) {
    nsrv_buf_append_ch(b, (char)v);
}

void nsrv_buf_append_be16(nsrv_buf_t *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    nsrv_buf_append(b, x, 2);
}

void nsrv_buf_append_be32(nsrv_buf_t *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    nsrv_buf_append(b, x, 4);
}

void nsrv_buf_append_i64(nsrv_buf_t *b, int64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    nsrv_buf_append(b, tmp, (size_t)n);
}

void nsrv_buf_printf(nsrv_buf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        nsrv_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void nsrv_buf_put_be32_at(nsrv_buf_t *b, size_t off, uint32_t v) {
    uint8_t *p = (uint8_t *)b->data + off;
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

char *nsrv_buf_steal(nsrv_buf_t *b, size_t *len) {
    char *d = b->data;
    if (len)
        *len = b->len;
    nsrv_buf_init(b);
    return d;
}

int nsrv_reader_be16(nsrv_reader_t *r, uint16_t *v) {
    if (nsrv_reader_left(r) < 2)
        return -EPROTO;
    *v = (uint16_t)((r->p[r->off] << 8) | r->p[r->off + 1]);
    r->off += 2;
    return 0;
}

int nsrv_reader_be32(nsrv_reader_t *r, uint32_t *v) {
    if (nsrv_reader_left(r) < 4)
        return -EPROTO;
    *v = nsrv_load_be32(r->p + r->off);
    r->off += 4;
    return 0;
}

int nsrv_reader_bytes(nsrv_reader_t *r, size_t n, const uint8_t **out) {
    if (nsrv_reader_left(r) < n)
        return -EPROTO;
    *out = r->p + r->off;
    r->off += n;
    return 0;
}
