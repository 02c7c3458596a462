/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The invariant check of the fuzz targets: a broken invariant aborts, so
 * libFuzzer and the ctest corpus replay both report it with the condition.
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
