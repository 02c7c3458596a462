/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket addresses: literal IPv4/IPv6 hosts only (no name lookups), the
 * "host:port" text form of configuration and command lines, and the text
 * form of an address for logs.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for "[ffff:...:255.255.255.255]:65535" and the NUL. */
#define NSRV_SOCKADDR_TEXT_MAX 56

/* host is "a.b.c.d" or an IPv6 literal; port 0..65535. Returns 0 or -EINVAL. */
int nsrv_sockaddr_literal(const char *host, int port, struct sockaddr_storage *ss);

/*
 * Splits "host:port" at its last ':', or "[host]:port" (brackets removed).
 * The host must be non-empty and shorter than host_cap (it is copied with a
 * NUL); the port is 1..65535 in plain digits. Returns 0 or -EINVAL.
 */
int nsrv_hostport_split(const char *s, char *host, size_t host_cap, uint16_t *port);

/*
 * "a.b.c.d:port" or "[v6]:port" to an address: an IPv4 literal unbracketed, an
 * IPv6 literal in brackets, port 1..65535. Returns 0 (ss, len set) or -EINVAL.
 */
int nsrv_sockaddr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* "a.b.c.d:port", "[v6]:port", or "?" for another family; always NUL-terminated. */
void nsrv_sockaddr_format(const struct sockaddr *sa, char *buf, size_t cap);

/* The address's IP alone, "a.b.c.d" or "v6", an IPv4-mapped IPv6 address as the IPv4 it
 * stands for (what a dual-stack socket reports for an IPv4 peer), or "?" for another family
 * or NULL; always NUL-terminated. */
void nsrv_sockaddr_host(const struct sockaddr *sa, char *buf, size_t cap);

/* "host:port", "[host]:port" for a host with a ':' (an IPv6 literal); always NUL-terminated. */
void nsrv_hostport_format(const char *host, unsigned port, char *buf, size_t cap);
