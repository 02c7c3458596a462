/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the kvConfig.json loader (nsrv__kv_load_text): any input must either
 * be rejected cleanly or load into a table whose encoding reloads to exactly
 * the same encoding (abort otherwise), so what we write we can always read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/kv.h"

#include "../kv_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_kv_t *kv = nsrv_kv_create(NULL);
    char err[128];
    if (nsrv__kv_load_text(kv, (const char *)data, size, err, sizeof err) == 0) {
        nsrv_buf_t a = NSRV_BUF_INIT, b = NSRV_BUF_INIT;
        nsrv_kv_encode_file(kv, &a);
        nsrv_kv_t *again = nsrv_kv_create(NULL);
        int rc = nsrv__kv_load_text(again, a.data, a.len, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "own encoding rejected: %s\n", err);
            abort();
        }
        nsrv_kv_encode_file(again, &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
            fprintf(stderr, "encoding does not round-trip:\n%s\n%s\n", a.data, b.data);
            abort();
        }
        /* Every namespace the file names must also encode as a KVTable. */
        nsrv_buf_reset(&b);
        for (const nsrv_kv_ns_t *n = kv->table; n; n = n->hh.next) {
            if (memchr(n->name, '\0', n->name_len) == NULL &&
                !nsrv_kv_encode_namespace(kv, n->name, &b))
                abort();
        }
        nsrv_kv_destroy(&again);
        nsrv_buf_deinit(&a);
        nsrv_buf_deinit(&b);
    }
    nsrv_kv_destroy(&kv);
    return 0;
}
