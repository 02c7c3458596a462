/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration key table as text for people: each key's type and its
 * default exactly as written in config_keys.def, for `nsrvd --help` and the
 * generated nsrvd(8) manual page, so neither can drift from the code.
 */
#include <string.h>

#include "nsrv/config.h"

typedef struct {
    const char *name;
    const char *type;
    const char *def; /* the table's default, stringified */
} key_doc_t;

static const key_doc_t key_docs[] = {
#define NSRV_CFG(name_, type_, def_, field_, flags_, min_, max_, check_) {#name_, #type_, #def_},
#include "nsrv/config_keys.def"
#undef NSRV_CFG
};

static const key_doc_t *find(size_t i) {
    return i < sizeof key_docs / sizeof key_docs[0] ? &key_docs[i] : NULL;
}

const char *nsrv_config_key_type_text(size_t i) {
    const key_doc_t *d = find(i);
    return d ? d->type : NULL;
}

/* Writes the default as a properties value: a string loses its quotes, a
 * NULL string default (computed at start from the environment) is "". */
const char *nsrv_config_key_default_text(size_t i, char *buf, size_t len) {
    const key_doc_t *d = find(i);
    if (!d || len == 0)
        return NULL;
    const char *s = d->def;
    size_t n = strlen(s);
    if (strcmp(s, "NULL") == 0) {
        n = 0;
    } else if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        s++;
        n -= 2;
    }
    if (n >= len)
        n = len - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return buf;
}

bool nsrv_config_key_default_computed(size_t i) {
    const key_doc_t *d = find(i);
    return d && strcmp(d->def, "NULL") == 0;
}
