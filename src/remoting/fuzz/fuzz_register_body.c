/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target for the registration body decoders (include/nsrv/register_body.h).
 * Byte 0 selects the request version (low 3 bits) and the `compressed` flag
 * (bit 3); the rest is the body. With bit 4 set the rest is an inflated
 * payload that is zlib-compressed first, so mutations reach the item parser
 * instead of dying in inflate. Any input must decode or fail cleanly. A body
 * that decodes must survive a JSON re-encode and, when its names allow it, a
 * compressed re-encode, with the same topics, DataVersion, filter list and
 * mapping count; a mismatch aborts. The same bytes also go through the
 * DataVersion and queueDatas decoders.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "nsrv/common.h"
#include "nsrv/register_body.h"
#include "nsrv/utf8.h"

/* Both sides of each threshold, a 4.x and the current broker, HIGHER_VERSION (612) and junk. */
static const int32_t versions[8] = {NSRV_MQ_V3_0_11 - 1,
                                    NSRV_MQ_V3_0_11,
                                    NSRV_MQ_V4_9_7,
                                    NSRV_MQ_V5_0_0 - 1,
                                    NSRV_MQ_V5_0_0,
                                    NSRV_MQ_CURRENT,
                                    612,
                                    -1};

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_register_body: %s\n", what);
        abort();
    }
}

/* Names are valid UTF-8 whatever the bytes were (proto/remoting.md §6a). */
static bool utf8_name(const char *s) {
    return s && nsrv_utf8_valid(s, strlen(s));
}

static void check_valid(const nsrv_register_body_t *b) {
    for (size_t i = 0; i < b->n_topics; i++)
        check(utf8_name(b->topics[i].topic_name), "NULL or ill-formed topic name");
    for (size_t i = 0; i < b->n_filter_servers; i++)
        check(utf8_name(b->filter_servers[i]), "NULL or ill-formed filter server");
    check(b->has_filter_servers || b->n_filter_servers == 0, "filter list without flag");
    for (size_t i = 0; i < b->n_mappings; i++) {
        const nsrv_mapping_info_t *m = &b->mappings[i];
        check(m->topic != NULL && m->bname != NULL, "NULL mapping topic/bname");
        check(m->n_curr_id == 0 || m->curr_id_map != NULL, "NULL currIdMap");
    }
}

/* Re-decoded bodies must keep everything the encoders carry. */
static void check_same(const nsrv_register_body_t *a, const nsrv_register_body_t *b,
                       bool sys_flag_kept) {
    check(nsrv_data_version_eq(&a->data_version, &b->data_version), "DataVersion changed");
    check(a->n_topics == b->n_topics, "topic count changed");
    for (size_t i = 0; i < a->n_topics; i++) {
        const nsrv_topic_config_t *x = &a->topics[i], *y = &b->topics[i];
        check(strcmp(x->topic_name, y->topic_name) == 0, "topic name changed");
        check(x->read_queue_nums == y->read_queue_nums &&
                  x->write_queue_nums == y->write_queue_nums && x->perm == y->perm,
              "topic queue numbers changed");
        check(!sys_flag_kept || x->topic_sys_flag == y->topic_sys_flag, "topicSysFlag changed");
    }
    check(a->has_filter_servers == b->has_filter_servers, "filter flag changed");
    check(a->n_filter_servers == b->n_filter_servers, "filter count changed");
    check(a->n_mappings == b->n_mappings, "mapping count changed");
    for (size_t i = 0; i < a->n_mappings; i++) {
        check(strcmp(a->mappings[i].topic, b->mappings[i].topic) == 0, "mapping topic changed");
        check(a->mappings[i].n_curr_id == b->mappings[i].n_curr_id, "currIdMap size changed");
    }
}

/* An encoding of b (JSON, or compressed) read back as a 5.x body, so that the mapping section
 * is read whatever b's version was (b then had none to lose), into *back (strings in arena);
 * only the JSON form keeps topicSysFlag. */
