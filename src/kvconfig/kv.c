/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-memory KV config table (Java KVConfigManager, proto/requests.md §4) and its JSON
 * encodings (kvConfig.json, KVTable proto/requests.md §3.5). No I/O here: persistence is
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
    nsrv__kv_value_unref(e->value);
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
    nsrv__kv_ns_set_shared(ns, key, key_len, value ? nsrv__kv_value_new(value, value_len) : NULL,
                           value_len);
}

void nsrv__kv_ns_set_shared(nsrv_kv_ns_t *ns, const char *key, size_t key_len, char *v,
                            size_t value_len) {
    nsrv_kv_entry_t *e = entry_find(ns, key, key_len);
    if (e) {
        /* Overwrite in place so the key keeps its position in the encodings. */
        nsrv__kv_value_unref(e->value);
    } else {
        e = nsrv_calloc(1, sizeof *e);
        e->key = nsrv_strndup(key, key_len);
        e->key_len = key_len;
        HASH_ADD_KEYPTR(hh, ns->entries, e->key, e->key_len, e);
    }
    e->value = v;
    e->value_len = v ? value_len : 0;
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
    size_t len = value ? strlen(value) : 0;
    return nsrv_kv_put_value(kv, ns, key, value ? nsrv__kv_value_new(value, len) : NULL, len);
}

int nsrv_kv_put_value(nsrv_kv_t *kv, const char *ns, const char *key, char *made, size_t len) {
    if (!ns || !key) {
        nsrv__kv_value_unref(made);
        return -EINVAL;
    }
    nsrv_kv_ns_t *n = nsrv__kv_ns_get_or_add(&kv->table, ns, strlen(ns));
    nsrv__kv_ns_set_shared(n, key, strlen(key), made, len);
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
    /* Java's deleteKVConfig persists unconditionally; so do we (proto/requests.md §2.3). */
    return nsrv__kv_persist(kv);
}

size_t nsrv_kv_entry_count(const nsrv_kv_t *kv, size_t *namespaces) {
    size_t n = 0;
    *namespaces = HASH_COUNT(kv->table);
    for (const nsrv_kv_ns_t *ns = kv->table; ns; ns = ns->hh.next)
        for (const nsrv_kv_entry_t *e = ns->entries; e; e = e->hh.next)
            n += e->value != NULL;
    return n;
}

bool nsrv_kv_has_namespace(const nsrv_kv_t *kv, const char *ns) {
    return ns && ns_find(kv->table, ns, strlen(ns)) != NULL;
}

/* {"k":"v",...}: null values are omitted, as fastjson omits null map values. With a rope
 * (out is then its own text), big values are referenced in their cached JSON form. */
static void encode_entries(const nsrv_kv_ns_t *ns, nsrv_buf_t *out, nsrv_rope_t *rope) {
    nsrv_buf_append_ch(out, '{');
    bool first = true;
    for (const nsrv_kv_entry_t *e = ns->entries; e; e = e->hh.next) {
        if (e->value) {
            nsrv_buf_append_sep(out, &first);
            nsrv_json_write_str(out, e->key, e->key_len, NSRV_JSON_ESC_DEFAULT);
            nsrv_buf_append_ch(out, ':');
            if (rope)
                nsrv__kv_value_write_json(rope, e->value, e->value_len);
            else
                nsrv_json_write_str(out, e->value, e->value_len, NSRV_JSON_ESC_DEFAULT);
        }
    }
    nsrv_buf_append_ch(out, '}');
}

bool nsrv_kv_encode_namespace(const nsrv_kv_t *kv, const char *ns, nsrv_buf_t *out) {
    const nsrv_kv_ns_t *n = ns ? ns_find(kv->table, ns, strlen(ns)) : NULL;
    if (!n)
        return false;
    nsrv_buf_append_c(out, "{\"table\":");
    encode_entries(n, out, NULL);
    nsrv_buf_append_ch(out, '}');
    return true;
}

static void encode_file(const nsrv_kv_t *kv, nsrv_buf_t *out, nsrv_rope_t *rope) {
    nsrv_buf_append_c(out, "{\"configTable\":{");
    for (const nsrv_kv_ns_t *n = kv->table; n; n = n->hh.next) {
        if (n != kv->table)
            nsrv_buf_append_ch(out, ',');
        nsrv_json_write_str(out, n->name, n->name_len, NSRV_JSON_ESC_DEFAULT);
        nsrv_buf_append_ch(out, ':');
        encode_entries(n, out, rope);
    }
    nsrv_buf_append_c(out, "}}");
}

void nsrv_kv_encode_file(const nsrv_kv_t *kv, nsrv_buf_t *out) {
    encode_file(kv, out, NULL);
}

void nsrv_kv_encode_file_rope(const nsrv_kv_t *kv, nsrv_rope_t *out) {
    encode_file(kv, &out->own, out);
}

uint64_t nsrv_kv_generation(const nsrv_kv_t *kv) {
    return kv->generation;
}
