/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for `nsrvd status`: what it does with a node's /status reply (outside bytes). */
#include <stdint.h>
#include <stdio.h>

#include "nsrv/status_cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (!sink)
        return 0;
    /* The first byte picks the output mode, the rest is the reply. */
    bool json = size > 0 && (data[0] & 1);
    const char *reply = size ? (const char *)data + 1 : "";
    size_t len = size ? size - 1 : 0;
    nsrv_status_cli_render(reply, len, json, sink, sink, "fuzz");
    return 0;
}
