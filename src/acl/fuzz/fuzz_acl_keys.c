/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the adminAclFile contents. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_acl_keys_t *k = NULL;
    char err[256];
    if (nsrv_acl_keys_parse((const char *)data, size, &k, err, sizeof err) != 0) {
        if (k || !memchr(err, '\0', sizeof err))
            abort();
        return 0;
    }
    /* An accepted file has at most one key per line, each non-empty. */
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (nsrv_acl_keys_count(k) > lines)
        abort();
    nsrv_acl_keys_free(&k);
    return 0;
}
