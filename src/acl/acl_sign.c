/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RocketMQ ACL signature, as the Java client computes it
 * (AclClientRPCHook.doBeforeRequest -> AclUtils.combineRequestContent ->
 * AclSigner.calSignature) and the Java server checks it: HmacSHA1 keyed with
 * the secret's UTF-8 bytes over the UTF-8 bytes of the ext field values
 * concatenated in key order of a TreeMap<String,String> (so AccessKey and
 * SecurityToken are included, Signature is not), then the body; base64.
 * Both header encodings decode to the same ext fields, so one computation
 * serves JSON and ROCKETMQ headers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nsrv/crypto.h"
#include "nsrv/acl.h"
#include "nsrv/alloc.h"

#define SIGNATURE_KEY "Signature"

/* One code point of valid-or-not UTF-8 at *p (a stray byte counts as itself). */
static uint32_t next_cp(const unsigned char **p, const unsigned char *end) {
    const unsigned char *s = *p;
    uint32_t c = s[0];
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 1;
    if (n > 1 && (size_t)(end - s) >= n) {
        uint32_t v = c & (0x7fu >> n);
        size_t i = 1;
        for (; i < n && (s[i] & 0xc0) == 0x80; i++)
            v = (v << 6) | (s[i] & 0x3fu);
        if (i == n) {
            *p = s + n;
            return v;
        }
    }
    *p = s + 1;
    return c;
}

/* The first UTF-16 code unit of cp: supplementary characters start with a
 * high surrogate (0xD800..0xDBFF), below the BMP's U+E000..U+FFFF. */
static uint32_t first_unit(uint32_t cp) {
    return cp < 0x10000 ? cp : 0xd800 + ((cp - 0x10000) >> 10);
}

int nsrv_acl_java_strcmp(const char *a, size_t alen, const char *b, size_t blen) {
    const unsigned char *pa = (const unsigned char *)a, *ea = pa + alen;
    const unsigned char *pb = (const unsigned char *)b, *eb = pb + blen;
    while (pa < ea && pb < eb) {
        uint32_t ca = next_cp(&pa, ea), cb = next_cp(&pb, eb);
        if (ca == cb)
            continue;
        uint32_t ua = first_unit(ca), ub = first_unit(cb);
        if (ua != ub)
            return ua < ub ? -1 : 1;
        /* Same high surrogate: the low surrogates order as the code points. */
        return ca < cb ? -1 : 1;
    }
    return (pa < ea) - (pb < eb);
}

typedef struct {
    const nsrv_ext_field_t *f;
    size_t wire_index;
} field_ref_t;

static bool same_key(const nsrv_ext_field_t *a, const nsrv_ext_field_t *b) {
    return a->key.len == b->key.len && memcmp(a->key.ptr, b->key.ptr, a->key.len) == 0;
}

/* Java's key order; equal keys by wire order, so the last of a run is the value
 * a HashMap would keep. The byte compare only matters for ill-formed text. */
static int cmp_refs(const void *x, const void *y) {
    const field_ref_t *a = x, *b = y;
    int c = nsrv_acl_java_strcmp(a->f->key.ptr, a->f->key.len, b->f->key.ptr, b->f->key.len);
    if (c == 0 && !same_key(a->f, b->f)) {
        size_t n = a->f->key.len < b->f->key.len ? a->f->key.len : b->f->key.len;
        c = memcmp(a->f->key.ptr, b->f->key.ptr, n);
        if (c == 0)
            c = a->f->key.len < b->f->key.len ? -1 : 1;
    }
    if (c == 0)
        c = a->wire_index < b->wire_index ? -1 : 1;
    return c;
}

int nsrv_acl_signature(const nsrv_cmd_t *req, const char *secret,
                       char out[NSRV_ACL_SIG_B64_LEN + 1]) {
    /* nsrv_acl_create loaded the module when it read the keys. */
    const nsrv_crypto_api_t *crypto = nsrv_crypto_loaded();
    if (!crypto)
        return -1;
    field_ref_t *refs = nsrv_calloc(req->n_ext ? req->n_ext : 1, sizeof *refs);
    size_t n = 0;
    for (size_t i = 0; i < req->n_ext; i++) {
        const nsrv_ext_field_t *f = &req->ext[i];
        if (!f->key.ptr || !f->val.ptr)
            continue;
        if (f->key.len == strlen(SIGNATURE_KEY) &&
            memcmp(f->key.ptr, SIGNATURE_KEY, f->key.len) == 0)
            continue;
        refs[n++] = (field_ref_t){f, i};
    }
    qsort(refs, n, sizeof *refs, cmp_refs);

    struct iovec *parts = nsrv_calloc(n + 1, sizeof *parts);
    size_t n_parts = 0;
    for (size_t i = 0; i < n; i++) {
        /* The map Java builds holds one entry per key, its last value (HashMap.put). */
        if (i + 1 < n && same_key(refs[i].f, refs[i + 1].f))
            continue;
        parts[n_parts++] = (struct iovec){(void *)refs[i].f->val.ptr, refs[i].f->val.len};
    }
    parts[n_parts++] = (struct iovec){(void *)req->body, req->body_len};
    int rc = crypto->hmac_sha1_b64(secret, strlen(secret), parts, n_parts, out);
    nsrv_free(parts);
    nsrv_free(refs);
    return rc;
}
