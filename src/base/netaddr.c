/* SPDX-License-Identifier: Apache-2.0 */
/* Literal socket addresses for the listeners (include/nsrv/netaddr.h). */
#include "nsrv/netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

int nsrv_sockaddr_literal(const char *host, int port, struct sockaddr_storage *ss) {
    if (!host || port < 0 || port > 65535)
        return -EINVAL;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        return 0;
    }
    return -EINVAL;
}
