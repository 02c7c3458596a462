/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoders for broker registration bodies (include/nsrv/register_body.h):
 * RegisterBrokerBody in its JSON and zlib-compressed forms (spec §2.5.1,
 * §2.5.2), DataVersion (§8.1) and the queueDatas of TopicRouteData (§2.13).
 * Untrusted input: lengths and counts are checked against the bytes left,
 * inflation is capped. Everything returned lives in the caller's arena.
 * Fuzzed by src/route/fuzz/fuzz_register_body.c.
 */
#include "nsrv/register_body.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <zlib.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/json.h"

/* TopicConfig bean defaults (Java TopicConfig field initialisers, spec §2.5.1). */
#define TOPIC_DEFAULT_QUEUE_NUMS 16
#define TOPIC_DEFAULT_PERM (NSRV_PERM_READ | NSRV_PERM_WRITE)

/* Decode state shared by the helpers: where to allocate and where to report. */
typedef struct {
    nsrv_arena_t *arena;
    char *err;
    size_t err_len;
    const char *prefix; /* prepended to every reason */
} dctx_t;

__attribute__((format(printf, 2, 3))) static int fail(dctx_t *d, const char *fmt, ...) {
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

static bool key_is(const nsrv_json_t *member, const char *key) {
    size_t n = strlen(key);
    return member->key_len == n && memcmp(member->key, key, n) == 0;
}

static bool is_null(const nsrv_json_t *v) {
    return v == NULL || v->type == NSRV_JSON_NULL;
}

static int parse_json(dctx_t *d, const void *text, size_t len, const char *what,
                      nsrv_json_t **root) {
    char why[96] = "";
    if (nsrv_json_parse(d->arena, (const char *)text, len, root, why, sizeof why) != 0)
        return fail(d, "bad %s JSON (%s)", what, why);
    return 0;
}

/*
 * Integer fields follow fastjson's casts: a number or a numeric string is
 * accepted, null keeps the default, anything else (or overflow) is an error,
 * as it is a decode exception in Java.
 */
static int get_i64(dctx_t *d, const nsrv_json_t *v, const char *what, int64_t *out) {
    if (is_null(v))
        return 0;
    int64_t x;
    if (!nsrv_json_as_i64(v, &x))
        return fail(d, "bad %s", what);
    *out = x;
    return 0;
}

static int get_i32(dctx_t *d, const nsrv_json_t *v, const char *what, int32_t *out) {
    if (is_null(v))
        return 0;
    int64_t x;
    if (!nsrv_json_as_i64(v, &x) || x < INT32_MIN || x > INT32_MAX)
        return fail(d, "bad %s", what);
    *out = (int32_t)x;
    return 0;
}

/* String fields: numbers and booleans read as their text, as fastjson casts them. */
static int get_str(dctx_t *d, const nsrv_json_t *v, const char *what, const char **out) {
    if (is_null(v))
        return 0;
    const char *s = nsrv_json_as_str(v, NULL);
    if (!s)
        return fail(d, "bad %s", what);
    *out = s;
    return 0;
}

/* Java Integer.parseInt: optional sign, then decimal digits only, in int32 range. */
static bool parse_i32_text(const char *s, size_t n, int32_t *out) {
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
            return false;
    }
    if (neg)
        v = -v;
    if (v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* ---- shared JSON shapes -------------------------------------------------- */

static int data_version_from_json(dctx_t *d, const nsrv_json_t *o, nsrv_data_version_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "dataVersion is not an object");
    nsrv_data_version_t dv = {0, 0, 0};
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        int rc = 0;
        if (key_is(m, "counter"))
            rc = get_i64(d, m, "dataVersion.counter", &dv.counter);
        else if (key_is(m, "timestamp"))
            rc = get_i64(d, m, "dataVersion.timestamp", &dv.timestamp);
        else if (key_is(m, "stateVersion"))
            rc = get_i64(d, m, "dataVersion.stateVersion", &dv.state_version);
        if (rc)
            return rc;
    }
    *out = dv;
    return 0;
}

