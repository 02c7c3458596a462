/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry points of the registration-body decoders (include/nsrv/register_body.h)
 * and the helpers the JSON and compressed parts share: error reporting,
 * fastjson-like field casts, DataVersion. RegisterBrokerBody forms are told
 * apart by their bytes here; body_json.c and body_compressed.c parse them.
 * DataVersion (proto/requests.md §3.1) and the queueDatas of TopicRouteData (proto/requests.md
 * §2.13) are plain JSON and decoded here. Fuzzed by src/remoting/fuzz/fuzz_register_body.c.
 */
#include "nsrv/register_body.h"

#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <zlib.h>

#include "body_int.h"
#include "nsrv/common.h"
#include "nsrv/json.h"
#include "nsrv/text.h"

int nsrv__body_fail(nsrv_body_dctx_t *d, const char *fmt, ...) {
    if (d->err && d->err_len) {
        int n = snprintf(d->err, d->err_len, "%s", d->prefix);
        if (n >= 0 && (size_t)n < d->err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(d->err + n, d->err_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return NSRV_EBODY;
}

static size_t decoded_bytes(const nsrv_body_dctx_t *d) {
    return d->inflated + (d->arena->allocated - d->arena_start);
}

size_t nsrv__body_budget_left(const nsrv_body_dctx_t *d) {
    if (!d->lim || d->lim->max_decoded_bytes == 0)
        return SIZE_MAX;
    size_t used = decoded_bytes(d);
    return used < d->lim->max_decoded_bytes ? d->lim->max_decoded_bytes - used : 0;
}

int nsrv__body_charge(nsrv_body_dctx_t *d) {
    if (!d->lim || d->lim->max_decoded_bytes == 0 || decoded_bytes(d) <= d->lim->max_decoded_bytes)
        return 0;
    nsrv__body_fail(d, "decoding takes more than registerMaxDecodedBytes=%zu bytes",
                    d->lim->max_decoded_bytes);
    return NSRV_ETOOBIG;
}

int nsrv__body_check_topics(nsrv_body_dctx_t *d, size_t n) {
    if (!d->lim || d->lim->max_topics == 0 || n <= d->lim->max_topics)
        return 0;
    nsrv__body_fail(d, "%zu topics exceed registerMaxTopics=%zu", n, d->lim->max_topics);
    return NSRV_ETOOBIG;
}

bool nsrv__body_key_is(const nsrv_json_t *member, const char *key) {
    size_t n = strlen(key);
    return member->key_len == n && memcmp(member->key, key, n) == 0;
}

int nsrv__body_read_fields(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                           const nsrv_body_field_t *fields, size_t n, void *out) {
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        const nsrv_body_field_t *f = fields;
        while (f < fields + n && !nsrv__body_key_is(m, f->key))
            f++;
        if (f == fields + n)
            continue;
        char *at = (char *)out + f->offset;
        int rc = f->kind == NSRV_BODY_STR   ? nsrv__body_get_str(d, m, f->what, (const char **)at)
                 : f->kind == NSRV_BODY_I32 ? nsrv__body_get_i32(d, m, f->what, (int32_t *)at)
                                            : nsrv__body_get_i64(d, m, f->what, (int64_t *)at);
        if (rc)
            return rc;
    }
    return 0;
}

bool nsrv__body_is_null(const nsrv_json_t *v) {
    return v == NULL || v->type == NSRV_JSON_NULL;
}

int nsrv__body_parse_json(nsrv_body_dctx_t *d, const void *text, size_t len, const char *what,
                          nsrv_json_t **root) {
    char why[96] = "";
    /* The parse stops as soon as its tree overruns the budget. */
    if (nsrv_json_parse_max(d->arena, (const char *)text, len, nsrv__body_budget_left(d), root, why,
                            sizeof why) != 0) {
        if (strncmp(why, "tree over budget", 16) == 0) {
            nsrv__body_fail(d, "decoding takes more than registerMaxDecodedBytes=%zu bytes",
                            d->lim->max_decoded_bytes);
            return NSRV_ETOOBIG;
        }
        return nsrv__body_fail(d, "bad %s JSON (%s)", what, why);
    }
    return nsrv__body_charge(d);
}

/*
 * Integer fields follow fastjson's casts: a number or a numeric string is
 * accepted, null keeps the default, anything else (or overflow) is an error,
 * as it is a decode exception in Java.
 */
int nsrv__body_get_i64(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what, int64_t *out) {
    if (nsrv__body_is_null(v))
        return 0;
    int64_t x;
    if (!nsrv_json_as_i64(v, &x))
        return nsrv__body_fail(d, "bad %s", what);
    *out = x;
    return 0;
}

int nsrv__body_get_i32(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what, int32_t *out) {
    if (nsrv__body_is_null(v))
        return 0;
    int64_t x;
    if (!nsrv_json_as_i64(v, &x) || x < INT32_MIN || x > INT32_MAX)
        return nsrv__body_fail(d, "bad %s", what);
    *out = (int32_t)x;
    return 0;
}

/* String fields: numbers and booleans read as their text, as fastjson casts them. */
int nsrv__body_get_str(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what,
                       const char **out) {
    if (nsrv__body_is_null(v))
        return 0;
    const char *s = nsrv_json_as_str(v, NULL);
    if (!s)
        return nsrv__body_fail(d, "bad %s", what);
    *out = s;
    return 0;
}

bool nsrv__body_parse_i32(const char *s, size_t n, int32_t *out) {
    int64_t v;
    if (!nsrv_parse_int(s, n, INT32_MIN, INT32_MAX, &v))
        return false;
    *out = (int32_t)v;
    return true;
}

int nsrv__body_data_version_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                                      nsrv_data_version_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "dataVersion is not an object");
    static const nsrv_body_field_t fields[] = {
        {"counter", "dataVersion.counter", NSRV_BODY_I64, offsetof(nsrv_data_version_t, counter)},
        {"timestamp", "dataVersion.timestamp", NSRV_BODY_I64,
         offsetof(nsrv_data_version_t, timestamp)},
        {"stateVersion", "dataVersion.stateVersion", NSRV_BODY_I64,
         offsetof(nsrv_data_version_t, state_version)},
    };
    nsrv_data_version_t dv = {0, 0, 0};
    int rc = nsrv__body_read_fields(d, o, fields, NSRV_ARRAY_LEN(fields), &dv);
    if (rc == 0)
        *out = dv;
    return rc;
}

