/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registration-body encoders, JSON and compressed, written the way a broker
 * writes them: for tests, the broker simulator and fuzz round trips.
 */
#include "nsrv/register_body.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include <zlib.h>

#include "nsrv/common.h"
#include "nsrv/json.h"

/* Appends the member text (",\"key\":") and then the value. */
static void put_num(nsrv_buf_t *o, const char *member, int64_t v) {
    nsrv_buf_append_c(o, member);
    nsrv_buf_append_i64(o, v);
}

static void put_str(nsrv_buf_t *o, const char *s) {
    s = s ? s : "";
    nsrv_json_write_str(o, s, strlen(s), NSRV_JSON_ESC_DEFAULT);
}

static void put_member_str(nsrv_buf_t *o, const char *member, const char *s) {
    nsrv_buf_append_c(o, member);
    put_str(o, s);
}

static void put_data_version(nsrv_buf_t *o, const nsrv_data_version_t *dv) {
    put_num(o, "{\"counter\":", dv->counter);
    put_num(o, ",\"stateVersion\":", dv->state_version);
    put_num(o, ",\"timestamp\":", dv->timestamp);
    nsrv_buf_append_ch(o, '}');
}

/* TopicQueueMappingInfo as fastjson writes it: alphabetical keys, bare currIdMap keys. */
static void put_mapping(nsrv_buf_t *o, const nsrv_mapping_info_t *m) {
    put_member_str(o, "{\"bname\":", m->bname);
    nsrv_buf_append_c(o, ",\"currIdMap\":{");
    for (size_t i = 0; i < m->n_curr_id; i++) {
        nsrv_buf_printf(o, "%s%" PRId32 ":%" PRId32, i ? "," : "", m->curr_id_map[i].key,
                        m->curr_id_map[i].val);
    }
    nsrv_buf_append_c(o, m->dirty ? "},\"dirty\":true" : "},\"dirty\":false");
    put_num(o, ",\"epoch\":", m->epoch);
    if (m->scope)
        put_member_str(o, ",\"scope\":", m->scope);
    put_member_str(o, ",\"topic\":", m->topic);
    put_num(o, ",\"totalQueues\":", m->total_queues);
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
    /* A 5.x broker sends its static-topic mapping version too (an empty DataVersion
     * without static topics); rocketmq-rust's NameServer refuses a body without it. */
    nsrv_buf_append_c(out, ",\"mappingDataVersion\":");
    put_data_version(out, &(nsrv_data_version_t){0});
    nsrv_buf_append_c(out, ",\"topicConfigTable\":{");
    for (size_t i = 0; i < b->n_topics; i++) {
        const nsrv_topic_config_t *t = &b->topics[i];
        if (i)
            nsrv_buf_append_ch(out, ',');
        put_str(out, t->topic_name);
        put_num(out, ":{\"attributes\":{},\"order\":false,\"perm\":", t->perm);
        put_num(out, ",\"readQueueNums\":", t->read_queue_nums);
        put_member_str(out, ",\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":", t->topic_name);
        put_num(out, ",\"topicSysFlag\":", t->topic_sys_flag);
        put_num(out, ",\"writeQueueNums\":", t->write_queue_nums);
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
    if (version >= NSRV_MQ_V5_0_0) {
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
