/* SPDX-License-Identifier: Apache-2.0 */
/* Error strings, string comparison and clocks. */
#include "nsrv/common.h"

#include <string.h>
#include <time.h>

const char *nsrv_strerror(int err) {
    switch (err) {
    case 0:
        return "ok";
    case NSRV_EFRAME:
        return "malformed frame";
    case NSRV_EHEADER:
        return "malformed header";
    case NSRV_ESERTYPE:
        return "unknown serialize type";
    case NSRV_EJSON:
        return "malformed JSON";
    case NSRV_EBODY:
        return "malformed body";
    case NSRV_ECRC:
        return "crc32 not match";
    case NSRV_ECONFIG:
        return "bad configuration";
    case NSRV_ETOOBIG:
        return "input too large";
    default:
        return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
    }
}

bool nsrv_str_eq(nsrv_str_t a, nsrv_str_t b) {
    if (a.ptr == NULL || b.ptr == NULL)
        return a.ptr == b.ptr;
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool nsrv_str_eq_c(nsrv_str_t a, const char *c) {
    return nsrv_str_eq(a, nsrv_str_c(c));
}

uint64_t nsrv_now_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t nsrv_now_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