uint32_t nsrv_body_crc32(const void *data, size_t len) {
    const Bytef *p = data;
    uLong crc = crc32(0L, Z_NULL, 0);
    while (len > 0) {
        uInt chunk = (uInt)NSRV_MIN(len, (size_t)UINT_MAX);
        crc = crc32(crc, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return (uint32_t)crc & 0x7FFFFFFFu;
}

static bool is_json_ws(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* RFC 1950 header: deflate method (CM 8) and the FCHECK multiple of 31. */
static bool is_zlib_header(const uint8_t *p, size_t len) {
    return len >= 2 && (p[0] & 0x0F) == 8 && ((unsigned)p[0] * 256u + p[1]) % 31u == 0;
}

int nsrv_register_body_decode(const uint8_t *body, size_t len, int32_t version,
                              bool compressed_flag, nsrv_arena_t *arena, nsrv_register_body_t *out,
                              char *err, size_t err_len) {
    return nsrv_register_body_decode_bounded(body, len, version, compressed_flag, NULL, arena, out,
                                             err, err_len);
}

int nsrv_register_body_decode_bounded(const uint8_t *body, size_t len, int32_t version,
                                      bool compressed_flag, const nsrv_register_body_limits_t *lim,
                                      nsrv_arena_t *arena, nsrv_register_body_t *out, char *err,
                                      size_t err_len) {
    nsrv_body_dctx_t d = {
        arena, err, err_len, "Failed to decode RegisterBrokerBody: ", lim, arena->allocated, 0};
    nsrv_register_body_t b;
    memset(&b, 0, sizeof b);
    if (len == 0) {
        *out = b; /* Java zeroes the DataVersion for a missing body (proto/requests.md §2.5) */
        return 0;
    }
    size_t i = 0;
    while (i < len && is_json_ws(body[i]))
        i++;
    int rc;
    if (i < len && body[i] == '{')
        rc = nsrv__body_decode_json(&d, body, len, version, &b);
    else if (is_zlib_header(body, len))
        rc = nsrv__body_decode_compressed(&d, body, len, version, &b);
    else
        rc = nsrv__body_fail(&d, "neither JSON nor a zlib stream (compressed=%s)",
                             compressed_flag ? "true" : "false");
    if (rc == 0)
        rc = nsrv__body_charge(&d);
    if (rc)
        return rc;
    *out = b;
    return 0;
}

int nsrv_data_version_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                             nsrv_data_version_t *out) {
    nsrv_body_dctx_t d = {arena, NULL, 0, "", NULL, 0, 0};
    nsrv_json_t *root;
    if (len == 0 || nsrv_json_parse(arena, (const char *)body, len, &root, NULL, 0) != 0)
        return NSRV_EBODY;
    if (root->type != NSRV_JSON_OBJECT)
        return NSRV_EBODY;
    return nsrv__body_data_version_from_json(&d, root, out);
}

static int queue_data_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o, nsrv_queue_data_t *out) {
    static const nsrv_body_field_t fields[] = {
        NSRV_BODY_FIELD(nsrv_queue_data_t, "brokerName", NSRV_BODY_STR, broker_name),
        NSRV_BODY_QUEUE_FIELDS(nsrv_queue_data_t),
    };
    nsrv_queue_data_t q = {NULL, 0, 0, 0, 0};
    int rc = nsrv__body_read_fields(d, o, fields, NSRV_ARRAY_LEN(fields), &q);
    if (rc == 0)
        *out = q;
    return rc;
}

int nsrv_topic_route_queue_datas_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                                        nsrv_queue_data_t **out, size_t *n, char *err,
                                        size_t err_len) {
    nsrv_body_dctx_t d = {arena, err, err_len, "Failed to decode TopicRouteData: ", NULL, 0, 0};
    if (len == 0) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    nsrv_json_t *root;
    int rc = nsrv__body_parse_json(&d, body, len, "body", &root);
    if (rc)
        return rc;
    if (root->type == NSRV_JSON_NULL) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (root->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(&d, "body is not a JSON object");
    const nsrv_json_t *qds = nsrv_json_get(root, "queueDatas");
    if (nsrv__body_is_null(qds) || (qds->type == NSRV_JSON_ARRAY && qds->count == 0)) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (qds->type != NSRV_JSON_ARRAY)
        return nsrv__body_fail(&d, "queueDatas is not an array");
    /* Type errors anywhere fail the decode, as fastjson throws for them. */
    nsrv_queue_data_t *q = nsrv_arena_alloc(arena, qds->count * sizeof *q);
    size_t k = 0;
    bool ended = false;
    for (const nsrv_json_t *e = qds->child; e; e = e->next) {
        if (nsrv__body_is_null(e)) {
            ended = true;
            continue;
        }
        if (e->type != NSRV_JSON_OBJECT)
            return nsrv__body_fail(&d, "queueDatas element is not an object");
        nsrv_queue_data_t qd;
        rc = queue_data_from_json(&d, e, &qd);
        if (rc)
            return rc;
        if (!qd.broker_name)
            ended = true;
        if (!ended)
            q[k++] = qd;
    }
    *out = k ? q : NULL;
    *n = k;
    return 0;
}