static void check_redecodes(const nsrv_register_body_t *b, const nsrv_buf_t *enc, bool compressed,
                            nsrv_arena_t *arena, nsrv_register_body_t *back) {
    char err[256];
    int rc = nsrv_register_body_decode((const uint8_t *)enc->data, enc->len, NSRV_MQ_CURRENT,
                                       compressed, arena, back, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "re-decode of %s failed: %s\n", compressed ? "compressed" : "JSON", err);
    check(rc == 0,
          compressed ? "compressed re-encode does not decode" : "JSON re-encode does not decode");
    check_same(b, back, !compressed);
}

static bool names_fit_text_form(const nsrv_register_body_t *b) {
    for (size_t i = 0; i < b->n_topics; i++)
        if (strchr(b->topics[i].topic_name, ' '))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    int32_t version = versions[data[0] & 7];
    bool flag = (data[0] & 8) != 0;
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    uint8_t *packed = NULL;
    if (data[0] & 16) {
        uLongf plen = compressBound((uLong)len);
        packed = malloc(plen);
        if (!packed || compress2(packed, &plen, body, (uLong)len, Z_BEST_COMPRESSION) != Z_OK)
            abort();
        body = packed;
        len = plen;
    }

    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 8192);
    char err[256];
    nsrv_register_body_t b;
    int unbounded =
        nsrv_register_body_decode(body, len, version, flag, &arena, &b, err, sizeof err);
    /* Within limits taken from the input, a decode either gives the same result or is
     * refused as too big (only ever when the unbounded decode succeeded or was too big). */
    {
        nsrv_arena_t la;
        nsrv_arena_init(&la, 8192);
        nsrv_register_body_limits_t lim = {(size_t)(data[0] >> 5) * 3, (size_t)len * (data[0] & 7)};
        nsrv_register_body_t lb;
        char lerr[256];
        int rc = nsrv_register_body_decode_bounded(body, len, version, flag, &lim, &la, &lb, lerr,
                                                   sizeof lerr);
        if (rc == 0) {
            check(unbounded == 0, "bounded decode accepts what the unbounded one refuses");
            check(lim.max_topics == 0 || lb.n_topics <= lim.max_topics, "topic limit not applied");
            check(lim.max_decoded_bytes == 0 || la.allocated <= lim.max_decoded_bytes,
                  "byte budget not applied");
            check_same(&b, &lb, true);
        } else if (unbounded == 0) {
            check(rc == NSRV_ETOOBIG, "bounded decode fails otherwise than as too big");
        }
        nsrv_arena_deinit(&la);
    }
    if (unbounded == 0) {
        check_valid(&b);

        nsrv_buf_t j = NSRV_BUF_INIT;
        nsrv_register_body_encode_json(&b, &j);
        nsrv_register_body_t b2;
        check_redecodes(&b, &j, false, &arena, &b2);
        nsrv_buf_deinit(&j);

        if (names_fit_text_form(&b)) {
            nsrv_buf_t z = NSRV_BUF_INIT;
            check(nsrv_register_body_encode_compressed(&b, NSRV_MQ_CURRENT, &z) == 0,
                  "compressed encode");
            check_redecodes(&b, &z, true, &arena, &b2);
            nsrv_buf_deinit(&z);
        }
    } else {
        check(strncmp(err, "Failed to decode RegisterBrokerBody: ", 37) == 0, "error text");
    }

    nsrv_queue_data_t *q;
    size_t n;
    if (nsrv_topic_route_queue_datas_decode(body, len, &arena, &q, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n; i++)
            check(q[i].broker_name != NULL, "NULL brokerName");
    }
    nsrv_data_version_t dv;
    (void)nsrv_data_version_decode(body, len, &arena, &dv);
    (void)nsrv_body_crc32(body, len);

    nsrv_arena_deinit(&arena);
    free(packed);
    return 0;
}
