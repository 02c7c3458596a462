/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-memory KV config table (Java KVConfigManager, proto/requests.md §4) and its JSON
 * encodings (kvConfig.json, KVTable proto/requests.md §3.5). No I/O here: persistence is
 * delegated to kv_store.c. Loop thread only.
 */
#include "nsrv/kv.h"

#include <errno.h>
#include <stdatomic.h>
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

/*
 * A value's bytes are shared by the table and the copies the durable writer
 * encodes on its own thread (kv_snapshot.c), so a write of a 4 MiB value
 * does not copy it again on the loop thread. A reference count sits in front
 * of the text; it is atomic because the writer thread drops its references.
 */
typedef struct {
    atomic_size_t refs;
    char text[];
} kv_value_t;

static kv_value_t *value_of(char *text) {
    return (kv_value_t *)(text - offsetof(kv_value_t, text));
}

static char *value_new(const char *s, size_t len) {
    kv_value_t *v = nsrv_malloc(sizeof *v + len + 1);
    atomic_init(&v->refs, 1);
    if (len)
        memcpy(v->text, s, len);
    v->text[len] = '\0';
    return v->text;
}

char *nsrv__kv_value_ref(char *text) {
    if (text)
        atomic_fetch_add_explicit(&value_of(text)->refs, 1, memory_order_relaxed);
    return text;
}

void nsrv__kv_value_unref(char *text) {
    if (!text)
        return;
    kv_value_t *v = value_of(text);
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1)
        nsrv_free(v);
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
    nsrv__kv_ns_set_shared(ns, key, key_len, value ? value_new(value, value_len) : NULL, value_len);
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
    return nsrv_kv_put_value(kv, ns, key, value ? value_new(value, len) : NULL, len);
}

char *nsrv_kv_value_make(const char *value, size_t len) {
    return value_new(value, len);
}

void nsrv_kv_value_release(char *made) {
    nsrv__kv_value_unref(made);
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

/* {"k":"v",...}: null values are omitted, as fastjson omits null map values. */
static void encode_entries(const nsrv_kv_ns_t *ns, nsrv_buf_t *out) {
    nsrv_buf_append_ch(out, '{');
    bool first = true;
    for (const nsrv_kv_entry_t *e = ns->entries; e; e = e->hh.next) {
        if (e->value) {
            nsrv_buf_append_sep(out, &first);
            nsrv_json_write_str(out, e->key, e->key_len, NSRV_JSON_ESC_DEFAULT);
            nsrv_buf_append_ch(out, ':');
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
