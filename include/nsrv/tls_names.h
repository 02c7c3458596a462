/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The values of the TLS keys that take a word (Java's TlsMode and the
 * tls.server.need.client.auth values, docs/design/tls-and-access.md "TLS"), shared by the config
 * validation and the TLS layer.
 */
#pragma once

#include <strings.h>

typedef enum { NSRV_TLS_DISABLED, NSRV_TLS_PERMISSIVE, NSRV_TLS_ENFORCING } nsrv_tls_mode_t;
typedef enum { NSRV_TLS_AUTH_NONE, NSRV_TLS_AUTH_OPTIONAL, NSRV_TLS_AUTH_REQUIRE } nsrv_tls_auth_t;

/* Java's TlsMode.parse: the name in any case; -1 if unknown. */
static inline int nsrv_tls_mode_parse(const char *s) {
    if (strcasecmp(s, "disabled") == 0)
        return NSRV_TLS_DISABLED;
    if (strcasecmp(s, "permissive") == 0)
        return NSRV_TLS_PERMISSIVE;
    if (strcasecmp(s, "enforcing") == 0)
        return NSRV_TLS_ENFORCING;
    return -1;
}

/* Java's TlsHelper.parseClientAuthMode: none, optional or require in any case; -1 if unknown. */
static inline int nsrv_tls_auth_parse(const char *s) {
    if (strcasecmp(s, "none") == 0)
        return NSRV_TLS_AUTH_NONE;
    if (strcasecmp(s, "optional") == 0)
        return NSRV_TLS_AUTH_OPTIONAL;
    if (strcasecmp(s, "require") == 0)
        return NSRV_TLS_AUTH_REQUIRE;
    return -1;
}
