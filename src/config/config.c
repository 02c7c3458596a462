/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration table (config_keys.def) and everything driven by it:
 * defaults, strict validation, loading the -c file, rendering for
 * GET_NAMESRV_CONFIG / -p, UPDATE_NAMESRV_CONFIG with the blacklist, and
 * persistence. Loop thread only. UPDATE bodies come from the network: they
 * go through nsrv_props_parse and are never trusted to name a path.
 */
#include "nsrv/config.h"

#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/common.h"
#include "nsrv/fileio.h"
#include "nsrv/log.h"
#include "nsrv/text.h"
#include "nsrv/tls_names.h"

/* A config file is a few kilobytes; this cap only stops a wrong -c argument
 * (a log file, a device) from being slurped. */
#define CONFIG_FILE_MAX_BYTES (4u * 1024 * 1024)

typedef enum { KT_BOOL, KT_INT, KT_LONG, KT_STRING } key_type_t;

typedef struct {
    const char *name;
    key_type_t type;
    size_t offset;
    unsigned flags;
    int64_t min, max;
    int64_t def_num;
    const char *def_str;
    /* Extra STRING validation: returns NULL if fine, else what is expected. */
    const char *(*check)(const char *value);
} key_desc_t;

static const char *check_log_level(const char *value) {
    return nsrv_log_level_parse(value) >= 0 ? NULL : "one of error, warn, notice, info, debug";
}

#define DEF_BOOL(d) .def_num = (d)
#define DEF_INT(d) .def_num = (d)
#define DEF_LONG(d) .def_num = (d)
#define DEF_STRING(d) .def_str = (d)
static const char *check_tls_mode(const char *value) {
    return nsrv_tls_mode_parse(value) >= 0 ? NULL : "one of disabled, permissive, enforcing";
}

static const char *check_tls_auth(const char *value) {
    return nsrv_tls_auth_parse(value) >= 0 ? NULL : "one of none, optional, require";
}

#define CHECK_NONE NULL
#define CHECK_LOG_LEVEL check_log_level
#define CHECK_TLS_MODE check_tls_mode
#define CHECK_TLS_AUTH check_tls_auth

static const key_desc_t keys[] = {
#define NSRV_CFG(name_, type_, def_, field_, flags_, min_, max_, check_)                           \
    {.name = #name_,                                                                               \
     .type = KT_##type_,                                                                           \
     .offset = offsetof(nsrv_config_t, field_),                                                    \
     .flags = (flags_),                                                                            \
     .min = (min_),                                                                                \
     .max = (max_),                                                                                \
     DEF_##type_(def_),                                                                            \
     .check = CHECK_##check_},
#include "nsrv/config_keys.def"
#undef NSRV_CFG
};

#define NKEYS NSRV_ARRAY_LEN(keys)

/* A validated value waiting to be applied (all-or-nothing updates). */
typedef struct {
    bool set;
    bool b;
    int64_t n;
    char *s; /* owned until applied */
} pending_t;

static const key_desc_t *find_key(const char *name, size_t *idx) {
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(keys[i].name, name) == 0) {
            if (idx)
                *idx = i;
            return &keys[i];
        }
    }
    return NULL;
}

static bool *field_bool(nsrv_config_t *cfg, const key_desc_t *d) {
    return (bool *)((char *)cfg + d->offset);
}
static int32_t *field_int(nsrv_config_t *cfg, const key_desc_t *d) {
    return (int32_t *)((char *)cfg + d->offset);
}
static int64_t *field_long(nsrv_config_t *cfg, const key_desc_t *d) {
    return (int64_t *)((char *)cfg + d->offset);
}
static char **field_str(nsrv_config_t *cfg, const key_desc_t *d) {
    return (char **)((char *)cfg + d->offset);
}
static const void *field_at(const nsrv_config_t *cfg, const key_desc_t *d) {
    return (const char *)cfg + d->offset;
}
static const char *field_cstr(const nsrv_config_t *cfg, const key_desc_t *d) {
    return *(char *const *)((const char *)cfg + d->offset);
}

