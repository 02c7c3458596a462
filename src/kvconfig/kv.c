/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-memory KV config table (Java KVConfigManager, spec §4) and its JSON
 * encodings (kvConfig.json, KVTable §8.5). No I/O here: persistence is
 * delegated to kv_store.c. Loop thread only.
 */
#include "nsrv/kv.h"

#include <errno.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/json.h"

#include "kv_int.h"

nsrv_kv_t *nsrv_kv_create(const char *path) {
    nsrv_kv_t *kv = nsrv_calloc(1, sizeof *kv);
    kv->path = path ? nsrv_strdup(path) : NULL;
    return kv;
}

void nsrv_kv_destroy(nsrv_kv_t **kv) {
    if (!kv || !*kv)
        return;
    nsrv__kv_table_free(&(*kv)->table);
    nsrv_free((*kv)->path);
    nsrv_free(*kv);
    *kv = NULL;
}

static void entry_free(nsrv_kv_entry_t *e) {
    nsrv_free(e->key);
    nsrv_free(e->value);
    nsrv_free(e);
}

static void ns_free(nsrv_kv_ns_t *ns) {
    nsrv__kv_ns_clear(ns);
    nsrv_free(ns->name);
    nsrv_free(ns);
}

void nsrv__kv_ns_clear(nsrv_kv_ns_t *ns) {
    nsrv_kv_entry_t *e, *tmp;
    HASH_ITER(hh, ns->entries, e, tmp) {
        HASH_DEL(ns->entries, e);
        entry_free(e);
    }
}

void nsrv__kv_table_free(nsrv_kv_ns_t **table) {
    nsrv_kv_ns_t *ns, *tmp;
    HASH_ITER(hh, *table, ns, tmp) {
        HASH_DEL(*table, ns);
        ns_free(ns);
    }
    *table = NULL;
}

static nsrv_kv_ns_t *ns_find(nsrv_kv_ns_t *table, const char *name, size_t len) {
    nsrv_kv_ns_t *ns = NULL;
    HASH_FIND(hh, table, name, len, ns);
    return ns;
}

static nsrv_kv_entry_t *entry_find(const nsrv_kv_ns_t *ns, const char *key, size_t len) {
    nsrv_kv_entry_t *e = NULL;
    HASH_FIND(hh, ns->entries, key, len, e);
    return e;
}

nsrv_kv_ns_t *nsrv__kv_ns_get_or_add(nsrv_kv_ns_t **table, const char *name, size_t len) {
    nsrv_kv_ns_t *ns = ns_find(*table, name, len);
    if (ns)
        return ns;
    ns = nsrv_calloc(1, sizeof *ns);
    ns->name = nsrv_strndup(name, len);
    ns->name_len = len;
    HASH_ADD_KEYPTR(hh, *table, ns->name, ns->name_len, ns);
    return ns;
}

void nsrv__kv_ns_set(nsrv_kv_ns_t *ns, const char *key, size_t key_len, const char *value,
                     size_t value_len) {
    char *v = value ? nsrv_strndup(value, value_len) : NULL;
    nsrv_kv_entry_t *e = entry_find(ns, key, key_len);
    if (e) {
        /* Overwrite in place so the key keeps its position in the encodings. */
        nsrv_free(e->value);
    } else {
        e = nsrv_calloc(1, sizeof *e);
        e->key = nsrv_strndup(key, key_len);
        e->key_len = key_len;
        HASH_ADD_KEYPTR(hh, ns->entries, e->key, e->key_len, e);
    }
    e->value = v;
    e->value_len = value ? value_len : 0;
}

void nsrv__kv_merge(nsrv_kv_t *kv, nsrv_kv_ns_t **src) {
    if (!*src)
        return;
    nsrv_kv_ns_t *ns, *tmp;
    HASH_ITER(hh, *src, ns, tmp) {
        HASH_DEL(*src, ns);
        nsrv_kv_ns_t *old = ns_find(kv->table, ns->name, ns->name_len);
        if (old) {
            /* Java's putAll replaces the whole inner map; keep the old slot for stable order. */
            nsrv__kv_ns_clear(old);
            old->entries = ns->entries;
            ns->entries = NULL;
            ns_free(ns);
        } else {
            HASH_ADD_KEYPTR(hh, kv->table, ns->name, ns->name_len, ns);
        }
    }
    kv->generation++;
}

