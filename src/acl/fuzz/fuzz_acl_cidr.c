/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target for the allow-list text (adminAllowList, brokerAllowList). */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nsrv_cidr_list_t l;
    char err[256];
    if (nsrv_cidr_list_parse((const char *)data, size, &l, err, sizeof err) != 0) {
        if (l.v || l.n || !memchr(err, '\0', sizeof err))
            abort();
        return 0;
    }
    /* Every rule is a network address: its own address matches it. */
    for (size_t i = 0; i < l.n; i++) {
        if (l.v[i].prefix > 128)
            abort();
        struct sockaddr_in6 a;
        memset(&a, 0, sizeof a);
        a.sin6_family = AF_INET6;
        memcpy(&a.sin6_addr, l.v[i].addr, 16);
        if (!nsrv_cidr_list_match(&l, (const struct sockaddr *)&a))
            abort();
    }
    nsrv_cidr_list_free(&l);
    return 0;
}
