/* SPDX-License-Identifier: Apache-2.0 */
/* Reference-counted immutable bytes (include/nsrv/rcbuf.h). */
#include "nsrv/rcbuf.h"

#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"

nsrv_rcbuf_t *nsrv_rcbuf_new(const void *p, size_t len) {
    nsrv_rcbuf_t *b = nsrv_malloc(sizeof *b + len + 1);
    b->refs = 1;
    b->hash = 0;
    b->pool = NULL;
    b->len = len;
    if (len)
        memcpy(b->data, p, len);
    b->data[len] = '\0';
    return b;
}

void nsrv_rcbuf_unref(nsrv_rcbuf_t *b) {
    if (!b)
        return;
    NSRV_REQUIRE(b->refs > 0);
    if (--b->refs == 0)
        nsrv_free(b);
    else if (b->refs == 1 && b->pool)
        b->pool->sole_holder(b->pool, b);
}
