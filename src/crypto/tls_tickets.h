/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS 1.3 session tickets (docs/design/tls-and-access.md "Session resumption"): the keys
 * that seal them, held in memory only, one ring per OpenSSL context (so a SIGHUP reload,
 * which builds a new context, invalidates every ticket issued before it), rotated once a
 * ticket lifetime has passed. The ring's clock is an argument so the unit test can run it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nsrv/tls.h"

#define NSRV_TICKET_NAME_LEN 16
#define NSRV_TICKET_SECRET_LEN 32

typedef struct {
    unsigned char name[NSRV_TICKET_NAME_LEN];
    unsigned char aes[NSRV_TICKET_SECRET_LEN];
    unsigned char hmac[NSRV_TICKET_SECRET_LEN];
    uint64_t born_ms;
} nsrv_ticket_key_t;

typedef struct nsrv_ticket_ring nsrv_ticket_ring_t;

/* A ring with one fresh random key; NULL when the random generator fails. */
nsrv_ticket_ring_t *nsrv__ticket_ring_new(uint32_t lifetime_s, uint64_t now_ms);
void nsrv__ticket_ring_free(nsrv_ticket_ring_t *r);

/* The key a ticket issued now is sealed with (a copy). The current key is retired to
 * "previous" once it is a lifetime old, and the previous one forgotten: every ticket it
 * sealed has expired by then. */
void nsrv__ticket_ring_issue(nsrv_ticket_ring_t *r, uint64_t now_ms, nsrv_ticket_key_t *out);

/* The key named `name`, if the ring still holds it; *renew: it is the previous key, so the
 * client should get a ticket under the current one. */
bool nsrv__ticket_ring_find(nsrv_ticket_ring_t *r, const unsigned char *name, uint64_t now_ms,
                            nsrv_ticket_key_t *out, bool *renew);

/* Session tickets on ctx: lifetime_s > 0 issues one TLS 1.3 ticket per handshake, valid that
 * many seconds, sealed by a ring of ctx's own; 0 issues none. -1: the ring could not be made. */
int nsrv__tickets_setup(nsrv_ssl_ctx_t *ctx, uint32_t lifetime_s);