size_t nsrv_config_key_count(void) {
    return NKEYS;
}

const char *nsrv_config_key_name(size_t i) {
    return i < NKEYS ? keys[i].name : NULL;
}

int nsrv_config_key_flags(const char *name) {
    const key_desc_t *d = find_key(name, NULL);
    return d ? (int)d->flags : -1;
}

/* ---- defaults ------------------------------------------------------------- */

/* Java's user.home: $HOME, else the passwd entry. */
static const char *home_dir(void) {
    const char *h = getenv("HOME");
    if (h && *h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir && *pw->pw_dir)
        return pw->pw_dir;
    return "/";
}

static char *home_path(const char *rel) {
    const char *h = home_dir();
    size_t hl = strlen(h);
    while (hl > 0 && h[hl - 1] == '/')
        hl--;
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_buf_append(&b, h, hl);
    nsrv_buf_append_ch(&b, '/');
    nsrv_buf_append_c(&b, rel);
    return nsrv_buf_steal(&b, NULL);
}

/* Moves v into d's field of cfg (a string changes hands: v->s becomes NULL). */
static void store_value(nsrv_config_t *cfg, const key_desc_t *d, pending_t *v) {
    switch (d->type) {
    case KT_BOOL:
        *field_bool(cfg, d) = v->b;
        break;
    case KT_INT:
        *field_int(cfg, d) = (int32_t)v->n;
        break;
    case KT_LONG:
        *field_long(cfg, d) = v->n;
        break;
    case KT_STRING:
        nsrv_free(*field_str(cfg, d));
        *field_str(cfg, d) = v->s;
        v->s = NULL;
        break;
    }
}

int nsrv_config_adopt(nsrv_config_t *dst, const nsrv_config_t *src, const char *const *names) {
    for (; *names; names++) {
        const key_desc_t *d = find_key(*names, NULL);
        if (!d)
            return -1;
        pending_t v = {.set = true};
        switch (d->type) {
        case KT_BOOL:
            v.b = *(const bool *)field_at(src, d);
            break;
        case KT_INT:
            v.n = *(const int32_t *)field_at(src, d);
            break;
        case KT_LONG:
            v.n = *(const int64_t *)field_at(src, d);
            break;
        case KT_STRING:
            v.s = nsrv_strdup(field_cstr(src, d));
            break;
        }
        store_value(dst, d, &v);
    }
    return 0;
}

size_t nsrv_config_keys_with(unsigned flags, const char **names, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < NKEYS && n + 1 < cap; i++) {
        if (keys[i].flags & flags)
            names[n++] = keys[i].name;
    }
    if (cap)
        names[n] = NULL;
    return n;
}

bool nsrv_config_key_same(const nsrv_config_t *a, const nsrv_config_t *b, size_t i) {
    if (i >= NKEYS)
        return true;
    const key_desc_t *d = &keys[i];
    switch (d->type) {
    case KT_BOOL:
        return *(const bool *)field_at(a, d) == *(const bool *)field_at(b, d);
    case KT_INT:
        return *(const int32_t *)field_at(a, d) == *(const int32_t *)field_at(b, d);
    case KT_LONG:
        return *(const int64_t *)field_at(a, d) == *(const int64_t *)field_at(b, d);
    case KT_STRING:
        break;
    }
    return strcmp(field_cstr(a, d), field_cstr(b, d)) == 0;
}

void nsrv_config_adopt_all(nsrv_config_t *dst, const nsrv_config_t *src) {
    for (size_t i = 0; i < NKEYS; i++) {
        const char *one[] = {keys[i].name, NULL};
        (void)nsrv_config_adopt(dst, src, one);
    }
}

