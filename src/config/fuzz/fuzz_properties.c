/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the java.util.Properties reader with arbitrary bytes, then checks the
 * writer's promise: everything parsed, written back escaped and re-parsed,
 * gives exactly the same keys and values in the same order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/buf.h"
#include "nsrv/properties.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_props_t a = NSRV_PROPS_INIT, b = NSRV_PROPS_INIT;
    char err[128];
    if (nsrv_props_parse((const char *)data, size, &a, err, sizeof err) == 0) {
        nsrv_buf_t out = NSRV_BUF_INIT;
        for (size_t i = 0; i < a.count; i++)
            nsrv_props_write_escaped(&out, a.items[i].key, a.items[i].value);
        if (nsrv_props_parse(out.data ? out.data : "", out.len, &b, err, sizeof err) != 0)
            abort();
        if (b.count != a.count)
            abort();
        for (size_t i = 0; i < a.count; i++) {
            if (strcmp(a.items[i].key, b.items[i].key) != 0 ||
                strcmp(a.items[i].value, b.items[i].value) != 0)
                abort();
            if (!nsrv_props_get(&b, a.items[i].key))
                abort();
        }
        nsrv_buf_deinit(&out);
    }
    nsrv_props_free(&a);
    nsrv_props_free(&b);
    return 0;
}
