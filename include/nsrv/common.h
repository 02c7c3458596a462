/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared error codes, contracts and small helpers used by every module.
 * Convention: functions return 0 on success and a negative value on error
 * (-errno where one fits, NSRV_E* for protocol outcomes). NSRV_AGAIN (> 0)
 * means "need more input".
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NSRV_AGAIN 1

enum {
    NSRV_EFRAME = -9001,   /* malformed frame (length fields) */
    NSRV_EHEADER = -9002,  /* malformed header (JSON or binary) */
    NSRV_ESERTYPE = -9003, /* unknown serialize type byte */
    NSRV_EJSON = -9004,    /* malformed JSON text */
    NSRV_EBODY = -9005,    /* malformed request body */
    NSRV_ECRC = -9006,     /* body CRC mismatch */
    NSRV_ECONFIG = -9007,  /* bad configuration value */
    NSRV_ETOOBIG = -9008,  /* input above a configured cap */

    /* Gossip rejection reasons (proto/gossip.md): the negative return codes of
     * the gossip decoders and of nsrv_gossip_peer_check, in counter order
     * (nsrv_gossip_reason_index). */
    NSRV_GOSSIP_ESIZE = -9101,        /* length outside [min, budget] */
    NSRV_GOSSIP_EVERSION = -9102,     /* ver != 1 */
    NSRV_GOSSIP_ECLUSTER = -9103,     /* another cluster's packet */
    NSRV_GOSSIP_EUNKNOWN_SRC = -9104, /* src is not a configured peer */
    NSRV_GOSSIP_ESRC_ADDR = -9105,    /* source IP differs from the peer's */
    NSRV_GOSSIP_EKEY_ID = -9106,      /* key_id not configured for src */
    NSRV_GOSSIP_EDST = -9107,         /* dst is neither us nor 255 */
    NSRV_GOSSIP_ESTALE_TIME = -9108,  /* |now_wall - wall_ms| > skew */
    NSRV_GOSSIP_EOLD_INC = -9109,     /* src_inc < the peer's incarnation */
    NSRV_GOSSIP_EFUTURE_INC = -9110,  /* src_inc > now_wall + 24 h */
    NSRV_GOSSIP_EREPLAY = -9111,      /* seq seen, or behind the window */
    NSRV_GOSSIP_EBAD_SIG = -9112,     /* signature does not verify */
    NSRV_GOSSIP_EDECODE = -9113,      /* malformed msgpack or body */
    NSRV_GOSSIP_ETYPE = -9114,        /* unknown type, or wrong transport */
};

/* Text for 0, any NSRV_E* or NSRV_GOSSIP_E* code, or a negative errno. */
const char *nsrv_strerror(int err);

/*
 * Formats a message into err[0..err_len) when err is not NULL and err_len > 0,
 * and returns rc: `return nsrv_fail(err, err_len, -EINVAL, "bad %s", what);`.
 */
int nsrv_fail(char *err, size_t err_len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define NSRV_MIN(a, b) ((a) < (b) ? (a) : (b))
#define NSRV_MAX(a, b) ((a) > (b) ? (a) : (b))
#define NSRV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NSRV_UNUSED(x) ((void)(x))

/* Puts node first in an intrusive doubly linked list (head, prevf, nextf as below). */
#define NSRV_DLIST_PUSH(head, node, prevf, nextf)                                                  \
    do {                                                                                           \
        (node)->prevf = NULL;                                                                      \
        (node)->nextf = (head);                                                                    \
        if (head)                                                                                  \
            (head)->prevf = (node);                                                                \
        (head) = (node);                                                                           \
    } while (0)

/* Unlinks node from an intrusive doubly linked list: head is the list's first-element
 * pointer (an lvalue), prevf/nextf the node's link fields. */
#define NSRV_DLIST_UNLINK(head, node, prevf, nextf)                                                \
    do {                                                                                           \
        if ((node)->prevf)                                                                         \
            (node)->prevf->nextf = (node)->nextf;                                                  \
        else                                                                                       \
            (head) = (node)->nextf;                                                                \
        if ((node)->nextf)                                                                         \
            (node)->nextf->prevf = (node)->prevf;                                                  \
    } while (0)

/* A queue: an intrusive doubly linked list with its last element too (head and tail are
 * lvalues). Appends node at the tail. */
#define NSRV_QUEUE_APPEND(head, tail, node, prevf, nextf)                                          \
    do {                                                                                           \
        (node)->nextf = NULL;                                                                      \
        (node)->prevf = (tail);                                                                    \
        if (tail)                                                                                  \
            (tail)->nextf = (node);                                                                \
        else                                                                                       \
            (head) = (node);                                                                       \
        (tail) = (node);                                                                           \
    } while (0)

/* Unlinks node from a queue (NSRV_QUEUE_APPEND). */
#define NSRV_QUEUE_UNLINK(head, tail, node, prevf, nextf)                                          \
    do {                                                                                           \
        if (!(node)->nextf)                                                                        \
            (tail) = (node)->prevf;                                                                \
        NSRV_DLIST_UNLINK(head, node, prevf, nextf);                                               \
    } while (0)

/* A contract on the caller; never use it on anything derived from input. */
#define NSRV_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);         \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A borrowed byte string: not NUL-terminated unless stated. */
typedef struct {
    const char *ptr;
    size_t len;
} nsrv_str_t;

#define NSRV_STR_NULL ((nsrv_str_t){NULL, 0})
#define NSRV_STR_LIT(s) ((nsrv_str_t){(s), sizeof(s) - 1})

static inline nsrv_str_t nsrv_str_c(const char *s) {
    nsrv_str_t r = {s, 0};
    if (s) {
        const char *p = s;
        while (*p)
            p++;
        r.len = (size_t)(p - s);
    }
    return r;
}

bool nsrv_str_eq(nsrv_str_t a, nsrv_str_t b);
bool nsrv_str_eq_c(nsrv_str_t a, const char *c);

/* Monotonic and wall clocks in milliseconds. */
uint64_t nsrv_now_mono_ms(void);
/* The monotonic clock in nanoseconds (the clock nsrv_now_mono_ms reads), so one reading
 * can serve both a latency and a millisecond timestamp. */
uint64_t nsrv_now_mono_ns(void);
static inline uint64_t nsrv_mono_ns_to_ms(uint64_t ns) {
    return ns / 1000000u;
}
int64_t nsrv_now_wall_ms(void);