void nsrv_config_init_defaults(nsrv_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NKEYS; i++) {
        const key_desc_t *d = &keys[i];
        pending_t def = {.set = true, .b = d->def_num != 0, .n = d->def_num};
        if (d->type == KT_STRING)
            def.s = nsrv_strdup(d->def_str ? d->def_str : "");
        store_value(cfg, d, &def);
    }
    /* The defaults the table cannot hold (NULL in config_keys.def). */
    const char *rh = getenv("ROCKETMQ_HOME");
    nsrv_free(cfg->rocketmq_home);
    cfg->rocketmq_home = nsrv_strdup(rh ? rh : "");
    nsrv_free(cfg->kv_config_path);
    cfg->kv_config_path = home_path("namesrv/kvConfig.json");
    nsrv_free(cfg->config_store_path);
    cfg->config_store_path = home_path("namesrv/namesrv.properties");
    nsrv_props_init(&cfg->extra);
    cfg->version = 0;
}

void nsrv_config_free(nsrv_config_t *cfg) {
    for (size_t i = 0; i < NKEYS; i++) {
        if (keys[i].type == KT_STRING) {
            char **s = field_str(cfg, &keys[i]);
            nsrv_free(*s);
            *s = NULL;
        }
    }
    nsrv_props_free(&cfg->extra);
}

/* Escapes s into b (for a log line) and returns it as a C string, "" included. */
static const char *escaped(nsrv_buf_t *b, const char *s) {
    nsrv_props_escape_value(b, s);
    nsrv_buf_append(b, "", 0); /* allocates, so data is never NULL */
    return b->data;
}

/* ---- validation ----------------------------------------------------------- */

/* Java's String.trim: drops bytes <= ' ' at both ends. */
static char *trim_dup(const char *s) {
    size_t b = 0, e = strlen(s);
    while (b < e && (unsigned char)s[b] <= ' ')
        b++;
    while (e > b && (unsigned char)s[e - 1] <= ' ')
        e--;
    return nsrv_strndup(s + b, e - b);
}

static bool has_edge_blank(const char *s) {
    size_t n = strlen(s);
    return n > 0 && ((unsigned char)s[0] <= ' ' || (unsigned char)s[n - 1] <= ' ');
}

/* Appends "invalid value 'V' for key 'K': expected WHAT" with K and V escaped
 * so that a hostile value cannot forge lines in a log or a reply. */
static void describe_bad_value(nsrv_buf_t *msg, const char *key, const char *value,
                               const char *what) {
    nsrv_buf_append_c(msg, "invalid value '");
    nsrv_props_escape_value(msg, value);
    nsrv_buf_append_c(msg, "' for key '");
    nsrv_props_escape_value(msg, key);
    nsrv_buf_append_c(msg, "': expected ");
    nsrv_buf_append_c(msg, what);
    if (has_edge_blank(value))
        nsrv_buf_append_c(msg, " (without surrounding whitespace)");
}

/* Validates one raw value for d into *pv. Returns 0, or -1 with msg filled. */
static int validate_value(const key_desc_t *d, const char *key, const char *raw, pending_t *pv,
                          nsrv_buf_t *msg) {
    char what[96];
    switch (d->type) {
    case KT_BOOL:
        if (strcasecmp(raw, "true") == 0)
            pv->b = true;
        else if (strcasecmp(raw, "false") == 0)
            pv->b = false;
        else {
            describe_bad_value(msg, key, raw, "true or false");
            return -1;
        }
        break;
    case KT_INT:
    case KT_LONG: {
        int64_t v;
        if (!nsrv_parse_int(raw, strlen(raw), d->min, d->max, &v)) {
            snprintf(what, sizeof what, "an integer in %lld..%lld", (long long)d->min,
                     (long long)d->max);
            describe_bad_value(msg, key, raw, what);
            return -1;
        }
        pv->n = v;
        break;
    }
    case KT_STRING: {
        /* A control character (an escaped newline, say) would show up as an extra
         * key=value line in GET_NAMESRV_CONFIG, which clients parse as properties. */
        for (const unsigned char *c = (const unsigned char *)raw; *c; c++) {
            if (*c < 0x20 || *c == 0x7F) {
                describe_bad_value(msg, key, raw, "a value without control characters");
                return -1;
            }
        }
        char *s = trim_dup(raw);
        const char *expect = d->check ? d->check(s) : NULL;
        if (expect) {
            nsrv_free(s);
            describe_bad_value(msg, key, raw, expect);
            return -1;
        }
        nsrv_free(pv->s);
        pv->s = s;
        break;
    }
    }
    pv->set = true;
    return 0;
}

