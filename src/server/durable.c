/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's durable host for the processor: kvConfig.json and the config
 * store are written by the writer thread (include/nsrv/writer.h), from
 * snapshots taken on the loop thread, and the replies to the requests that
 * changed them wait in pending reply slots (conn.c) until they are on disk.
 */
#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/kv.h"
#include "nsrv/writer.h"
#include "server_int.h"

/* KV: a copy of the table's structure on the loop thread (values shared); the JSON encoding
 * runs on the writer, which escapes a big value once in its life and references it. */
static void kv_encode(void *data, nsrv_rope_t *out) {
    nsrv_kv_encode_file_rope(data, out);
}

static void kv_release(void *data) {
    nsrv_kv_t *kv = data;
    nsrv_kv_destroy(&kv);
}

static nsrv_wsnap_t kv_snapshot(void *ud) {
    return (nsrv_wsnap_t){nsrv_kv_clone(ud), kv_encode, kv_release};
}

/* Config: a few hundred bytes of properties text, rendered on the loop thread. */
static void text_encode(void *data, nsrv_rope_t *out) {
    nsrv_buf_t *text = data;
    nsrv_buf_append(&out->own, text->data, text->len);
}

static void text_release(void *data) {
    nsrv_buf_t *text = data;
    nsrv_buf_deinit(text);
    nsrv_free(text);
}

static nsrv_wsnap_t config_snapshot(void *ud) {
    nsrv_buf_t *text = nsrv_calloc(1, sizeof *text);
    nsrv_buf_init(text);
    nsrv_config_render_escaped(ud, text);
    return (nsrv_wsnap_t){text, text_encode, text_release};
}

static bool persist(void *ud, nsrv_durable_target_t target, nsrv_durable_done_t done,
                    void *done_ud) {
    nsrv_server_t *srv = ud;
    nsrv_wfile_t *f = target == NSRV_DURABLE_KV ? srv->kv_wfile : srv->config_wfile;
    if (!f)
        return false;
    nsrv_writer_request(f, done, done_ud);
    return true;
}

static nsrv_reply_slot_t *reserve(void *ud, uint64_t conn_id) {
    return nsrv__conn_reply_reserve(ud, conn_id);
}

static void fill(void *ud, nsrv_reply_slot_t *slot, const nsrv_cmd_t *resp) {
    nsrv__conn_reply_fill(ud, slot, resp);
}

void nsrv__durable_start(nsrv_server_t *srv) {
    srv->writer = nsrv_writer_create(&srv->loop);
    const char *kv_path = nsrv_kv_path(srv->kv);
    if (kv_path) {
        srv->kv_wfile = nsrv_writer_add_file(srv->writer, kv_path, true, kv_snapshot, srv->kv);
        nsrv_kv_defer_persist(srv->kv);
    }
    /* The path is fixed at start-up (UPDATE_NAMESRV_CONFIG changes it only for the next start). */
    const char *cfg_path = srv->cfg->config_store_path;
    if (cfg_path && *cfg_path)
        srv->config_wfile =
            nsrv_writer_add_file(srv->writer, cfg_path, true, config_snapshot, srv->cfg);
    nsrv_reply_host_t replies = {reserve, fill, srv};
    nsrv_durable_host_t durable = {persist, srv};
    nsrv_processor_set_async(srv->proc, &replies, &durable);
}

void nsrv__durable_stop(nsrv_server_t *srv) {
    if (!srv->writer)
        return;
    nsrv_writer_drain(srv->writer);
    nsrv_writer_destroy(&srv->writer);
    srv->kv_wfile = NULL;
    srv->config_wfile = NULL;
}
