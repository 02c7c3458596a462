/* SPDX-License-Identifier: Apache-2.0 */
/* Socket addresses from configuration: literal IPv4/IPv6 hosts only (no name lookups). */
#pragma once

#include <sys/socket.h>

/* host is "a.b.c.d" or an IPv6 literal; port 0..65535. Returns 0 or -EINVAL. */
int nsrv_sockaddr_literal(const char *host, int port, struct sockaddr_storage *ss);