static void pending_free(pending_t *pend) {
    for (size_t i = 0; i < NKEYS; i++)
        nsrv_free(pend[i].s);
}

/* Validates every known key of props into pend (indexed like keys[]).
 * Returns the bad property, or NULL when all are valid. */
static const nsrv_prop_t *validate_props(const nsrv_props_t *props, pending_t *pend,
                                         nsrv_buf_t *msg) {
    for (size_t i = 0; i < props->count; i++) {
        size_t k;
        const nsrv_prop_t *p = &props->items[i];
        const key_desc_t *d = find_key(p->key, &k);
        if (d && validate_value(d, p->key, p->value, &pend[k], msg) < 0)
            return p;
    }
    return NULL;
}

/* Moves the validated values into cfg; returns how many keys were set. */
static size_t apply_pending(nsrv_config_t *cfg, pending_t *pend) {
    size_t n = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const key_desc_t *d = &keys[i];
        if (!pend[i].set)
            continue;
        n++;
        store_value(cfg, d, &pend[i]);
    }
    return n;
}

/* ---- loading ------------------------------------------------------------- */

int nsrv_config_load_text(nsrv_config_t *cfg, const char *name, const char *text, size_t len,
                          char *err, size_t errlen) {
    nsrv_props_t props = NSRV_PROPS_INIT;
    pending_t pend[NKEYS];
    char perr[128];
    int rc = 0;

    memset(pend, 0, sizeof pend);
    if (err && errlen)
        err[0] = '\0';
    if (nsrv_props_parse(text, len, &props, perr, sizeof perr) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", name, perr);
        rc = NSRV_EBODY;
        goto cleanup;
    }
    nsrv_buf_t msg = NSRV_BUF_INIT;
    const nsrv_prop_t *bad = validate_props(&props, pend, &msg);
    if (bad) {
        if (err && errlen)
            snprintf(err, errlen, "%s:%u: %s", name, bad->line, msg.data);
        nsrv_buf_deinit(&msg);
        rc = NSRV_ECONFIG;
        goto cleanup;
    }
    nsrv_buf_deinit(&msg);
    apply_pending(cfg, pend);
    for (size_t i = 0; i < props.count; i++) {
        const nsrv_prop_t *p = &props.items[i];
        if (!find_key(p->key, NULL))
            nsrv_props_set(&cfg->extra, p->key, p->value, p->line);
    }

cleanup:
    pending_free(pend);
    nsrv_props_free(&props);
    return rc;
}

int nsrv_config_load_file(nsrv_config_t *cfg, const char *path, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    int rc = nsrv_file_read_all(path, CONFIG_FILE_MAX_BYTES, &text, &len);
    if (rc < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot read config file '%s': %s", path,
                     rc == -EFBIG ? "larger than 4 MiB" : nsrv_strerror(rc));
        return rc;
    }
    rc = nsrv_config_load_text(cfg, path, text, len, err, errlen);
    nsrv_free(text);
    if (rc < 0)
        return rc;
    /* Java (NamesrvStartup) points configStorePath at the -c file whatever
     * the file says, so UPDATE_NAMESRV_CONFIG rewrites the operator's file. */
    if (strcmp(cfg->config_store_path, path) != 0) {
        nsrv_free(cfg->config_store_path);
        cfg->config_store_path = nsrv_strdup(path);
    }
    return 0;
}

const nsrv_props_t *nsrv_config_unknown_keys(const nsrv_config_t *cfg) {
    return &cfg->extra;
}

void nsrv_config_warn_unknown(const nsrv_config_t *cfg) {
    for (size_t i = 0; i < cfg->extra.count; i++) {
        nsrv_buf_t k = NSRV_BUF_INIT;
        nsrv_log_warn("CONFIG", "unknown config key '%s' (line %u) kept but not used",
                      escaped(&k, cfg->extra.items[i].key), cfg->extra.items[i].line);
        nsrv_buf_deinit(&k);
    }
}

