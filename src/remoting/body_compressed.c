/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RegisterBrokerBody in its zlib-compressed form (proto/requests.md §2.5.2): one zlib
 * stream of length-prefixed items. Inflation is capped at
 * NSRV_REGISTER_BODY_MAX_INFLATED; every length and count is checked against
 * the bytes left before anything is allocated for it.
 */
#include <limits.h>
#include <string.h>

#include <zlib.h>

#include "body_int.h"
#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/json.h"
#include "nsrv/utf8.h"

/*
 * Inflates a zlib stream into a heap buffer (freed by the caller with
 * nsrv_free). The buffer grows by doubling up to MAX_INFLATED + 1 bytes, so
 * filling it proves the stream is over the cap. Bytes after the end of the
 * zlib stream are ignored, as Java's InflaterInputStream never reads them.
 */
static int inflate_body(nsrv_body_dctx_t *d, const uint8_t *body, size_t len, uint8_t **out,
                        size_t *out_len) {
    /* The inflated text is charged to the decode budget, so it stops there too. */
    size_t max = NSRV_MIN(NSRV_REGISTER_BODY_MAX_INFLATED, nsrv__body_budget_left(d));
    bool by_budget = max < NSRV_REGISTER_BODY_MAX_INFLATED;
    const size_t limit = max + 1;
    size_t cap = len < limit / 4 ? NSRV_MAX(len * 4, (size_t)4096) : limit;
    cap = NSRV_MIN(cap, limit);
    uint8_t *buf = nsrv_malloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit(&zs) != Z_OK) {
        nsrv_free(buf);
        return nsrv__body_fail(d, "inflateInit failed");
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
                if (by_budget)
                    nsrv__body_fail(d, "inflated body exceeds registerMaxDecodedBytes=%zu bytes",
                                    d->lim->max_decoded_bytes);
                else
                    nsrv__body_fail(d, "inflated body exceeds %zu bytes",
                                    NSRV_REGISTER_BODY_MAX_INFLATED);
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
            rc = nsrv__body_fail(d, "truncated zlib stream");
        else
            rc = nsrv__body_fail(d, "bad zlib stream (%s)", zs.msg ? zs.msg : "inflate error");
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
static int read_len(nsrv_body_dctx_t *d, nsrv_reader_t *r, const char *what, size_t *n) {
    uint32_t v;
    if (nsrv_reader_be32(r, &v) != 0)
        return nsrv__body_fail(d, "stream ends before %s", what);
    if (v > INT32_MAX)
        return nsrv__body_fail(d, "negative %s", what);
    if (v > nsrv_reader_left(r))
        return nsrv__body_fail(d, "%s %u past end of stream", what, v);
    *n = v;
    return 0;
}

static int read_item(nsrv_body_dctx_t *d, nsrv_reader_t *r, const char *what, const uint8_t **p,
                     size_t *n) {
    int rc = read_len(d, r, what, n);
    if (rc)
        return rc;
    return nsrv_reader_bytes(r, *n, p) == 0 ? 0 : nsrv__body_fail(d, "%s past end of stream", what);
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
static int read_count(nsrv_body_dctx_t *d, nsrv_reader_t *r, const char *what, size_t min_item,
                      size_t *n) {
    uint32_t v;
    if (nsrv_reader_be32(r, &v) != 0)
        return nsrv__body_fail(d, "stream ends before %s", what);
    if (v > INT32_MAX)
        return nsrv__body_fail(d, "negative %s", what);
    if (v > nsrv_reader_left(r) / min_item)
        return nsrv__body_fail(d, "%s %u exceeds the stream", what, v);
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
static int topic_config_from_text(nsrv_body_dctx_t *d, const uint8_t *p, size_t n,
                                  nsrv_topic_config_t *out) {
    const char *s = (const char *)p;
    const char *part[5];
    size_t part_len[5];
    size_t pos = 0;
    for (int i = 0; i < 5; i++) {
        if (i > 0) {
            if (pos >= n)
                return nsrv__body_fail(d, "topic config has fewer than 5 parts");
            pos++; /* the separating space */
        }
        size_t start = pos;
        while (pos < n && s[pos] != ' ')
            pos++;
        part[i] = s + start;
        part_len[i] = pos - start;
    }
    nsrv_topic_config_t tc = {NULL, 0, 0, 0, 0};
    if (!nsrv__body_parse_i32(part[1], part_len[1], &tc.read_queue_nums))
        return nsrv__body_fail(d, "bad readQueueNums in topic config");
    if (!nsrv__body_parse_i32(part[2], part_len[2], &tc.write_queue_nums))
        return nsrv__body_fail(d, "bad writeQueueNums in topic config");
    if (!nsrv__body_parse_i32(part[3], part_len[3], &tc.perm))
        return nsrv__body_fail(d, "bad perm in topic config");
    if (!((part_len[4] == 10 && memcmp(part[4], "SINGLE_TAG", 10) == 0) ||
          (part_len[4] == 9 && memcmp(part[4], "MULTI_TAG", 9) == 0)))
        return nsrv__body_fail(d, "bad topicFilterType in topic config");
    if (memchr(part[0], '\0', part_len[0]))
        return nsrv__body_fail(d, "NUL character (U+0000) in a topic name");
    /* Java reads the text with new String(bytes, UTF_8). */
    tc.topic_name = nsrv_utf8_arena_dup(d->arena, part[0], part_len[0], NULL);
    *out = tc;
    return 0;
}

/*
 * filterServerList inside the compressed form: Java catches parse errors and
 * keeps an empty list, and `null` gives a null list.
 */
static void filter_list_from_bytes(nsrv_body_dctx_t *d, const uint8_t *p, size_t n,
                                   nsrv_register_body_t *b) {
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

/* Decodes list item number index (bytes p[0..n)) into the element at out. */
typedef int (*item_decoder_t)(nsrv_body_dctx_t *d, const uint8_t *p, size_t n, size_t index,
                              void *out);

/* A topic text; the decode budget is charged every 1024 topics. */
static int topic_item(nsrv_body_dctx_t *d, const uint8_t *p, size_t n, size_t index, void *out) {
    int rc = topic_config_from_text(d, p, n, out);
    if (rc == 0 && index % 1024 == 0)
        rc = nsrv__body_charge(d);
    return rc;
}

/* A TopicQueueMappingInfo in JSON. */
static int mapping_item(nsrv_body_dctx_t *d, const uint8_t *p, size_t n, size_t index, void *out) {
    (void)index;
    nsrv_json_t *j = NULL;
    int rc = nsrv__body_parse_json(d, p, n, "mapping info", &j);
    return rc ? rc : nsrv__body_mapping_from_json(d, j, NULL, out);
}

/* Reads count length-prefixed items into a new array of elem_size elements (*out; left
 * alone when count is 0). */
static int read_items(nsrv_body_dctx_t *d, nsrv_reader_t *r, const char *what_len, size_t count,
                      size_t elem_size, item_decoder_t decode, void **out) {
    if (count == 0)
        return 0;
    uint8_t *elems = nsrv_arena_alloc(d->arena, count * elem_size);
    for (size_t i = 0; i < count; i++) {
        const uint8_t *item = NULL;
        size_t item_len = 0;
        int rc = read_item(d, r, what_len, &item, &item_len);
        if (rc == 0)
            rc = decode(d, item, item_len, i, elems + i * elem_size);
        if (rc)
            return rc;
    }
    *out = elems;
    return 0;
}

/* proto/requests.md §2.5.2: DataVersion, T topic texts, filter list, [M mapping infos]. */
static int parse_inflated(nsrv_body_dctx_t *d, const uint8_t *p, size_t n, int32_t version,
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
    rc = nsrv__body_parse_json(d, item, item_len, "dataVersion", &j);
    if (rc)
        return rc;
    rc = nsrv__body_data_version_from_json(d, j, &b->data_version);
    if (rc)
        return rc;

    rc = read_count(d, &r, "topic count", MIN_TOPIC_ITEM, &count);
    if (rc == 0)
        rc = nsrv__body_check_topics(d, count);
    if (rc)
        return rc;
    void *elems = NULL;
    rc = read_items(d, &r, "topic config length", count, sizeof *b->topics, topic_item, &elems);
    if (rc)
        return rc;
    if (count) {
        b->topics = elems;
        b->n_topics = count;
    }

    rc = read_item(d, &r, "filterServerList length", &item, &item_len);
    if (rc)
        return rc;
    filter_list_from_bytes(d, item, item_len, b);

    /* 5.x puts the mapping section here; tolerate a stream that ends instead. */
    if (version < NSRV_MQ_V5_0_0 || nsrv_reader_left(&r) == 0)
        return 0;
    rc = read_count(d, &r, "mapping count", MIN_MAPPING_ITEM, &count);
    if (rc)
        return rc;
    rc = read_items(d, &r, "mapping info length", count, sizeof *b->mappings, mapping_item, &elems);
    if (rc == 0 && count) {
        b->mappings = elems;
        b->n_mappings = count;
    }
    return rc;
}

int nsrv__body_decode_compressed(nsrv_body_dctx_t *d, const uint8_t *body, size_t len,
                                 int32_t version, nsrv_register_body_t *b) {
    uint8_t *raw = NULL;
    size_t raw_len = 0;
    int rc = inflate_body(d, body, len, &raw, &raw_len);
    if (rc)
        return rc;
    d->inflated = raw_len;
    rc = parse_inflated(d, raw, raw_len, version, b);
    if (rc == 0)
        rc = nsrv__body_charge(d);
    nsrv_free(raw);
    d->inflated = 0;
    return rc;
}