/* name_fallback: the topicConfigTable key, used only when topicName is absent. */
static int topic_config_from_json(dctx_t *d, const nsrv_json_t *o, const char *name_fallback,
                                  nsrv_topic_config_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "topicConfigTable value is not an object");
    nsrv_topic_config_t tc = {NULL, TOPIC_DEFAULT_QUEUE_NUMS, TOPIC_DEFAULT_QUEUE_NUMS,
                              TOPIC_DEFAULT_PERM, 0};
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        int rc = 0;
        if (key_is(m, "topicName"))
            rc = get_str(d, m, "topicName", &tc.topic_name);
        else if (key_is(m, "readQueueNums"))
            rc = get_i32(d, m, "readQueueNums", &tc.read_queue_nums);
        else if (key_is(m, "writeQueueNums"))
            rc = get_i32(d, m, "writeQueueNums", &tc.write_queue_nums);
        else if (key_is(m, "perm"))
            rc = get_i32(d, m, "perm", &tc.perm);
        else if (key_is(m, "topicSysFlag"))
            rc = get_i32(d, m, "topicSysFlag", &tc.topic_sys_flag);
        if (rc)
            return rc;
    }
    if (!tc.topic_name)
        tc.topic_name = name_fallback;
    *out = tc;
    return 0;
}

/* currIdMap is Map<Integer,Integer>: fastjson writes the keys bare ({0:0}). */
static int curr_id_map_from_json(dctx_t *d, const nsrv_json_t *o, nsrv_mapping_info_t *m) {
    if (is_null(o))
        return 0;
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "currIdMap is not an object");
    if (o->count == 0)
        return 0;
    nsrv_int_pair_t *pairs = nsrv_arena_alloc(d->arena, o->count * sizeof *pairs);
    size_t n = 0;
    for (const nsrv_json_t *e = o->child; e; e = e->next) {
        nsrv_int_pair_t p = {0, 0};
        if (!parse_i32_text(e->key, e->key_len, &p.key))
            return fail(d, "bad currIdMap key");
        if (is_null(e))
            return fail(d, "null currIdMap value");
        int rc = get_i32(d, e, "currIdMap value", &p.val);
        if (rc)
            return rc;
        pairs[n++] = p;
    }
    m->curr_id_map = pairs;
    m->n_curr_id = n;
    return 0;
}

/*
 * TopicQueueMappingInfo (spec §8.2). key_topic is the map key of the JSON
 * form, which is what Java stores the info under; NULL for the compressed
 * form, where Java keys by the info's own `topic` and fails without one.
 */
static int mapping_from_json(dctx_t *d, const nsrv_json_t *o, const char *key_topic,
                             nsrv_mapping_info_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "mapping info is not an object");
    nsrv_mapping_info_t mi;
    memset(&mi, 0, sizeof mi);
    const char *topic_field = NULL;
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        int rc = 0;
        if (key_is(m, "bname")) {
            rc = get_str(d, m, "mapping bname", &mi.bname);
        } else if (key_is(m, "topic")) {
            rc = get_str(d, m, "mapping topic", &topic_field);
        } else if (key_is(m, "scope")) {
            rc = get_str(d, m, "mapping scope", &mi.scope);
        } else if (key_is(m, "epoch")) {
            rc = get_i64(d, m, "mapping epoch", &mi.epoch);
        } else if (key_is(m, "totalQueues")) {
            rc = get_i32(d, m, "mapping totalQueues", &mi.total_queues);
        } else if (key_is(m, "dirty")) {
            if (!is_null(m) && !nsrv_json_as_bool(m, &mi.dirty))
                rc = fail(d, "bad mapping dirty");
        } else if (key_is(m, "currIdMap")) {
            rc = curr_id_map_from_json(d, m, &mi);
        }
        if (rc)
            return rc;
    }
    mi.topic = key_topic ? key_topic : topic_field;
    if (!mi.topic)
        return fail(d, "mapping info without topic");
    /* Java's registerBroker would throw on a null bname after partly applying
     * the registration; rejecting it here keeps bname non-NULL for the table. */
    if (!mi.bname)
        return fail(d, "mapping info without bname");
    *out = mi;
    return 0;
}

/* ---- JSON form ------------------------------------------------------------ */

