/* SPDX-License-Identifier: Apache-2.0 */
/* Socket addresses and their text forms (include/nsrv/netaddr.h). */
#include "nsrv/netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/text.h"

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

int nsrv_hostport_split(const char *s, char *host, size_t host_cap, uint16_t *port) {
    if (!s)
        return -EINVAL;
    const char *h = s, *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -EINVAL;
        hlen = (size_t)(colon - s);
    }
    size_t plen = strlen(colon + 1);
    uint64_t p;
    if (hlen == 0 || hlen >= host_cap || plen > 5 || !nsrv_parse_uint(colon + 1, plen, 65535, &p) ||
        p == 0)
        return -EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t)p;
    return 0;
}

int nsrv_sockaddr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len) {
    char host[64];
    uint16_t port;
    if (nsrv_hostport_split(s, host, sizeof host, &port) != 0)
        return -EINVAL;
    bool v6 = s[0] == '[';
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return -EINVAL;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        *len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return -EINVAL;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        *len = sizeof *a;
    }
    return 0;
}

void nsrv_sockaddr_host(const struct sockaddr *sa, char *buf, size_t cap) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6))
            inet_ntop(AF_INET, &a6->s6_addr[12], ip, sizeof ip);
        else
            inet_ntop(AF_INET6, a6, ip, sizeof ip);
    }
    snprintf(buf, cap, "%s", ip);
}

void nsrv_hostport_format(const char *host, unsigned port, char *buf, size_t cap) {
    snprintf(buf, cap, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

void nsrv_sockaddr_format(const struct sockaddr *sa, char *buf, size_t cap) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        snprintf(buf, cap, "%s:%u", ip, (unsigned)ntohs(s4->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
        snprintf(buf, cap, "[%s]:%u", ip, (unsigned)ntohs(s6->sin6_port));
    } else {
        snprintf(buf, cap, "?");
    }
}
