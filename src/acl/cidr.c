/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CIDR allow lists (adminAllowList, brokerAllowList): parsing the
 * comma-separated text and matching a peer address. Every rule is held as a
 * 128-bit IPv6 prefix, IPv4 ones IPv4-mapped, so one compare serves both
 * families and an IPv4 client on a dual-stack listener (::ffff:a.b.c.d)
 * matches the IPv4 rules written for it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/acl.h"
#include "nsrv/alloc.h"

/* Longer than any IPv6 literal with a /128; a longer entry is an error anyway. */
#define ENTRY_MAX 64

static const uint8_t V4_MAPPED[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

/* "0".."max" in plain digits, at most three of them. */
static bool parse_prefix(const char *s, size_t len, unsigned max, unsigned *out) {
    if (len == 0 || len > 3)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

static bool host_bits_zero(const uint8_t a[16], unsigned prefix) {
    for (unsigned bit = prefix; bit < 128; bit++)
        if (a[bit / 8] & (0x80u >> (bit % 8)))
            return false;
    return true;
}

/* One trimmed, non-empty entry into *r; on error a message in err. */
static int parse_entry(const char *s, size_t len, nsrv_cidr_t *r, char *err, size_t err_cap) {
    char text[ENTRY_MAX + 1];
    if (len > ENTRY_MAX) {
        snprintf(err, err_cap, "entry '%.*s...' is too long for an address", 20, s);
        return -1;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    char *slash = strchr(text, '/');
    if (slash)
        *slash = '\0';
    bool v6 = strchr(text, ':') != NULL;
    memset(r, 0, sizeof *r);
    if (v6) {
        if (inet_pton(AF_INET6, text, r->addr) != 1)
            goto bad_addr;
    } else {
        memcpy(r->addr, V4_MAPPED, sizeof V4_MAPPED);
        if (inet_pton(AF_INET, text, r->addr + 12) != 1)
            goto bad_addr;
    }
    unsigned prefix = v6 ? 128 : 32;
    if (slash && !parse_prefix(slash + 1, strlen(slash + 1), prefix, &prefix)) {
        snprintf(err, err_cap, "entry '%.*s': the prefix length must be 0..%d", (int)len, s,
                 v6 ? 128 : 32);
        return -1;
    }
    r->prefix = (uint8_t)(v6 ? prefix : 96 + prefix);
    if (!host_bits_zero(r->addr, r->prefix)) {
        snprintf(err, err_cap,
                 "entry '%.*s' has address bits set past its prefix (write the network address)",
                 (int)len, s);
        return -1;
    }
    return 0;
bad_addr:
    snprintf(err, err_cap, "entry '%.*s' is not an IPv4 or IPv6 address (a.b.c.d/n or x:y::/n)",
             (int)len, s);
    return -1;
}

int nsrv_cidr_list_parse(const char *text, size_t len, nsrv_cidr_list_t *out, char *err,
                         size_t err_cap) {
    out->v = NULL;
    out->n = 0;
    size_t blank = 0;
    while (blank < len && is_blank(text[blank]))
        blank++;
    if (blank == len)
        return 0;
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == ',';
    out->v = nsrv_calloc(cap, sizeof *out->v);
    size_t pos = 0;
    for (size_t k = 0; k < cap; k++) {
        size_t end = pos;
        while (end < len && text[end] != ',')
            end++;
        size_t a = pos, b = end;
        while (a < b && is_blank(text[a]))
            a++;
        while (b > a && is_blank(text[b - 1]))
            b--;
        if (a == b) {
            snprintf(err, err_cap, "entry %zu is empty", k + 1);
            goto fail;
        }
        if (memchr(text + a, '\0', b - a)) {
            snprintf(err, err_cap, "entry %zu contains a NUL byte", k + 1);
            goto fail;
        }
        if (parse_entry(text + a, b - a, &out->v[out->n], err, err_cap) != 0)
            goto fail;
        out->n++;
        pos = end + 1;
    }
    return 0;
fail:
    nsrv_cidr_list_free(out);
    return -1;
}

void nsrv_cidr_list_free(nsrv_cidr_list_t *l) {
    nsrv_free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool prefix_match(const uint8_t a[16], const nsrv_cidr_t *r) {
    unsigned whole = r->prefix / 8, rest = r->prefix % 8;
    if (memcmp(a, r->addr, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[whole] & mask) == r->addr[whole];
}

bool nsrv_cidr_list_match(const nsrv_cidr_list_t *l, const struct sockaddr *sa) {
    uint8_t a[16];
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        memcpy(a, V4_MAPPED, sizeof V4_MAPPED);
        memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    } else {
        return false;
    }
    for (size_t i = 0; i < l->n; i++)
        if (prefix_match(a, &l->v[i]))
            return true;
    return false;
}