static int filter_list_from_json(dctx_t *d, const nsrv_json_t *a, nsrv_register_body_t *b) {
    if (is_null(a))
        return 0; /* Java: null list, the filter-server entry is left alone */
    if (a->type != NSRV_JSON_ARRAY)
        return fail(d, "filterServerList is not an array");
    b->has_filter_servers = true;
    if (a->count == 0)
        return 0;
    const char **list = nsrv_arena_alloc(d->arena, a->count * sizeof *list);
    size_t n = 0;
    for (const nsrv_json_t *e = a->child; e; e = e->next) {
        if (is_null(e))
            continue;
        const char *s = NULL;
        int rc = get_str(d, e, "filterServerList element", &s);
        if (rc)
            return rc;
        list[n++] = s;
    }
    b->filter_servers = list;
    b->n_filter_servers = n;
    return 0;
}

static int topic_table_from_json(dctx_t *d, const nsrv_json_t *o, nsrv_register_body_t *b) {
    if (is_null(o))
        return 0;
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "topicConfigTable is not an object");
    if (o->count == 0)
        return 0;
    nsrv_topic_config_t *t = nsrv_arena_alloc(d->arena, o->count * sizeof *t);
    size_t n = 0;
    for (const nsrv_json_t *e = o->child; e; e = e->next) {
        int rc = topic_config_from_json(d, e, e->key, &t[n]);
        if (rc)
            return rc;
        n++;
    }
    b->topics = t;
    b->n_topics = n;
    return 0;
}

static int mapping_table_from_json(dctx_t *d, const nsrv_json_t *o, nsrv_register_body_t *b) {
    if (is_null(o))
        return 0;
    if (o->type != NSRV_JSON_OBJECT)
        return fail(d, "topicQueueMappingInfoMap is not an object");
    if (o->count == 0)
        return 0;
    nsrv_mapping_info_t *mi = nsrv_arena_alloc(d->arena, o->count * sizeof *mi);
    size_t n = 0;
    for (const nsrv_json_t *e = o->child; e; e = e->next) {
        int rc = mapping_from_json(d, e, e->key, &mi[n]);
        if (rc)
            return rc;
        n++;
    }
    b->mappings = mi;
    b->n_mappings = n;
    return 0;
}

/*
 * TopicConfigSerializeWrapper / TopicConfigAndMappingSerializeWrapper. The
 * bare wrapper of pre-3.0.11 brokers has no mapping fields, so they are read
 * only when want_mappings. Unknown keys (mappingDataVersion,
 * topicQueueMappingDetailMap, ...) are ignored.
 */
