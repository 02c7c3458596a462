/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For the invariant checks (route_check.c, route_body_intern.c): FAIL(fmt, ...)
 * writes why into (why, why_len) when why is not NULL and returns the line's
 * negative number, so a failed check names the rule it broke. Include it only
 * in a .c file whose check functions take char *why, size_t why_len.
 */
#pragma once

#include <stdio.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (why)                                                                                   \
            snprintf(why, why_len, __VA_ARGS__);                                                   \
        return -__LINE__;                                                                          \
    } while (0)