void nsrv_config_apply_log_level(const nsrv_config_t *cfg) {
    int level = nsrv_log_level_parse(cfg->log_level);
    if (level >= 0)
        nsrv_log_level = level;
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct {
    const char *key;
    const char *value; /* NULL: the text is in num (which moves with the item) */
    char num[24];
} render_item_t;

static int cmp_item(const void *a, const void *b) {
    return strcmp(((const render_item_t *)a)->key, ((const render_item_t *)b)->key);
}

static void render(const nsrv_config_t *cfg, nsrv_buf_t *out, bool escaped) {
    size_t n = 0;
    render_item_t *items = nsrv_calloc(NKEYS + cfg->extra.count, sizeof *items);

    for (size_t i = 0; i < NKEYS; i++) {
        const key_desc_t *d = &keys[i];
        render_item_t *it = &items[n];
        /* A password leaves the node only in the persisted file, and only when set. */
        if ((d->flags & NSRV_CONFIG_SECRET) && (!escaped || !field_cstr(cfg, d)[0]))
            continue;
        const char *base = (const char *)cfg + d->offset;
        it->key = d->name;
        switch (d->type) {
        case KT_BOOL:
            it->value = *(const bool *)base ? "true" : "false";
            break;
        case KT_INT:
            snprintf(it->num, sizeof it->num, "%d", (int)*(const int32_t *)base);
            break;
        case KT_LONG:
            snprintf(it->num, sizeof it->num, "%lld", (long long)*(const int64_t *)base);
            break;
        case KT_STRING:
            it->value = field_cstr(cfg, d);
            /* Java's rocketmqHome is null without ROCKETMQ_HOME, and null
             * fields are not rendered. */
            if (it->value[0] == '\0' && strcmp(d->name, "rocketmqHome") == 0)
                continue;
            break;
        }
        n++;
    }
    for (size_t i = 0; i < cfg->extra.count; i++) {
        items[n].key = cfg->extra.items[i].key;
        items[n].value = cfg->extra.items[i].value;
        n++;
    }
    /* Java sorts with String.compareTo; for these ASCII keys that is byte order. */
    qsort(items, n, sizeof *items, cmp_item);
    for (size_t i = 0; i < n; i++) {
        const char *v = items[i].value ? items[i].value : items[i].num;
        if (escaped) {
            nsrv_props_write_escaped(out, items[i].key, v);
        } else {
            nsrv_buf_append_c(out, items[i].key);
            nsrv_buf_append_ch(out, '=');
            nsrv_buf_append_c(out, v);
            nsrv_buf_append_ch(out, '\n');
        }
    }
    nsrv_free(items);
}

void nsrv_config_render(const nsrv_config_t *cfg, nsrv_buf_t *out) {
    render(cfg, out, false);
}

void nsrv_config_render_escaped(const nsrv_config_t *cfg, nsrv_buf_t *out) {
    render(cfg, out, true);
}

/* ---- UPDATE_NAMESRV_CONFIG ----------------------------------------------- */

/* True if key is in the ';'-separated list (entries trimmed, empty skipped). */
static bool in_semicolon_list(const char *list, const char *key) {
    size_t klen = strlen(key);
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ';');
        if (!end)
            end = p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && (unsigned char)*b <= ' ')
            b++;
        while (e > b && (unsigned char)e[-1] <= ' ')
            e--;
        if ((size_t)(e - b) == klen && klen > 0 && memcmp(b, key, klen) == 0)
            return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* The blacklist of 5.2.0+/4.9.8: the fixed path/blacklist keys (flags in
 * config_keys.def: configBlackList, configStorePath, kvConfigPath,
 * rocketmqHome) plus whatever the configBlackList value names. */
static bool is_blacklisted(const nsrv_config_t *cfg, const char *key) {
    const key_desc_t *d = find_key(key, NULL);
    if (d && (d->flags & (NSRV_CONFIG_PATH | NSRV_CONFIG_NOUPDATE)))
        return true;
    return in_semicolon_list(cfg->config_black_list, key);
}

