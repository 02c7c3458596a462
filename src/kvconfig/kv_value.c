/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KV value texts: shared by the table and the copies the durable writer
 * encodes on its own thread (kv_snapshot.c), so a write of a 4 MiB value
 * does not copy it again on the loop thread. A reference count sits in front
 * of the text; it is atomic because the writer thread drops its references.
 *
 * A value is immutable, so its JSON form is too: the writer escapes a big
 * value once, on its first commit, and every later commit references that
 * form (or, when escaping changes nothing, the text itself between two quote
 * characters) instead of escaping 4 MiB again (nsrv_kv_encode_file_rope).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "nsrv/alloc.h"
#include "nsrv/json.h"

#include "kv_int.h"

/* The escaped form of a value whose escaping changes it: "...", quotes included. */
typedef struct {
    size_t len;
    char text[];
} kv_json_t;

/* kv_value_t.json: not yet known, escaping is the identity, or a kv_json_t pointer. */
#define JSON_UNKNOWN ((uintptr_t)0)
#define JSON_PLAIN ((uintptr_t)1)

typedef struct {
    atomic_size_t refs;
    _Atomic uintptr_t json; /* set once (compare-and-swap), freed with the value */
    char text[];
} kv_value_t;

static kv_value_t *value_of(char *text) {
    return (kv_value_t *)(text - offsetof(kv_value_t, text));
}

char *nsrv__kv_value_new(const char *s, size_t len) {
    kv_value_t *v = nsrv_malloc(sizeof *v + len + 1);
    atomic_init(&v->refs, 1);
    atomic_init(&v->json, JSON_UNKNOWN);
    if (len)
        memcpy(v->text, s, len);
    v->text[len] = '\0';
    return v->text;
}

char *nsrv_kv_value_make(const char *value, size_t len) {
    return nsrv__kv_value_new(value, len);
}

void nsrv_kv_value_release(char *made) {
    nsrv__kv_value_unref(made);
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
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) {
        uintptr_t j = atomic_load_explicit(&v->json, memory_order_acquire);
        if (j > JSON_PLAIN)
            nsrv_free((void *)j);
        nsrv_free(v);
    }
}

/* Escapes v once: JSON_PLAIN when the quoted text is the JSON form, else a kv_json_t. */
static uintptr_t json_of(kv_value_t *v, size_t len) {
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_buf_reserve(&b, sizeof(kv_json_t) + len + 2);
    b.len = sizeof(kv_json_t); /* room for the header, filled in below */
    nsrv_json_write_str(&b, v->text, len, NSRV_JSON_ESC_DEFAULT);
    size_t json_len = b.len - sizeof(kv_json_t);
    char *json_text = b.data + sizeof(kv_json_t);
    if (json_len == len + 2 && memcmp(json_text + 1, v->text, len) == 0) {
        nsrv_buf_deinit(&b);
        return JSON_PLAIN;
    }
    kv_json_t *j = (kv_json_t *)nsrv_buf_steal(&b, NULL);
    j->len = json_len;
    return (uintptr_t)j;
}

void nsrv__kv_value_write_json(nsrv_rope_t *r, char *text, size_t len) {
    if (len < NSRV_KV_VALUE_REF_MIN) {
        nsrv_json_write_str(&r->own, text, len, NSRV_JSON_ESC_DEFAULT);
        return;
    }
    kv_value_t *v = value_of(text);
    uintptr_t j = atomic_load_explicit(&v->json, memory_order_acquire);
    if (j == JSON_UNKNOWN) {
        uintptr_t mine = json_of(v, len);
        if (atomic_compare_exchange_strong_explicit(&v->json, &j, mine, memory_order_acq_rel,
                                                    memory_order_acquire))
            j = mine;
        else if (mine > JSON_PLAIN)
            nsrv_free((void *)mine); /* another thread was first: j is its form */
    }
    if (j == JSON_PLAIN) {
        nsrv_buf_append_ch(&r->own, '"');
        nsrv_rope_ref(r, text, len);
        nsrv_buf_append_ch(&r->own, '"');
    } else {
        const kv_json_t *json = (const kv_json_t *)j;
        nsrv_rope_ref(r, json->text, json->len);
    }
}
