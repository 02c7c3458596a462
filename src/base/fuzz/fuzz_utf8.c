/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the UTF-8 helpers: replacement always yields valid UTF-8 of
 * the announced length, leaves valid input untouched, and a truncation of
 * valid text never splits a character.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    size_t n = 0;
    char *out = nsrv_utf8_dup(s, size, &n);
    if (n != nsrv_utf8_sanitized_len(s, size) || !nsrv_utf8_valid(out, n))
        abort();
    bool valid = nsrv_utf8_valid(s, size);
    if (valid && (n != size || memcmp(out, s, size) != 0))
        abort();
    if (!valid && n == size && memcmp(out, s, size) == 0)
        abort();
    for (size_t max = 0; max <= n; max += 1 + max / 4) {
        size_t cut = nsrv_utf8_trunc_len(out, n, max);
        if (cut > max || max - cut > 3 || !nsrv_utf8_valid(out, cut))
            abort();
    }
    nsrv_free(out);
    return 0;
}
