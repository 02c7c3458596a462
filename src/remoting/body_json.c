/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RegisterBrokerBody in its JSON form (proto/requests.md §2.5.1): the wrapper with the
 * topic table and, for brokers from V3_0_11 on, the queue mappings and the
 * filter server list. The mapping-info shape is shared with the compressed form.
 */
#include <stddef.h>
#include <string.h>

#include "body_int.h"
#include "nsrv/common.h"
#include "nsrv/json.h"

/* TopicConfig bean defaults (Java TopicConfig field initialisers, proto/requests.md §2.5.1). */
#define TOPIC_DEFAULT_QUEUE_NUMS 16
#define TOPIC_DEFAULT_PERM (NSRV_PERM_READ | NSRV_PERM_WRITE)

/* name_fallback: the topicConfigTable key, used only when topicName is absent. */
static int topic_config_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                                  const char *name_fallback, nsrv_topic_config_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "topicConfigTable value is not an object");
    nsrv_topic_config_t tc = {NULL, TOPIC_DEFAULT_QUEUE_NUMS, TOPIC_DEFAULT_QUEUE_NUMS,
                              TOPIC_DEFAULT_PERM, 0};
    static const nsrv_body_field_t fields[] = {
        NSRV_BODY_FIELD(nsrv_topic_config_t, "topicName", NSRV_BODY_STR, topic_name),
        NSRV_BODY_QUEUE_FIELDS(nsrv_topic_config_t),
    };
    int rc = nsrv__body_read_fields(d, o, fields, NSRV_ARRAY_LEN(fields), &tc);
    if (rc)
        return rc;
    if (!tc.topic_name)
        tc.topic_name = name_fallback;
    *out = tc;
    return 0;
}

/* Decodes map member e (keyed e->key) into the element at out. */
typedef int (*member_decoder_t)(nsrv_body_dctx_t *d, const nsrv_json_t *e, void *out);

/*
 * Decodes every member of the map member o (named what in errors) into a new array of
 * elem_size elements, *out and *n. Nothing to do (*out untouched) when o is null or empty;
 * an error when it is not an object or a member does not decode.
 */
static int decode_map(nsrv_body_dctx_t *d, const nsrv_json_t *o, const char *what, size_t elem_size,
                      member_decoder_t decode, void **out, size_t *n) {
    if (nsrv__body_is_null(o))
        return 0;
    if (o->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "%s is not an object", what);
    if (o->count == 0)
        return 0;
    uint8_t *elems = nsrv_arena_alloc(d->arena, o->count * elem_size);
    size_t i = 0;
    for (const nsrv_json_t *e = o->child; e; e = e->next, i++) {
        int rc = decode(d, e, elems + i * elem_size);
        if (rc)
            return rc;
    }
    *out = elems;
    *n = i;
    return 0;
}

/* currIdMap is Map<Integer,Integer>: fastjson writes the keys bare ({0:0}). */
static int curr_id_member(nsrv_body_dctx_t *d, const nsrv_json_t *e, void *out) {
    nsrv_int_pair_t *p = out;
    if (!nsrv__body_parse_i32(e->key, e->key_len, &p->key))
        return nsrv__body_fail(d, "bad currIdMap key");
    if (nsrv__body_is_null(e))
        return nsrv__body_fail(d, "null currIdMap value");
    p->val = 0;
    return nsrv__body_get_i32(d, e, "currIdMap value", &p->val);
}

/*
 * TopicQueueMappingInfo (proto/route.md §9). key_topic is the map key of the JSON
 * form, which is what Java stores the info under; NULL for the compressed
 * form, where Java keys by the info's own `topic` and fails without one.
 */
int nsrv__body_mapping_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o, const char *key_topic,
                                 nsrv_mapping_info_t *out) {
    if (o->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "mapping info is not an object");
    nsrv_mapping_info_t mi;
    memset(&mi, 0, sizeof mi);
    const char *topic_field = NULL;
    for (const nsrv_json_t *m = o->child; m; m = m->next) {
        int rc = 0;
        if (nsrv__body_key_is(m, "bname")) {
            rc = nsrv__body_get_str(d, m, "mapping bname", &mi.bname);
        } else if (nsrv__body_key_is(m, "topic")) {
            rc = nsrv__body_get_str(d, m, "mapping topic", &topic_field);
        } else if (nsrv__body_key_is(m, "scope")) {
            rc = nsrv__body_get_str(d, m, "mapping scope", &mi.scope);
        } else if (nsrv__body_key_is(m, "epoch")) {
            rc = nsrv__body_get_i64(d, m, "mapping epoch", &mi.epoch);
        } else if (nsrv__body_key_is(m, "totalQueues")) {
            rc = nsrv__body_get_i32(d, m, "mapping totalQueues", &mi.total_queues);
        } else if (nsrv__body_key_is(m, "dirty")) {
            if (!nsrv__body_is_null(m) && !nsrv_json_as_bool(m, &mi.dirty))
                rc = nsrv__body_fail(d, "bad mapping dirty");
        } else if (nsrv__body_key_is(m, "currIdMap")) {
            void *pairs = NULL;
            rc = decode_map(d, m, "currIdMap", sizeof *mi.curr_id_map, curr_id_member, &pairs,
                            &mi.n_curr_id);
            if (pairs)
                mi.curr_id_map = pairs;
        }
        if (rc)
            return rc;
    }
    mi.topic = key_topic ? key_topic : topic_field;
    if (!mi.topic)
        return nsrv__body_fail(d, "mapping info without topic");
    /* Java's registerBroker would throw on a null bname after partly applying
     * the registration; rejecting it here keeps bname non-NULL for the table. */
    if (!mi.bname)
        return nsrv__body_fail(d, "mapping info without bname");
    *out = mi;
    return 0;
}

