/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable byte buffer (writer) and bounds-checked reader for wire data.
 * The writer keeps a NUL after the data so text can be used as a C string.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} nsrv_buf_t;

#define NSRV_BUF_INIT                                                                              \
    { NULL, 0, 0 }

void nsrv_buf_init(nsrv_buf_t *b);
void nsrv_buf_deinit(nsrv_buf_t *b);
void nsrv_buf_reset(nsrv_buf_t *b); /* len = 0, keeps capacity */
void nsrv_buf_reserve(nsrv_buf_t *b, size_t extra);
void nsrv_buf_append(nsrv_buf_t *b, const void *p, size_t n);
void nsrv_buf_append_c(nsrv_buf_t *b, const char *s);
void nsrv_buf_append_ch(nsrv_buf_t *b, char c);
/* The separator of a JSON list or object: ',' unless *first (the first item), then clears it. */
void nsrv_buf_append_sep(nsrv_buf_t *b, bool *first);
void nsrv_buf_append_u8(nsrv_buf_t *b, uint8_t v);
void nsrv_buf_append_be16(nsrv_buf_t *b, uint16_t v);
void nsrv_buf_append_be32(nsrv_buf_t *b, uint32_t v);
void nsrv_buf_append_i64(nsrv_buf_t *b, int64_t v); /* decimal text */
void nsrv_buf_printf(nsrv_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nsrv_buf_put_be32_at(nsrv_buf_t *b, size_t off, uint32_t v);
/* Detaches the storage; the caller frees it with nsrv_free. */
char *nsrv_buf_steal(nsrv_buf_t *b, size_t *len);

typedef struct {
    const uint8_t *p;
    size_t len;
    size_t off;
} nsrv_reader_t;

static inline void nsrv_reader_init(nsrv_reader_t *r, const void *p, size_t len) {
    r->p = (const uint8_t *)p;
    r->len = len;
    r->off = 0;
}
static inline size_t nsrv_reader_left(const nsrv_reader_t *r) {
    return r->len - r->off;
}
/* Each returns 0, or -EPROTO on a short read (nothing consumed). */
int nsrv_reader_be16(nsrv_reader_t *r, uint16_t *v);
int nsrv_reader_be32(nsrv_reader_t *r, uint32_t *v);
int nsrv_reader_bytes(nsrv_reader_t *r, size_t n, const uint8_t **out);

static inline uint32_t nsrv_load_be32(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static inline void nsrv_store_be32(void *p, uint32_t v) {
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}