static int wrapper_from_json(dctx_t *d, const nsrv_json_t *w, bool want_mappings,
                             nsrv_register_body_t *b) {
    if (is_null(w))
        return 0;
    if (w->type != NSRV_JSON_OBJECT)
        return fail(d, "topicConfigSerializeWrapper is not an object");
    for (const nsrv_json_t *m = w->child; m; m = m->next) {
        int rc = 0;
        if (key_is(m, "dataVersion")) {
            if (!is_null(m))
                rc = data_version_from_json(d, m, &b->data_version);
        } else if (key_is(m, "topicConfigTable")) {
            rc = topic_table_from_json(d, m, b);
        } else if (want_mappings && key_is(m, "topicQueueMappingInfoMap")) {
            rc = mapping_table_from_json(d, m, b);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int decode_json_form(dctx_t *d, const uint8_t *body, size_t len, int32_t version,
                            nsrv_register_body_t *b) {
    nsrv_json_t *root;
    int rc = parse_json(d, body, len, "body", &root);
    if (rc)
        return rc;
    if (root->type != NSRV_JSON_OBJECT)
        return fail(d, "body is not a JSON object");
    if (version < NSRV_REGISTER_BODY_V3_0_11)
        return wrapper_from_json(d, root, false, b);
    /* A repeated key replaces the earlier value in fastjson: use the last one. */
    const nsrv_json_t *wrapper = NULL, *filters = NULL;
    for (const nsrv_json_t *m = root->child; m; m = m->next) {
        if (key_is(m, "topicConfigSerializeWrapper"))
            wrapper = m;
        else if (key_is(m, "filterServerList"))
            filters = m;
    }
    rc = wrapper_from_json(d, wrapper, true, b);
    if (rc)
        return rc;
    return filter_list_from_json(d, filters, b);
}

/* ---- compressed form ------------------------------------------------------ */

/*
 * Inflates a zlib stream into a heap buffer (freed by the caller with
 * nsrv_free). The buffer grows by doubling up to MAX_INFLATED + 1 bytes, so
 * filling it proves the stream is over the cap. Bytes after the end of the
 * zlib stream are ignored, as Java's InflaterInputStream never reads them.
 */
static int inflate_body(dctx_t *d, const uint8_t *body, size_t len, uint8_t **out,
                        size_t *out_len) {
    const size_t limit = NSRV_REGISTER_BODY_MAX_INFLATED + 1;
    size_t cap = len < limit / 4 ? NSRV_MAX(len * 4, (size_t)4096) : limit;
    cap = NSRV_MIN(cap, limit);
    uint8_t *buf = nsrv_malloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) {
        nsrv_free(buf);
        return fail(d, "inflateInit failed");
    }
    size_t in_off = 0, produced = 0;
    int rc = 0;
    for (;;) {
        if (zs.avail_in == 0 && in_off < len) {
            size_t chunk = NSRV_MIN(len - in_off, (size_t)UINT_MAX);
            zs.next_in = (Bytef *)(uintptr_t)(body + in_off);
            zs.avail_in = (uInt)chunk;
            in_off += chunk;
        }
        if (produced == cap) {
            if (cap == limit) {
                rc = NSRV_ETOOBIG;
                fail(d, "inflated body exceeds %zu bytes", NSRV_REGISTER_BODY_MAX_INFLATED);
                break;
            }
            cap = NSRV_MIN(cap * 2, limit);
            buf = nsrv_realloc(buf, cap);
        }
        size_t room = NSRV_MIN(cap - produced, (size_t)UINT_MAX);
        zs.next_out = buf + produced;
        zs.avail_out = (uInt)room;
        int zrc = inflate(&zs, Z_NO_FLUSH);
        produced += room - zs.avail_out;
        if (zrc == Z_STREAM_END)
            break;
        if (zrc == Z_OK || (zrc == Z_BUF_ERROR && zs.avail_out == 0))
            continue; /* progress, or output full: grow and go on */
        /* Input is refilled before every call, so a stall with output room
         * left means the stream ended early. */
        if (zrc == Z_BUF_ERROR)
            rc = fail(d, "truncated zlib stream");
        else
            rc = fail(d, "bad zlib stream (%s)", zs.msg ? zs.msg : "inflate error");
        break;
    }
    inflateEnd(&zs);
    if (rc) {
        nsrv_free(buf);
        return rc;
    }
    *out = buf;
    *out_len = produced;
    return 0;
}

/* One int32 BE length (Java readInt) that must be >= 0 and fit in what is left. */
static int read_len(dctx_t *d, nsrv_reader_t *r, const char *what, size_t *n) {
    uint32_t v;
    if (nsrv_reader_be32(r, &v) != 0)
        return fail(d, "stream ends before %s", what);
    if (v > INT32_MAX)
        return fail(d, "negative %s", what);
    if (v > nsrv_reader_left(r))
        return fail(d, "%s %u past end of stream", what, v);
    *n = v;
    return 0;
}

static int read_item(dctx_t *d, nsrv_reader_t *r, const char *what, const uint8_t **p, size_t *n) {
    int rc = read_len(d, r, what, n);
    if (rc)
        return rc;
    return nsrv_reader_bytes(r, *n, p) == 0 ? 0 : fail(d, "%s past end of stream", what);
}

/*
 * Smallest stream bytes a valid item can take: its 4-byte length plus the
 * shortest text that decodes. A topic text needs four separators, three
 * one-digit numbers and "MULTI_TAG" (" 0 0 0 MULTI_TAG", 16 bytes); a mapping
 * info needs a topic and a bname ("{topic:0,bname:0}", 17 bytes).
 */
#define MIN_TOPIC_ITEM (4 + 16)
#define MIN_MAPPING_ITEM (4 + 17)

/*
 * A count of length-prefixed items. A count above left / min_item cannot be
 * honest, and rejecting it before allocating keeps the array we allocate
 * proportional to bytes actually present (at most ~1.6x / ~3x the inflated
 * size for topics / mappings), whatever count a hostile body claims.
 */
static int read_count(dctx_t *d, nsrv_reader_t *r, const char *what, size_t min_item, size_t *n) {
    uint32_t v;
    if (nsrv_reader_be32(r, &v) != 0)
        return fail(d, "stream ends before %s", what);
    if (v > INT32_MAX)
        return fail(d, "negative %s", what);
    if (v > nsrv_reader_left(r) / min_item)
        return fail(d, "%s %u exceeds the stream", what, v);
    *n = v;
    return 0;
}

/*
 * TopicConfig text form "<name> <read> <write> <perm> <filterType> [<attrs>]"
 * (Java TopicConfig.decode). Java splits on every single space and needs at
 * least five parts; the sixth (attributes JSON) is ignored on parse errors and
 * the NameServer does not keep attributes, so it is not parsed at all.
 * topicFilterType goes through Enum.valueOf in Java, so only the two names
 * are accepted. topicSysFlag is not carried and stays 0.
 */
static int topic_config_from_text(dctx_t *d, const uint8_t *p, size_t n, nsrv_topic_config_t *out) {
    const char *s = (const char *)p;
    const char *part[5];
    size_t part_len[5];
    size_t pos = 0;
    for (int i = 0; i < 5; i++) {
        if (i > 0) {
            if (pos >= n)
                return fail(d, "topic config has fewer than 5 parts");
            pos++; /* the separating space */
        }
        size_t start = pos;
        while (pos < n && s[pos] != ' ')
            pos++;
        part[i] = s + start;
        part_len[i] = pos - start;
    }
    nsrv_topic_config_t tc = {NULL, 0, 0, 0, 0};
    if (!parse_i32_text(part[1], part_len[1], &tc.read_queue_nums))
        return fail(d, "bad readQueueNums in topic config");
    if (!parse_i32_text(part[2], part_len[2], &tc.write_queue_nums))
        return fail(d, "bad writeQueueNums in topic config");
    if (!parse_i32_text(part[3], part_len[3], &tc.perm))
        return fail(d, "bad perm in topic config");
    if (!((part_len[4] == 10 && memcmp(part[4], "SINGLE_TAG", 10) == 0) ||
          (part_len[4] == 9 && memcmp(part[4], "MULTI_TAG", 9) == 0)))
        return fail(d, "bad topicFilterType in topic config");
    tc.topic_name = nsrv_arena_strndup(d->arena, part[0], part_len[0]);
    *out = tc;
    return 0;
}

/*
 * filterServerList inside the compressed form: Java catches parse errors and
 * keeps an empty list, and `null` gives a null list.
 */
static void filter_list_from_bytes(dctx_t *d, const uint8_t *p, size_t n, nsrv_register_body_t *b) {
    nsrv_json_t *a;
    b->has_filter_servers = true;
    if (nsrv_json_parse(d->arena, (const char *)p, n, &a, NULL, 0) != 0)
        return;
    if (a->type == NSRV_JSON_NULL) {
        b->has_filter_servers = false;
        return;
    }
    if (a->type != NSRV_JSON_ARRAY || a->count == 0)
        return;
    const char **list = nsrv_arena_alloc(d->arena, a->count * sizeof *list);
    size_t k = 0;
    for (const nsrv_json_t *e = a->child; e; e = e->next) {
        const char *s = nsrv_json_as_str(e, NULL);
        if (s)
            list[k++] = s;
    }
    b->filter_servers = list;
    b->n_filter_servers = k;
}

/* Spec §2.5.2: DataVersion, T topic texts, filter list, [M mapping infos]. */
static int parse_inflated(dctx_t *d, const uint8_t *p, size_t n, int32_t version,
                          nsrv_register_body_t *b) {
    nsrv_reader_t r;
    nsrv_reader_init(&r, p, n);
    /* Initialised only to quiet gcc -O3's maybe-uninitialized false positives. */
    const uint8_t *item = NULL;
    size_t item_len = 0, count = 0;
    nsrv_json_t *j = NULL;

    int rc = read_item(d, &r, "dataVersion length", &item, &item_len);
    if (rc)
        return rc;
    rc = parse_json(d, item, item_len, "dataVersion", &j);
    if (rc)
        return rc;
    rc = data_version_from_json(d, j, &b->data_version);
    if (rc)
        return rc;

    rc = read_count(d, &r, "topic count", MIN_TOPIC_ITEM, &count);
    if (rc)
        return rc;
    if (count) {
        b->topics = nsrv_arena_alloc(d->arena, count * sizeof *b->topics);
        for (size_t i = 0; i < count; i++) {
            rc = read_item(d, &r, "topic config length", &item, &item_len);
            if (rc)
                return rc;
            rc = topic_config_from_text(d, item, item_len, &b->topics[i]);
            if (rc)
                return rc;
        }
        b->n_topics = count;
    }

    rc = read_item(d, &r, "filterServerList length", &item, &item_len);
    if (rc)
        return rc;
    filter_list_from_bytes(d, item, item_len, b);

    /* 5.x puts the mapping section here; tolerate a stream that ends instead. */
    if (version < NSRV_REGISTER_BODY_V5_0_0 || nsrv_reader_left(&r) == 0)
        return 0;
    rc = read_count(d, &r, "mapping count", MIN_MAPPING_ITEM, &count);
    if (rc)
        return rc;
    if (count) {
        b->mappings = nsrv_arena_alloc(d->arena, count * sizeof *b->mappings);
        for (size_t i = 0; i < count; i++) {
            rc = read_item(d, &r, "mapping info length", &item, &item_len);
            if (rc)
                return rc;
            rc = parse_json(d, item, item_len, "mapping info", &j);
            if (rc)
                return rc;
            rc = mapping_from_json(d, j, NULL, &b->mappings[i]);
            if (rc)
                return rc;
        }
        b->n_mappings = count;
    }
    return 0;
}

static int decode_compressed_form(dctx_t *d, const uint8_t *body, size_t len, int32_t version,
                                  nsrv_register_body_t *b) {
    uint8_t *raw = NULL;
    size_t raw_len = 0;
    int rc = inflate_body(d, body, len, &raw, &raw_len);
    if (rc)
        return rc;
    rc = parse_inflated(d, raw, raw_len, version, b);
    nsrv_free(raw);
    return rc;
}

/* ---- public entry points ---------------------------------------------------- */

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
    dctx_t d = {arena, err, err_len, "Failed to decode RegisterBrokerBody: "};
    nsrv_register_body_t b;
    memset(&b, 0, sizeof b);
    if (len == 0) {
        *out = b; /* Java zeroes the DataVersion for a missing body (spec §2.5) */
        return 0;
    }
    size_t i = 0;
    while (i < len && is_json_ws(body[i]))
        i++;
    int rc;
    if (i < len && body[i] == '{')
        rc = decode_json_form(&d, body, len, version, &b);
    else if (is_zlib_header(body, len))
        rc = decode_compressed_form(&d, body, len, version, &b);
    else
        rc = fail(&d, "neither JSON nor a zlib stream (compressed=%s)",
                  compressed_flag ? "true" : "false");
    if (rc)
        return rc;
    *out = b;
    return 0;
}

int nsrv_data_version_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                             nsrv_data_version_t *out) {
    dctx_t d = {arena, NULL, 0, ""};
    nsrv_json_t *root;
    if (len == 0 || nsrv_json_parse(arena, (const char *)body, len, &root, NULL, 0) != 0)
        return NSRV_EBODY;
    if (root->type != NSRV_JSON_OBJECT)
        return NSRV_EBODY;
    return data_version_from_json(&d, root, out);
}

