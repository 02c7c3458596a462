/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared round-trip oracle for the remoting fuzz targets: a command that
 * decoded must encode, decode again to the same command (modulo the
 * documented normalisations) and re-encode to identical bytes. Any mismatch
 * aborts so libFuzzer (and the ctest replay) reports it.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/remoting.h"
#include "nsrv/utf8.h"
#include "fuzz_check.h"

static inline bool fuzz_str_same(nsrv_str_t a, nsrv_str_t b) {
    return nsrv_str_eq(a, b);
}

/* What a decoded command a must look like after encode+decode (b). */
static inline void fuzz_check_same(const nsrv_cmd_t *a, const nsrv_cmd_t *b) {
    FUZZ_CHECK(a->code == b->code);
    /* An unknown language (-1) is omitted in JSON / written as JAVA in binary. */
    int32_t lang = nsrv_language_name(a->language) ? a->language : NSRV_LANG_JAVA;
    FUZZ_CHECK(lang == b->language);
    FUZZ_CHECK(a->version == b->version);
    FUZZ_CHECK(a->opaque == b->opaque);
    FUZZ_CHECK(a->flag == b->flag);
    FUZZ_CHECK(fuzz_str_same(a->remark, b->remark));
    /* A binary map whose entries were all dropped re-encodes as E = 0. */
    bool has_ext = a->ser_type == NSRV_SER_ROCKETMQ ? a->has_ext && a->n_ext > 0 : a->has_ext;
    FUZZ_CHECK(has_ext == b->has_ext);
    FUZZ_CHECK(a->n_ext == b->n_ext);
    for (size_t i = 0; i < a->n_ext; i++) {
        FUZZ_CHECK(fuzz_str_same(a->ext[i].key, b->ext[i].key));
        FUZZ_CHECK(fuzz_str_same(a->ext[i].val, b->ext[i].val));
        FUZZ_CHECK(b->ext[i].key.ptr[b->ext[i].key.len] == '\0');
        FUZZ_CHECK(b->ext[i].val.ptr[b->ext[i].val.len] == '\0');
    }
    FUZZ_CHECK(a->body_len == b->body_len);
    FUZZ_CHECK(a->body_len == 0 || memcmp(a->body, b->body, a->body_len) == 0);
    FUZZ_CHECK(a->ser_type == b->ser_type);
}

/* Every decoded string is valid UTF-8, whatever the bytes were (proto/remoting.md §6a). */
static inline void fuzz_check_utf8(const nsrv_cmd_t *c) {
    FUZZ_CHECK(!c->remark.ptr || nsrv_utf8_valid(c->remark.ptr, c->remark.len));
    for (size_t i = 0; i < c->n_ext; i++) {
        FUZZ_CHECK(nsrv_utf8_valid(c->ext[i].key.ptr, c->ext[i].key.len));
        FUZZ_CHECK(nsrv_utf8_valid(c->ext[i].val.ptr, c->ext[i].val.len));
    }
}

static inline void fuzz_roundtrip(const nsrv_cmd_t *c1, nsrv_arena_t *arena) {
    fuzz_check_utf8(c1);
    /* Lookups must be safe on whatever decoded, and the last duplicate wins. */
    (void)nsrv_cmd_ext(c1, "topic");
    if (c1->n_ext) {
        const nsrv_ext_field_t *last = &c1->ext[c1->n_ext - 1];
        if (!memchr(last->key.ptr, 0, last->key.len))
            FUZZ_CHECK(nsrv_cmd_ext(c1, last->key.ptr).ptr == last->val.ptr);
    }

    nsrv_buf_t e1 = NSRV_BUF_INIT, e2 = NSRV_BUF_INIT;
    int rc = nsrv_cmd_encode(&e1, c1);
    if (rc == NSRV_ETOOBIG) {
        nsrv_buf_deinit(&e1);
        return;
    }
    FUZZ_CHECK(rc == 0);
    size_t flen = 0;
    FUZZ_CHECK(nsrv_frame_peek((const uint8_t *)e1.data, e1.len, SIZE_MAX, &flen) == 0);
    FUZZ_CHECK(flen == e1.len);
    nsrv_cmd_t c2;
    rc = nsrv_cmd_decode((const uint8_t *)e1.data, e1.len, arena, &c2);
    if (rc != 0)
        fprintf(stderr, "re-decode failed (%d): %.*s\n", rc, (int)NSRV_MIN(e1.len, 2000), e1.data);
    FUZZ_CHECK(rc == 0);
    fuzz_check_same(c1, &c2);
    FUZZ_CHECK(nsrv_cmd_encode(&e2, &c2) == 0);
    /* e1 and e2 differ only where c1 needed the normalisations above... */
    bool normal = nsrv_language_name(c1->language) &&
                  !(c1->ser_type == NSRV_SER_ROCKETMQ && c1->has_ext && c1->n_ext == 0);
    bool same = e1.len == e2.len && memcmp(e1.data, e2.data, e1.len) == 0;
    FUZZ_CHECK(same || !normal);
    /* ...and after one pass the encoding is a fixed point. */
    if (!same) {
        nsrv_buf_t e3 = NSRV_BUF_INIT;
        nsrv_cmd_t c3;
        FUZZ_CHECK(nsrv_cmd_decode((const uint8_t *)e2.data, e2.len, arena, &c3) == 0);
        fuzz_check_same(&c2, &c3);
        FUZZ_CHECK(nsrv_cmd_encode(&e3, &c3) == 0);
        FUZZ_CHECK(e3.len == e2.len && memcmp(e3.data, e2.data, e2.len) == 0);
        nsrv_buf_deinit(&e3);
    }
    nsrv_buf_deinit(&e1);
    nsrv_buf_deinit(&e2);
}

/* Wraps p[0..len) as the header of a frame of the given type and runs the
 * decoder (and the round trip when it decodes). */
static inline void fuzz_header_as(uint8_t type, const uint8_t *p, size_t len, nsrv_arena_t *arena) {
    if (len > NSRV_HDR_LEN_MAX)
        return;
    nsrv_buf_t f = NSRV_BUF_INIT;
    nsrv_buf_append_be32(&f, (uint32_t)(4 + len));
    nsrv_buf_append_be32(&f, ((uint32_t)type << 24) | (uint32_t)len);
    nsrv_buf_append(&f, p, len);
    nsrv_cmd_t c;
    int rc = nsrv_cmd_decode((const uint8_t *)f.data, f.len, arena, &c);
    FUZZ_CHECK(rc == 0 || rc == NSRV_EHEADER);
    if (rc == 0)
        fuzz_roundtrip(&c, arena);
    nsrv_buf_deinit(&f);
    nsrv_arena_reset(arena);
}
