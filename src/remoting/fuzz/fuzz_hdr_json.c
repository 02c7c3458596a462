/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the input is a JSON command header. It is framed with type 0
 * and decoded; what decodes must round-trip through the fastjson-form encoder
 * (fuzz_common.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 4096);
    fuzz_header_as(NSRV_SER_JSON, data, size, &arena);
    nsrv_arena_deinit(&arena);
    return 0;
}
