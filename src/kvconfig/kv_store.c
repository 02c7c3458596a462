/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvConfig.json persistence (proto/requests.md §4): parse at startup with a fallback to
 * "<path>.bak", and an atomic rewrite with a fresh ".bak" after every change
 * (src/base/fileio.c). The file is outside input: parsing never asserts and
 * is fuzzed by src/kvconfig/fuzz/fuzz_kv_load.c. Loop thread only; blocking.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/fileio.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "nsrv/text.h"

#include "kv_int.h"

/* Arena chunk for one parse; a typical kvConfig.json is a few hundred bytes. */
#define PARSE_ARENA_CHUNK 16384

/*
 * Compact JSON text of a parsed value. fastjson turns a JSON object or array
 * found where a String is expected into its JSON text, so a hand-edited
 * {"k":{"a":1}} loads as the string {"a":1} instead of failing the whole file.
 * Depth is bounded by the parser's NSRV_JSON_MAX_DEPTH.
 */
static void append_json_text(nsrv_buf_t *out, const nsrv_json_t *v) {
    switch (v->type) {
    case NSRV_JSON_NULL:
        nsrv_buf_append_c(out, "null");
        break;
    case NSRV_JSON_BOOL:
        nsrv_buf_append_c(out, v->boolean ? "true" : "false");
        break;
    case NSRV_JSON_NUMBER:
        nsrv_buf_append(out, v->str, v->str_len);
        break;
    case NSRV_JSON_STRING:
        nsrv_json_write_str(out, v->str, v->str_len, NSRV_JSON_ESC_DEFAULT);
        break;
    case NSRV_JSON_ARRAY:
    case NSRV_JSON_OBJECT: {
        bool is_obj = v->type == NSRV_JSON_OBJECT;
        nsrv_buf_append_ch(out, is_obj ? '{' : '[');
        for (const nsrv_json_t *c = v->child; c; c = c->next) {
            if (c != v->child)
                nsrv_buf_append_ch(out, ',');
            if (is_obj) {
                nsrv_json_write_str(out, c->key, c->key_len, NSRV_JSON_ESC_DEFAULT);
                nsrv_buf_append_ch(out, ':');
            }
            append_json_text(out, c);
        }
        nsrv_buf_append_ch(out, is_obj ? '}' : ']');
        break;
    }
    }
}

/* Fills ns from one namespace object; null values are skipped (fastjson never writes them). */
static void load_namespace(nsrv_kv_ns_t *ns, const nsrv_json_t *obj, nsrv_buf_t *scratch) {
    for (const nsrv_json_t *m = obj->child; m; m = m->next) {
        size_t len = 0;
        const char *text = nsrv_json_as_str(m, &len);
        if (!text) {
            if (m->type == NSRV_JSON_NULL)
                continue;
            nsrv_buf_reset(scratch);
            append_json_text(scratch, m);
            text = scratch->data;
            len = scratch->len;
        }
        nsrv__kv_ns_set(ns, m->key, m->key_len, text, len);
    }
}

/* Builds a separate table from the parse tree, so a bad file changes nothing. */
static int build_table(const nsrv_json_t *root, nsrv_kv_ns_t **table, char *err, size_t err_len) {
    if (root->type != NSRV_JSON_OBJECT) {
        nsrv_fail(err, err_len, 0, "top level is not a JSON object");
        return NSRV_EJSON;
    }
    const nsrv_json_t *ct = nsrv_json_get(root, "configTable");
    if (!ct || ct->type == NSRV_JSON_NULL)
        return 0;
    if (ct->type != NSRV_JSON_OBJECT) {
        nsrv_fail(err, err_len, 0, "\"configTable\" is not a JSON object");
        return NSRV_EJSON;
    }
    nsrv_buf_t scratch = NSRV_BUF_INIT;
    int rc = 0;
    for (const nsrv_json_t *n = ct->child; n; n = n->next) {
        if (n->type == NSRV_JSON_NULL)
            continue;
        if (n->type != NSRV_JSON_OBJECT) {
            nsrv_fail(err, err_len, 0, "namespace '%.64s' is not a JSON object", n->key);
            rc = NSRV_EJSON;
            break;
        }
        nsrv_kv_ns_t *ns = nsrv__kv_ns_get_or_add(table, n->key, n->key_len);
        /* A repeated namespace replaces the earlier one, as a HashMap put would. */
        nsrv__kv_ns_clear(ns);
        load_namespace(ns, n, &scratch);
    }
    nsrv_buf_deinit(&scratch);
    return rc;
}

