/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the lenient JSON reader: any input must parse or fail
 * cleanly; every string in a parsed tree (keys too) is valid UTF-8, holds no
 * NUL unless NSRV_JSON_KEEP_NUL was given, and survives a write/parse round
 * trip exactly in both escaping modes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/json.h"
#include "nsrv/utf8.h"

static void check_text(nsrv_arena_t *a, const char *s, size_t len, unsigned flags) {
    if (!nsrv_utf8_valid(s, len) || s[len] != '\0')
        abort();
    if (!(flags & NSRV_JSON_KEEP_NUL) && memchr(s, '\0', len))
        abort();
    for (int mode = 0; mode < 2; mode++) {
        nsrv_buf_t b = NSRV_BUF_INIT;
        nsrv_json_write_str(&b, s, len, (nsrv_json_esc_t)mode);
        if (!nsrv_utf8_valid(b.data, b.len))
            abort();
        nsrv_json_t *r = NULL;
        if (nsrv_json_parse_opts(a, b.data, b.len, flags, &r, NULL, 0) != 0)
            abort();
        if (r->str_len != len || memcmp(r->str, s, len) != 0)
            abort();
        nsrv_buf_deinit(&b);
    }
}

static void check_strings(nsrv_arena_t *a, const nsrv_json_t *v, unsigned flags) {
    for (; v; v = v->next) {
        if (v->key)
            check_text(a, v->key, v->key_len, flags);
        if (v->type == NSRV_JSON_STRING)
            check_text(a, v->str, v->str_len, flags);
        check_strings(a, v->child, flags);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (unsigned flags = 0; flags <= NSRV_JSON_KEEP_NUL; flags++) {
        nsrv_arena_t a;
        nsrv_arena_init(&a, 4096);
        nsrv_json_t *root = NULL;
        char err[64];
        if (nsrv_json_parse_opts(&a, (const char *)data, size, flags, &root, err, sizeof err) == 0)
            check_strings(&a, root, flags);
        nsrv_arena_deinit(&a);
    }
    return 0;
}
