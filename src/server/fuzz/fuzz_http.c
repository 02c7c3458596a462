/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the status endpoint's request parser. */
#include <stdint.h>
#include <stdlib.h>

#include "nsrv/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_http_req_t r;
    if (nsrv_http_parse_request((const char *)data, size, &r) == 0) {
        /* What it returns must lie inside the input. */
        const char *b = (const char *)data, *e = b + size;
        if (r.path < b || r.path + r.path_len > e || r.method != b || r.path[0] != '/')
            abort();
    }
    return 0;
}
