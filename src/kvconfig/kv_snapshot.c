/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Copies of the KV table for the durable writer: the loop thread keeps
 * changing the table while the writer thread encodes and writes a copy, so
 * the copy shares no mutable memory with it: keys and the table structure
 * are copied, value texts (immutable, reference counted in kv.c) are shared,
 * so a copy costs O(entries), not O(bytes). The JSON encoding runs on the
 * writer.
 */
#include "nsrv/kv.h"

#include "nsrv/alloc.h"

#include "kv_int.h"

void nsrv_kv_defer_persist(nsrv_kv_t *kv) {
    kv->persist_deferred = true;
}

const char *nsrv_kv_path(const nsrv_kv_t *kv) {
    return kv->path;
}

nsrv_kv_t *nsrv_kv_clone(const nsrv_kv_t *kv) {
    nsrv_kv_t *copy = nsrv_kv_create(NULL);
    for (const nsrv_kv_ns_t *n = kv->table; n; n = n->hh.next) {
        nsrv_kv_ns_t *cn = nsrv__kv_ns_get_or_add(&copy->table, n->name, n->name_len);
        for (const nsrv_kv_entry_t *e = n->entries; e; e = e->hh.next)
            nsrv__kv_ns_set_shared(cn, e->key, e->key_len, nsrv__kv_value_ref(e->value),
                                   e->value_len);
    }
    copy->generation = kv->generation;
    return copy;
}

void nsrv_kv_restore(nsrv_kv_t *kv, const nsrv_kv_t *from) {
    nsrv_kv_t *copy = nsrv_kv_clone(from);
    nsrv__kv_table_free(&kv->table);
    kv->table = copy->table;
    copy->table = NULL;
    kv->generation++;
    nsrv_kv_destroy(&copy);
}