static int queue_data_from_json(dctx_t *d, const nsrv_json_t *o, nsrv_queue_data_t *out) {
    nsrv_queue_data_t q = {NULL, 0, 0, 0, 0};
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        int rc = 0;
        if (key_is(m, "brokerName"))
            rc = get_str(d, m, "brokerName", &q.broker_name);
        else if (key_is(m, "readQueueNums"))
            rc = get_i32(d, m, "readQueueNums", &q.read_queue_nums);
        else if (key_is(m, "writeQueueNums"))
            rc = get_i32(d, m, "writeQueueNums", &q.write_queue_nums);
        else if (key_is(m, "perm"))
            rc = get_i32(d, m, "perm", &q.perm);
        else if (key_is(m, "topicSysFlag"))
            rc = get_i32(d, m, "topicSysFlag", &q.topic_sys_flag);
        if (rc)
            return rc;
    }
    *out = q;
    return 0;
}

int nsrv_topic_route_queue_datas_decode(const uint8_t *body, size_t len, nsrv_arena_t *arena,
                                        nsrv_queue_data_t **out, size_t *n, char *err,
                                        size_t err_len) {
    dctx_t d = {arena, err, err_len, "Failed to decode TopicRouteData: "};
    if (len == 0) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    nsrv_json_t *root;
    int rc = parse_json(&d, body, len, "body", &root);
    if (rc)
        return rc;
    if (root->type == NSRV_JSON_NULL) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (root->type != NSRV_JSON_OBJECT)
        return fail(&d, "body is not a JSON object");
    const nsrv_json_t *qds = nsrv_json_get(root, "queueDatas");
    if (is_null(qds) || (qds->type == NSRV_JSON_ARRAY && qds->count == 0)) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    if (qds->type != NSRV_JSON_ARRAY)
        return fail(&d, "queueDatas is not an array");
    /* Type errors anywhere fail the decode, as fastjson throws for them. */
    nsrv_queue_data_t *q = nsrv_arena_alloc(arena, qds->count * sizeof *q);
    size_t k = 0;
    bool ended = false;
    for (const nsrv_json_t *e = qds->child; e; e = e->next) {
        if (is_null(e)) {
            ended = true;
            continue;
        }
        if (e->type != NSRV_JSON_OBJECT)
            return fail(&d, "queueDatas element is not an object");
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

/* ---- encoders (tests, broker simulator, fuzz round trips) --------------------- */

static void put_data_version(nsrv_buf_t *o, const nsrv_data_version_t *dv) {
    nsrv_buf_append_c(o, "{\"counter\":");
    nsrv_buf_append_i64(o, dv->counter);
    nsrv_buf_append_c(o, ",\"stateVersion\":");
    nsrv_buf_append_i64(o, dv->state_version);
    nsrv_buf_append_c(o, ",\"timestamp\":");
    nsrv_buf_append_i64(o, dv->timestamp);
    nsrv_buf_append_ch(o, '}');
}

static void put_str(nsrv_buf_t *o, const char *s) {
    s = s ? s : "";
    nsrv_json_write_str(o, s, strlen(s), NSRV_JSON_ESC_DEFAULT);
}

/* TopicQueueMappingInfo as fastjson writes it: alphabetical keys, bare currIdMap keys. */
static void put_mapping(nsrv_buf_t *o, const nsrv_mapping_info_t *m) {
    nsrv_buf_append_c(o, "{\"bname\":");
    put_str(o, m->bname);
    nsrv_buf_append_c(o, ",\"currIdMap\":{");
    for (size_t i = 0; i < m->n_curr_id; i++) {
        if (i)
            nsrv_buf_append_ch(o, ',');
        nsrv_buf_append_i64(o, m->curr_id_map[i].key);
        nsrv_buf_append_ch(o, ':');
        nsrv_buf_append_i64(o, m->curr_id_map[i].val);
    }
    nsrv_buf_append_c(o, m->dirty ? "},\"dirty\":true" : "},\"dirty\":false");
    nsrv_buf_append_c(o, ",\"epoch\":");
    nsrv_buf_append_i64(o, m->epoch);
    if (m->scope) {
        nsrv_buf_append_c(o, ",\"scope\":");
        put_str(o, m->scope);
    }
    nsrv_buf_append_c(o, ",\"topic\":");
    put_str(o, m->topic);
    nsrv_buf_append_c(o, ",\"totalQueues\":");
    nsrv_buf_append_i64(o, m->total_queues);
    nsrv_buf_append_ch(o, '}');
}

static void put_filter_list(nsrv_buf_t *o, const nsrv_register_body_t *b) {
    nsrv_buf_append_ch(o, '[');
    for (size_t i = 0; i < b->n_filter_servers; i++) {
        if (i)
            nsrv_buf_append_ch(o, ',');
        put_str(o, b->filter_servers[i]);
    }
    nsrv_buf_append_ch(o, ']');
}

void nsrv_register_body_encode_json(const nsrv_register_body_t *b, nsrv_buf_t *out) {
    nsrv_buf_append_ch(out, '{');
    if (b->has_filter_servers) {
        nsrv_buf_append_c(out, "\"filterServerList\":");
        put_filter_list(out, b);
        nsrv_buf_append_ch(out, ',');
    }
    nsrv_buf_append_c(out, "\"topicConfigSerializeWrapper\":{\"dataVersion\":");
    put_data_version(out, &b->data_version);
    nsrv_buf_append_c(out, ",\"topicConfigTable\":{");
    for (size_t i = 0; i < b->n_topics; i++) {
        const nsrv_topic_config_t *t = &b->topics[i];
        if (i)
            nsrv_buf_append_ch(out, ',');
        put_str(out, t->topic_name);
        nsrv_buf_append_c(out, ":{\"attributes\":{},\"order\":false,\"perm\":");
        nsrv_buf_append_i64(out, t->perm);
        nsrv_buf_append_c(out, ",\"readQueueNums\":");
        nsrv_buf_append_i64(out, t->read_queue_nums);
        nsrv_buf_append_c(out, ",\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":");
        put_str(out, t->topic_name);
        nsrv_buf_append_c(out, ",\"topicSysFlag\":");
        nsrv_buf_append_i64(out, t->topic_sys_flag);
        nsrv_buf_append_c(out, ",\"writeQueueNums\":");
        nsrv_buf_append_i64(out, t->write_queue_nums);
        nsrv_buf_append_ch(out, '}');
    }
    nsrv_buf_append_c(out, "},\"topicQueueMappingDetailMap\":{},\"topicQueueMappingInfoMap\":{");
    for (size_t i = 0; i < b->n_mappings; i++) {
        if (i)
            nsrv_buf_append_ch(out, ',');
        put_str(out, b->mappings[i].topic);
        nsrv_buf_append_ch(out, ':');
        put_mapping(out, &b->mappings[i]);
    }
    nsrv_buf_append_c(out, "}}}");
}

/* Appends int32 BE length + bytes; the caller has checked len <= INT32_MAX. */
static void put_item(nsrv_buf_t *o, const void *p, size_t len) {
    nsrv_buf_append_be32(o, (uint32_t)len);
    nsrv_buf_append(o, p, len);
}

int nsrv_register_body_encode_compressed(const nsrv_register_body_t *b, int32_t version,
                                         nsrv_buf_t *out) {
    nsrv_buf_t raw = NSRV_BUF_INIT, item = NSRV_BUF_INIT;
    int rc = 0;
    if (b->n_topics > INT32_MAX || b->n_mappings > INT32_MAX)
        return -EMSGSIZE;

    put_data_version(&item, &b->data_version);
    put_item(&raw, item.data, item.len);
    nsrv_buf_append_be32(&raw, (uint32_t)b->n_topics);
    for (size_t i = 0; i < b->n_topics; i++) {
        const nsrv_topic_config_t *t = &b->topics[i];
        const char *name = t->topic_name ? t->topic_name : "";
        if (strchr(name, ' ')) {
            rc = -EINVAL;
            goto cleanup;
        }
        nsrv_buf_reset(&item);
        nsrv_buf_printf(&item, "%s %d %d %d SINGLE_TAG {}", name, (int)t->read_queue_nums,
                        (int)t->write_queue_nums, (int)t->perm);
        if (item.len > INT32_MAX) {
            rc = -EMSGSIZE;
            goto cleanup;
        }
        put_item(&raw, item.data, item.len);
    }
    nsrv_buf_reset(&item);
    if (b->has_filter_servers)
        put_filter_list(&item, b);
    else
        nsrv_buf_append_c(&item, "null"); /* JSON.toJSONString(null) */
    put_item(&raw, item.data, item.len);
    if (version >= NSRV_REGISTER_BODY_V5_0_0) {
        nsrv_buf_append_be32(&raw, (uint32_t)b->n_mappings);
        for (size_t i = 0; i < b->n_mappings; i++) {
            nsrv_buf_reset(&item);
            put_mapping(&item, &b->mappings[i]);
            if (item.len > INT32_MAX) {
                rc = -EMSGSIZE;
                goto cleanup;
            }
            put_item(&raw, item.data, item.len);
        }
    }

    uLong bound = compressBound((uLong)raw.len);
    nsrv_buf_reserve(out, bound);
    uLongf dst_len = bound;
    if (compress2((Bytef *)out->data + out->len, &dst_len, (const Bytef *)raw.data, raw.len,
                  Z_BEST_COMPRESSION) != Z_OK) {
        rc = -ENOMEM;
        goto cleanup;
    }
    out->len += dst_len;
    out->data[out->len] = '\0';

cleanup:
    nsrv_buf_deinit(&item);
    nsrv_buf_deinit(&raw);
    return rc;
}