int nsrv_kv_put(nsrv_kv_t *kv, const char *ns, const char *key, const char *value) {
    if (!ns || !key)
        return -EINVAL;
    nsrv_kv_ns_t *n = nsrv__kv_ns_get_or_add(&kv->table, ns, strlen(ns));
    nsrv__kv_ns_set(n, key, strlen(key), value, value ? strlen(value) : 0);
    kv->generation++;
    return nsrv__kv_persist(kv);
}

const char *nsrv_kv_get(const nsrv_kv_t *kv, const char *ns, const char *key) {
    if (!ns || !key)
        return NULL;
    const nsrv_kv_ns_t *n = ns_find(kv->table, ns, strlen(ns));
    if (!n)
        return NULL;
    const nsrv_kv_entry_t *e = entry_find(n, key, strlen(key));
    return e ? e->value : NULL;
}

int nsrv_kv_delete(nsrv_kv_t *kv, const char *ns, const char *key) {
    if (!ns || !key)
        return -EINVAL;
    nsrv_kv_ns_t *n = ns_find(kv->table, ns, strlen(ns));
    nsrv_kv_entry_t *e = n ? entry_find(n, key, strlen(key)) : NULL;
    if (e) {
        HASH_DEL(n->entries, e);
        entry_free(e);
        kv->generation++;
    }
    /* Java's deleteKVConfig persists unconditionally; so do we (spec §2.3). */
    return nsrv__kv_persist(kv);
}

bool nsrv_kv_has_namespace(const nsrv_kv_t *kv, const char *ns) {
    return ns && ns_find(kv->table, ns, strlen(ns)) != NULL;
}

/* {"k":"v",...}: null values are omitted, as fastjson omits null map values. */
static void encode_entries(const nsrv_kv_ns_t *ns, nsrv_buf_t *out) {
    nsrv_buf_append_ch(out, '{');
    bool first = true;
    for (const nsrv_kv_entry_t *e = ns->entries; e; e = e->hh.next) {
        if (!e->value)
            continue;
        if (!first)
            nsrv_buf_append_ch(out, ',');
        first = false;
        nsrv_json_write_str(out, e->key, e->key_len, NSRV_JSON_ESC_DEFAULT);
        nsrv_buf_append_ch(out, ':');
        nsrv_json_write_str(out, e->value, e->value_len, NSRV_JSON_ESC_DEFAULT);
    }
    nsrv_buf_append_ch(out, '}');
}

bool nsrv_kv_encode_namespace(const nsrv_kv_t *kv, const char *ns, nsrv_buf_t *out) {
    const nsrv_kv_ns_t *n = ns ? ns_find(kv->table, ns, strlen(ns)) : NULL;
    if (!n)
        return false;
    nsrv_buf_append_c(out, "{\"table\":");
    encode_entries(n, out);
    nsrv_buf_append_ch(out, '}');
    return true;
}

void nsrv_kv_encode_file(const nsrv_kv_t *kv, nsrv_buf_t *out) {
    nsrv_buf_append_c(out, "{\"configTable\":{");
    for (const nsrv_kv_ns_t *n = kv->table; n; n = n->hh.next) {
        if (n != kv->table)
            nsrv_buf_append_ch(out, ',');
        nsrv_json_write_str(out, n->name, n->name_len, NSRV_JSON_ESC_DEFAULT);
        nsrv_buf_append_ch(out, ':');
        encode_entries(n, out);
    }
    nsrv_buf_append_c(out, "}}");
}

uint64_t nsrv_kv_generation(const nsrv_kv_t *kv) {
    return kv->generation;
}
