/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the lenient JSON reader: any input must parse or fail
 * cleanly; every string that parses must survive a write/parse round trip.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/json.h"

static void check_strings(nsrv_arena_t *a, const nsrv_json_t *v) {
    for (; v; v = v->next) {
        if (v->type == NSRV_JSON_STRING) {
            for (int mode = 0; mode < 2; mode++) {
                nsrv_buf_t b = NSRV_BUF_INIT;
                nsrv_json_write_str(&b, v->str, v->str_len, (nsrv_json_esc_t)mode);
                nsrv_json_t *r = NULL;
                if (nsrv_json_parse(a, b.data, b.len, &r, NULL, 0) != 0)
                    abort();
                /* BROWSER mode maps invalid UTF-8 to U+FFFD, so compare only valid input. */
                if (mode == NSRV_JSON_ESC_DEFAULT &&
                    (r->str_len != v->str_len || memcmp(r->str, v->str, v->str_len) != 0))
                    abort();
                nsrv_buf_deinit(&b);
            }
        }
        check_strings(a, v->child);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_arena_t a;
    nsrv_arena_init(&a, 4096);
    nsrv_json_t *root = NULL;
    char err[64];
    if (nsrv_json_parse(&a, (const char *)data, size, &root, err, sizeof err) == 0)
        check_strings(&a, root);
    nsrv_arena_deinit(&a);
    return 0;
}