static int filter_list_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *a,
                                 nsrv_register_body_t *b) {
    if (nsrv__body_is_null(a))
        return 0; /* Java: null list, the filter-server entry is left alone */
    if (a->type != NSRV_JSON_ARRAY)
        return nsrv__body_fail(d, "filterServerList is not an array");
    b->has_filter_servers = true;
    if (a->count == 0)
        return 0;
    const char **list = nsrv_arena_alloc(d->arena, a->count * sizeof *list);
    size_t n = 0;
    for (const nsrv_json_t *e = a->child; e; e = e->next) {
        if (nsrv__body_is_null(e))
            continue;
        const char *s = NULL;
        int rc = nsrv__body_get_str(d, e, "filterServerList element", &s);
        if (rc)
            return rc;
        list[n++] = s;
    }
    b->filter_servers = list;
    b->n_filter_servers = n;
    return 0;
}

static int topic_member(nsrv_body_dctx_t *d, const nsrv_json_t *e, void *out) {
    return topic_config_from_json(d, e, e->key, out);
}

static int mapping_member(nsrv_body_dctx_t *d, const nsrv_json_t *e, void *out) {
    return nsrv__body_mapping_from_json(d, e, e->key, out);
}

static int topic_table_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                                 nsrv_register_body_t *b) {
    void *topics = NULL;
    int rc = o->type == NSRV_JSON_OBJECT ? nsrv__body_check_topics(d, o->count) : 0;
    if (rc == 0)
        rc = decode_map(d, o, "topicConfigTable", sizeof *b->topics, topic_member, &topics,
                        &b->n_topics);
    if (rc == 0 && topics)
        rc = nsrv__body_charge(d);
    if (topics)
        b->topics = topics;
    return rc;
}

static int mapping_table_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                                   nsrv_register_body_t *b) {
    void *mappings = NULL;
    int rc = decode_map(d, o, "topicQueueMappingInfoMap", sizeof *b->mappings, mapping_member,
                        &mappings, &b->n_mappings);
    if (mappings)
        b->mappings = mappings;
    return rc;
}

/*
 * TopicConfigSerializeWrapper / TopicConfigAndMappingSerializeWrapper. The
 * bare wrapper of pre-3.0.11 brokers has no mapping fields, so they are read
 * only when want_mappings. Unknown keys (mappingDataVersion,
 * topicQueueMappingDetailMap, ...) are ignored.
 */
static int wrapper_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *w, bool want_mappings,
                             nsrv_register_body_t *b) {
    if (nsrv__body_is_null(w))
        return 0;
    if (w->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "topicConfigSerializeWrapper is not an object");
    for (const nsrv_json_t *m = w->child; m; m = m->next) {
        int rc = 0;
        if (nsrv__body_key_is(m, "dataVersion")) {
            if (!nsrv__body_is_null(m))
                rc = nsrv__body_data_version_from_json(d, m, &b->data_version);
        } else if (nsrv__body_key_is(m, "topicConfigTable")) {
            rc = topic_table_from_json(d, m, b);
        } else if (want_mappings && nsrv__body_key_is(m, "topicQueueMappingInfoMap")) {
            rc = mapping_table_from_json(d, m, b);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int nsrv__body_decode_json(nsrv_body_dctx_t *d, const uint8_t *body, size_t len, int32_t version,
                           nsrv_register_body_t *b) {
    nsrv_json_t *root;
    int rc = nsrv__body_parse_json(d, body, len, "body", &root);
    if (rc)
        return rc;
    if (root->type != NSRV_JSON_OBJECT)
        return nsrv__body_fail(d, "body is not a JSON object");
    if (version < NSRV_MQ_V3_0_11)
        return wrapper_from_json(d, root, false, b);
    /* A repeated key replaces the earlier value in fastjson: use the last one. */
    const nsrv_json_t *wrapper = NULL, *filters = NULL;
    for (const nsrv_json_t *m = root->child; m; m = m->next) {
        if (nsrv__body_key_is(m, "topicConfigSerializeWrapper"))
            wrapper = m;
        else if (nsrv__body_key_is(m, "filterServerList"))
            filters = m;
    }
    rc = wrapper_from_json(d, wrapper, true, b);
    if (rc)
        return rc;
    return filter_list_from_json(d, filters, b);
}
