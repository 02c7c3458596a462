/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to src/kvconfig: the table layout shared by kv.c (the in-memory
 * table and its encodings, no I/O) and kv_store.c (file load and persist).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/alloc.h"
#include "nsrv/kv.h"
#include "nsrv/rope.h"

#include "nsrv/uthash.h"

/* Key and value keep their lengths: a file may hold "\u0000" inside a string. */
typedef struct nsrv_kv_entry {
    char *key;
    size_t key_len;
    char *value; /* NULL: Java's stored null (reads as absent, not written); reference counted */
    size_t value_len;
    UT_hash_handle hh;
} nsrv_kv_entry_t;

typedef struct nsrv_kv_ns {
    char *name;
    size_t name_len;
    nsrv_kv_entry_t *entries; /* uthash head; iteration is insertion order */
    UT_hash_handle hh;
} nsrv_kv_ns_t;

struct nsrv_kv {
    char *path;          /* NULL: in-memory only */
    nsrv_kv_ns_t *table; /* uthash head; iteration is insertion order */
    uint64_t generation;
    bool persist_deferred; /* put/delete leave persisting to the caller (kv_snapshot.c) */
};

/* Finds or appends namespace name[0..len) in *table. */
nsrv_kv_ns_t *nsrv__kv_ns_get_or_add(nsrv_kv_ns_t **table, const char *name, size_t len);
/* Removes every key of ns (the namespace itself stays). */
void nsrv__kv_ns_clear(nsrv_kv_ns_t *ns);
/* Sets key = value in ns, overwriting in place; value NULL stores null. */
void nsrv__kv_ns_set(nsrv_kv_ns_t *ns, const char *key, size_t key_len, const char *value,
                     size_t value_len);
/* Sets key = v in ns like nsrv__kv_ns_set, taking over one reference to v, a
 * value text from the table (nsrv__kv_value_ref) or NULL. */
void nsrv__kv_ns_set_shared(nsrv_kv_ns_t *ns, const char *key, size_t key_len, char *v,
                            size_t value_len);
/* A new value text (kv_value.c): s[0..len) copied, NUL-terminated, one reference. */
char *nsrv__kv_value_new(const char *s, size_t len);
/* Value texts are reference counted (shared with snapshots); NULL is accepted. */
char *nsrv__kv_value_ref(char *text);
void nsrv__kv_value_unref(char *text);
/*
 * Appends value text[0..len) to r as a quoted JSON string (NSRV_JSON_ESC_DEFAULT). A big
 * value is escaped once in its life, the form kept with it, and referenced, not copied:
 * the caller keeps a reference to the value until r is written. Any thread.
 */
void nsrv__kv_value_write_json(nsrv_rope_t *r, char *text, size_t len);
/* Frees every namespace of *table and sets it to NULL. */
void nsrv__kv_table_free(nsrv_kv_ns_t **table);
/* Moves each namespace of *src into kv, replacing same-named ones; empties *src. */
void nsrv__kv_merge(nsrv_kv_t *kv, nsrv_kv_ns_t **src);

/*
 * Parses kvConfig.json text and merges it into kv (see nsrv_kv_load for the
 * accepted shape). On error returns NSRV_EJSON with a message in err and
 * leaves kv unchanged. Used by nsrv_kv_load and the fuzz target.
 */
int nsrv__kv_load_text(nsrv_kv_t *kv, const char *text, size_t len, char *err, size_t err_len);
/* Writes the whole table to kv->path (no-op without a path). Returns 0 or -errno. */
int nsrv__kv_persist(nsrv_kv_t *kv);