int nsrv__kv_load_text(nsrv_kv_t *kv, const char *text, size_t len, char *err, size_t err_len) {
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, PARSE_ARENA_CHUNK);
    nsrv_kv_ns_t *table = NULL;
    nsrv_json_t *root = NULL;
    /* The table is length-carrying: a NUL in a file written by a Java
     * NameServer is kept exactly (requests cannot name such an entry, as
     * they refuse NUL, but listing and persisting keep it intact). */
    int rc = nsrv_json_parse_opts(&arena, text, len, NSRV_JSON_KEEP_NUL, &root, err, err_len);
    if (rc == 0)
        rc = build_table(root, &table, err, err_len);
    if (rc == 0)
        nsrv__kv_merge(kv, &table);
    nsrv__kv_table_free(&table);
    nsrv_arena_deinit(&arena);
    return rc < 0 ? rc : 0;
}

/*
 * Reads and loads one file. Returns 0, 1 if it is blank (nothing loaded),
 * -ENOENT if missing, NSRV_EJSON or another -errno, with a message in err.
 */
static int load_file(nsrv_kv_t *kv, const char *path, char *err, size_t err_len) {
    char *text = NULL;
    size_t len = 0;
    int rc = nsrv_file_read_all(path, NSRV_KV_MAX_FILE_BYTES, &text, &len);
    if (rc < 0) {
        nsrv_fail(err, err_len, 0, "cannot read: %s", nsrv_strerror(rc));
        return rc;
    }
    if (nsrv_is_blank(text, len))
        rc = 1;
    else
        rc = nsrv__kv_load_text(kv, text, len, err, err_len);
    nsrv_free(text);
    return rc;
}

int nsrv_kv_load(nsrv_kv_t *kv, char *err, size_t err_len) {
    if (!kv->path)
        return 0;
    char main_err[256] = "";
    int rc = load_file(kv, kv->path, main_err, sizeof main_err);
    if (rc == 0) {
        nsrv_log_notice("KV", "loaded kv config from '%s'", kv->path);
        return 0;
    }
    if (rc == -ENOENT) {
        nsrv_log_notice("KV", "no kv config file '%s', starting empty", kv->path);
        return 0;
    }

    /*
     * The main file is torn or unreadable. Our own writer never leaves it so
     * (tmp + rename), but the Java NameServer truncates and rewrites in place,
     * and it saved the previous content as .bak first.
     */
    size_t plen = strlen(kv->path);
    char *bak = nsrv_malloc(plen + 5);
    memcpy(bak, kv->path, plen);
    memcpy(bak + plen, ".bak", 5);
    char bak_err[256] = "";
    int bak_rc = load_file(kv, bak, bak_err, sizeof bak_err);
    int result = 0;
    if (bak_rc == 0) {
        if (rc == 1)
            nsrv_log_warn("KV",
                          "kv config file '%s' is empty; loaded the previous content from '%s'",
                          kv->path, bak);
        else
            nsrv_log_warn("KV", "kv config file '%s' is unusable (%s); loaded '%s' instead",
                          kv->path, main_err, bak);
    } else if (rc == 1) {
        /* An empty file is an empty table for Java too. */
        nsrv_log_warn("KV", "kv config file '%s' is empty, starting with no kv config", kv->path);
    } else {
        nsrv_fail(err, err_len, 0, "%s: %s; %s: %s", kv->path, main_err, bak,
                  bak_rc == 1 ? "empty" : bak_err);
        result = rc;
    }
    nsrv_free(bak);
    return result;
}

int nsrv__kv_persist(nsrv_kv_t *kv) {
    if (!kv->path || kv->persist_deferred)
        return 0;
    nsrv_buf_t text = NSRV_BUF_INIT;
    nsrv_kv_encode_file(kv, &text);
    int rc = nsrv_file_write_atomic(kv->path, text.data, text.len, true);
    nsrv_buf_deinit(&text);
    if (rc < 0)
        nsrv_log_error("KV", "cannot persist kv config to '%s': %s", kv->path, nsrv_strerror(rc));
    return rc;
}
