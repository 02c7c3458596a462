/* SPDX-License-Identifier: Apache-2.0 */
/* Error strings, string comparison and clocks. */
#include "nsrv/common.h"

#include <stdarg.h>
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
    case NSRV_GOSSIP_ESIZE:
        return "gossip datagram size out of bounds";
    case NSRV_GOSSIP_EVERSION:
        return "unknown gossip version";
    case NSRV_GOSSIP_ECLUSTER:
        return "gossip from another cluster";
    case NSRV_GOSSIP_EUNKNOWN_SRC:
        return "gossip from an unknown node";
    case NSRV_GOSSIP_ESRC_ADDR:
        return "gossip from an unexpected address";
    case NSRV_GOSSIP_EKEY_ID:
        return "gossip signed with an unknown key";
    case NSRV_GOSSIP_EDST:
        return "gossip for another node";
    case NSRV_GOSSIP_ESTALE_TIME:
        return "gossip clock skew too large";
    case NSRV_GOSSIP_EOLD_INC:
        return "gossip from an old incarnation";
    case NSRV_GOSSIP_EFUTURE_INC:
        return "gossip incarnation in the future";
    case NSRV_GOSSIP_EREPLAY:
        return "gossip replay";
    case NSRV_GOSSIP_EBAD_SIG:
        return "bad gossip signature";
    case NSRV_GOSSIP_EDECODE:
        return "malformed gossip message";
    case NSRV_GOSSIP_ETYPE:
        return "unexpected gossip message type";
    default:
        return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
    }
}

int nsrv_fail(char *err, size_t err_len, int rc, const char *fmt, ...) {
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

bool nsrv_str_eq(nsrv_str_t a, nsrv_str_t b) {
    if (a.ptr == NULL || b.ptr == NULL)
        return a.ptr == b.ptr;
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool nsrv_str_eq_c(nsrv_str_t a, const char *c) {
    return nsrv_str_eq(a, nsrv_str_c(c));
}

uint64_t nsrv_now_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t nsrv_now_mono_ms(void) {
    return nsrv_mono_ns_to_ms(nsrv_now_mono_ns());
}

int64_t nsrv_now_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
