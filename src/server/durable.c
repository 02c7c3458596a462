/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's durable host for the processor: kvConfig.json and the config
 * store are written by the writer thread (include/nsrv/writer.h), from
 * snapshots taken on the loop thread, and the replies to the requests that
 * changed them wait in pending reply slots (conn.c) until they are on disk.
 *
 * A write that fails changes nothing: each file keeps the content of its last good write
 * (and the one in flight); a failure puts the live table or config back to the last good
 * content, and the writer fails the requests made since (nsrv_writer_on_settle), so what
 * a client was told failed is never served.
 */
#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/kv.h"
#include "nsrv/log.h"
#include "nsrv/processor.h"
#include "nsrv/writer.h"
#include "server_int.h"

/* KV: a copy of the table's structure on the loop thread (values shared); the JSON encoding
 * runs on the writer, which escapes a big value once in its life and references it. */
static void kv_encode(void *data, nsrv_rope_t *out) {
    nsrv_kv_encode_file_rope(data, out);
}

/* The one copy is the writer's to read until its write settles, and the loop's from then
 * on (the last good content, or dropped): the loop frees it, never the writer. */
static void kv_keep(void *data) {
    (void)data;
}

static nsrv_wsnap_t kv_snapshot(void *ud) {
    nsrv_server_t *srv = ud;
    nsrv_kv_destroy(&srv->kv_inflight);
    srv->kv_inflight = nsrv_kv_clone(srv->kv);
    return (nsrv_wsnap_t){srv->kv_inflight, kv_encode, kv_keep};
}

static void kv_settle(void *ud, int rc) {
    nsrv_server_t *srv = ud;
    nsrv_kv_t *written = srv->kv_inflight;
    srv->kv_inflight = NULL;
    if (rc != 0) {
        nsrv_kv_destroy(&written);
        nsrv_kv_restore(srv->kv, srv->kv_good);
        nsrv_log_error("PERSIST", "'%s' not written: KV changes since its last write undone",
                       nsrv_kv_path(srv->kv));
        return;
    }
    nsrv_kv_destroy(&srv->kv_good);
    srv->kv_good = written;
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

static nsrv_config_t *config_copy(const nsrv_config_t *cfg) {
    nsrv_config_t *copy = nsrv_malloc(sizeof *copy);
    nsrv_config_init_defaults(copy);
    nsrv_config_adopt_all(copy, cfg);
    return copy;
}

static void config_drop(nsrv_config_t **cfg) {
    if (!*cfg)
        return;
    nsrv_config_free(*cfg);
    nsrv_free(*cfg);
    *cfg = NULL;
}

static nsrv_wsnap_t config_snapshot(void *ud) {
    nsrv_server_t *srv = ud;
    config_drop(&srv->cfg_inflight);
    srv->cfg_inflight = config_copy(srv->cfg);
    nsrv_buf_t *text = nsrv_calloc(1, sizeof *text);
    nsrv_buf_init(text);
    nsrv_config_render_escaped(srv->cfg, text);
    return (nsrv_wsnap_t){text, text_encode, text_release};
}

static void config_settle(void *ud, int rc) {
    nsrv_server_t *srv = ud;
    if (rc == 0) {
        config_drop(&srv->cfg_good);
        srv->cfg_good = srv->cfg_inflight;
        srv->cfg_inflight = NULL;
        return;
    }
    config_drop(&srv->cfg_inflight);
    nsrv_config_adopt_all(srv->cfg, srv->cfg_good);
    srv->cfg->version++;
    nsrv_config_apply_log_level(srv->cfg);
    nsrv_processor_config_changed(srv->proc);
    nsrv_log_error("PERSIST", "'%s' not written: config changes since its last write undone",
                   srv->cfg->config_store_path);
}

void nsrv__durable_config_adopt(nsrv_server_t *srv, const char *const *names) {
    /* A SIGHUP's keys are not the config store's to undo: a later failed write keeps them. */
    if (srv->cfg_good)
        (void)nsrv_config_adopt(srv->cfg_good, srv->cfg, names);
    if (srv->cfg_inflight)
        (void)nsrv_config_adopt(srv->cfg_inflight, srv->cfg, names);
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
        srv->kv_wfile = nsrv_writer_add_file(srv->writer, kv_path, true, kv_snapshot, srv);
        nsrv_writer_on_settle(srv->kv_wfile, kv_settle, srv);
        srv->kv_good = nsrv_kv_clone(srv->kv);
        nsrv_kv_defer_persist(srv->kv);
    }
    /* The path is fixed at start-up (UPDATE_NAMESRV_CONFIG changes it only for the next start). */
    const char *cfg_path = srv->cfg->config_store_path;
    if (cfg_path && *cfg_path) {
        srv->config_wfile = nsrv_writer_add_file(srv->writer, cfg_path, true, config_snapshot, srv);
        nsrv_writer_on_settle(srv->config_wfile, config_settle, srv);
        srv->cfg_good = config_copy(srv->cfg);
    }
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
    nsrv_kv_destroy(&srv->kv_good);
    nsrv_kv_destroy(&srv->kv_inflight);
    config_drop(&srv->cfg_good);
    config_drop(&srv->cfg_inflight);
}
