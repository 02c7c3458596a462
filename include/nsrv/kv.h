/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The KV config table (Java KVConfigManager, proto/requests.md §4): namespace → key → value,
 * persisted as kvConfig.json ({"configTable":{ns:{k:v}}}, compact fastjson)
 * after every put and delete, atomically and with a ".bak" of the previous
 * content. Loop thread only. put/delete write the file themselves (blocking on
 * fsync) unless nsrv_kv_defer_persist was called: then they change memory
 * only, and the server hands nsrv_kv_clone copies to its durable writer
 * thread (include/nsrv/writer.h), which answers each request once it is on disk.
 * The file parser handles outside bytes and is fuzzed by
 * src/kvconfig/fuzz/fuzz_kv_load.c.
 *
 * Strings are NUL-terminated C strings at this API; a key or value read from
 * the file may contain "\u0000", which is kept (and written back) exactly, but
 * a C-string lookup sees it only up to the first NUL.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/buf.h"
#include "nsrv/rope.h"

/* The namespace of ordered-topic queue layouts (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG,
 * proto/route.md §8). */
#define NSRV_KV_NS_ORDER_TOPIC "ORDER_TOPIC_CONFIG"

/* Largest kvConfig.json (or .bak) that load reads; bigger files are refused, not truncated. */
#define NSRV_KV_MAX_FILE_BYTES ((size_t)64 << 20)

typedef struct nsrv_kv nsrv_kv_t;

/*
 * Creates an empty table persisted at path (copied; NULL: in-memory only, for
 * tests). Nothing is read until nsrv_kv_load. Never NULL (aborts on OOM).
 */
nsrv_kv_t *nsrv_kv_create(const char *path);

/* Frees the table and sets *kv to NULL; accepts NULL and *kv == NULL. */
void nsrv_kv_destroy(nsrv_kv_t **kv);

/*
 * Loads the file at path and merges it in: each namespace in the file
 * replaces the same-named namespace in memory (Java's configTable.putAll).
 * - No path, or the file is missing: nothing changes, returns 0.
 * - The file is empty or blank (a Java NameServer crashed in its
 *   truncate-then-write): "<path>.bak" is loaded if it parses, otherwise the
 *   table stays as it is; returns 0 with a warning logged.
 * - The file does not parse, or cannot be read (permissions, over
 *   NSRV_KV_MAX_FILE_BYTES): if "<path>.bak" parses it is loaded with a
 *   warning and 0 is returned; otherwise returns NSRV_EJSON (parse error) or
 *   the -errno of the read, with a message in err (if err != NULL), and the
 *   table is unchanged.
 * Accepted: {"configTable":{ns:{k:v}}}; unknown top-level keys are ignored; a
 * missing or null configTable is empty; a null namespace or value is skipped;
 * numbers, booleans, objects and arrays are stored as their compact JSON
 * text. A configTable or namespace that is not an object is an error.
 */
int nsrv_kv_load(nsrv_kv_t *kv, char *err, size_t err_len);

/*
 * Creates the namespace if needed, sets key = value (copied) and persists.
 * value NULL stores Java's null: the key exists but reads as absent and is
 * omitted from the file and from encodings. Returns 0, -EINVAL if ns or key
 * is NULL (nothing changes), or the -errno of persistence (the in-memory
 * change stays, as in Java, which only logs the failed write).
 */
int nsrv_kv_put(nsrv_kv_t *kv, const char *ns, const char *key, const char *value);

/*
 * A value's stored form made ahead, on any thread (a big value's copy off the event loop):
 * nsrv_kv_put_value takes it over without copying; nsrv_kv_value_release drops one unused.
 */
char *nsrv_kv_value_make(const char *value, size_t len);
void nsrv_kv_value_release(char *made);
/* nsrv_kv_put with a value from nsrv_kv_value_make (len its length), which it takes over. */
int nsrv_kv_put_value(nsrv_kv_t *kv, const char *ns, const char *key, char *made, size_t len);

/* Borrowed value valid until the next mutation; NULL if absent or null, or if ns/key is NULL. */
const char *nsrv_kv_get(const nsrv_kv_t *kv, const char *ns, const char *key);

/*
 * Removes key if present. The namespace stays even when it becomes empty, and
 * the file is ALWAYS rewritten, even when nothing was removed (Java does so).
 * Returns 0, -EINVAL if ns or key is NULL (nothing written), or the -errno of
 * persistence.
 */
int nsrv_kv_delete(nsrv_kv_t *kv, const char *ns, const char *key);

/* Keys holding a value across all namespaces (a walk: for /metrics, not the request path);
 * *namespaces gets the namespace count. */
size_t nsrv_kv_entry_count(const nsrv_kv_t *kv, size_t *namespaces);
/* True if the namespace exists, even when empty. */
bool nsrv_kv_has_namespace(const nsrv_kv_t *kv, const char *ns);

/*
 * Appends the KVTable body {"table":{"k":"v",...}} (compact, fastjson default
 * escaping, insertion order, null values omitted) for ns. Returns false and
 * appends nothing if the namespace does not exist.
 */
bool nsrv_kv_encode_namespace(const nsrv_kv_t *kv, const char *ns, nsrv_buf_t *out);

/*
 * Appends the whole file text {"configTable":{ns:{k:v}}}: compact, one line,
 * no trailing newline, namespaces and keys in insertion order, emptied
 * namespaces as {}, null values omitted.
 */
void nsrv_kv_encode_file(const nsrv_kv_t *kv, nsrv_buf_t *out);

/*
 * The same text as nsrv_kv_encode_file, byte for byte, appended to a rope for writev:
 * big values (NSRV_KV_VALUE_REF_MIN bytes or more) are escaped once in their life, on
 * first use, and referenced from then on, so a commit of a table holding a 4 MiB value
 * neither escapes nor copies it again. The rope references kv's values: keep kv (a clone
 * from nsrv_kv_clone, normally) until the rope is written. Any thread that owns kv.
 */
void nsrv_kv_encode_file_rope(const nsrv_kv_t *kv, nsrv_rope_t *out);
/* Values shorter than this are escaped into the rope's own text on every encoding. */
#define NSRV_KV_VALUE_REF_MIN 1024

/*
 * Counter bumped by every put, every delete that removed a key, and every
 * load that changed the table; callers compare it to invalidate caches (for
 * example the encoded ORDER_TOPIC_CONFIG table).
 */
uint64_t nsrv_kv_generation(const nsrv_kv_t *kv);

/*
 * From now on put and delete change the table in memory only and never touch
 * the file (they return 0 where they would have persisted); the caller
 * persists copies taken with nsrv_kv_clone.
 */
void nsrv_kv_defer_persist(nsrv_kv_t *kv);

/* The file path given to nsrv_kv_create (NULL: in-memory only). */
const char *nsrv_kv_path(const nsrv_kv_t *kv);

/*
 * A copy of the table, in-memory only (no path), for encoding on another
 * thread: it shares only the immutable, reference-counted value texts, so it
 * may be encoded and destroyed on another thread while kv keeps changing.
 * Costs O(entries), not O(bytes). Never NULL (aborts on OOM).
 */
nsrv_kv_t *nsrv_kv_clone(const nsrv_kv_t *kv);

/* Replaces kv's content by from's (values shared, as a clone): a write that failed is
 * undone in memory. The generation moves on, so readers see a change. */
void nsrv_kv_restore(nsrv_kv_t *kv, const nsrv_kv_t *from);