nsrv_config_update_result_t nsrv_config_update(nsrv_config_t *cfg, const char *body, size_t len,
                                               nsrv_buf_t *remark_out) {
    nsrv_props_t props = NSRV_PROPS_INIT;
    pending_t pend[NKEYS];
    nsrv_config_update_result_t res = NSRV_CONFIG_UPDATE_OK;
    char perr[128];

    memset(pend, 0, sizeof pend);
    if (len == 0)
        return NSRV_CONFIG_UPDATE_OK;
    nsrv_buf_t scratch = NSRV_BUF_INIT;
    if (!remark_out)
        remark_out = &scratch;
    if (nsrv_props_parse(body, len, &props, perr, sizeof perr) < 0) {
        nsrv_log_info("CONFIG", "UPDATE_NAMESRV_CONFIG body rejected: %s", perr);
        nsrv_buf_append_c(remark_out, "string2Properties error");
        res = NSRV_CONFIG_UPDATE_PARSE_ERROR;
        goto cleanup;
    }
    for (size_t i = 0; i < props.count; i++) {
        if (is_blacklisted(cfg, props.items[i].key)) {
            nsrv_buf_t k = NSRV_BUF_INIT;
            nsrv_log_warn("CONFIG", "UPDATE_NAMESRV_CONFIG refused: key '%s' is blacklisted",
                          escaped(&k, props.items[i].key));
            nsrv_buf_deinit(&k);
            nsrv_buf_append_c(remark_out, "Can not update config in black list.");
            res = NSRV_CONFIG_UPDATE_NO_PERMISSION;
            goto cleanup;
        }
    }
    nsrv_buf_t msg = NSRV_BUF_INIT;
    if (validate_props(&props, pend, &msg)) {
        nsrv_log_warn("CONFIG", "UPDATE_NAMESRV_CONFIG refused: %s", msg.data);
        nsrv_buf_append(remark_out, msg.data, msg.len);
        nsrv_buf_deinit(&msg);
        res = NSRV_CONFIG_UPDATE_INVALID;
        goto cleanup;
    }
    nsrv_buf_deinit(&msg);

    for (size_t i = 0; i < props.count; i++) {
        size_t k;
        const char *key = props.items[i].key;
        nsrv_buf_t ek = NSRV_BUF_INIT;
        escaped(&ek, key);
        const key_desc_t *d = find_key(key, &k);
        if (!d)
            nsrv_log_warn("CONFIG", "UPDATE_NAMESRV_CONFIG: unknown key '%s' ignored", ek.data);
        else if (d->flags & NSRV_CONFIG_RUNTIME)
            nsrv_log_notice("CONFIG", "UPDATE_NAMESRV_CONFIG: '%s' updated", ek.data);
        else
            nsrv_log_notice("CONFIG",
                            "UPDATE_NAMESRV_CONFIG: '%s' updated; takes effect after a restart",
                            ek.data);
        nsrv_buf_deinit(&ek);
    }
    size_t k_log;
    bool log_changed = find_key("logLevel", &k_log) && pend[k_log].set;
    if (apply_pending(cfg, pend) > 0)
        cfg->version++;
    if (log_changed)
        nsrv_config_apply_log_level(cfg);

cleanup:
    pending_free(pend);
    nsrv_props_free(&props);
    nsrv_buf_deinit(&scratch);
    return res;
}

int nsrv_config_persist(const nsrv_config_t *cfg) {
    if (!cfg->config_store_path || cfg->config_store_path[0] == '\0')
        return -EINVAL;
    nsrv_buf_t b = NSRV_BUF_INIT;
    nsrv_config_render_escaped(cfg, &b);
    int rc = nsrv_file_write_atomic(cfg->config_store_path, b.data, b.len, true);
    nsrv_buf_deinit(&b);
    if (rc < 0)
        nsrv_log_error("CONFIG", "cannot persist config to '%s': %s", cfg->config_store_path,
                       nsrv_strerror(rc));
    return rc;
}
