/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nsrvd configuration: the Java NamesrvConfig + NettyServerConfig keys (same
 * names, same defaults, proto/requests.md §5) plus nsrvd's own, loaded
 * from a java.util.Properties file (-c), rendered for GET_NAMESRV_CONFIG and
 * -p, and changed at run time by UPDATE_NAMESRV_CONFIG (proto/requests.md §2.18) under the
 * configBlackList rules. Loop thread only. The key table is
 * include/nsrv/config_keys.def; UPDATE bodies are fuzzed by
 * src/config/fuzz/fuzz_config_update.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nsrv/buf.h"
#include "nsrv/properties.h"

/* Key flags (the flags column of config_keys.def). */
#define NSRV_CONFIG_RUNTIME 1u  /* read at request time: an UPDATE takes effect at once */
#define NSRV_CONFIG_PATH 2u     /* a file-system path: UPDATE always refuses it */
#define NSRV_CONFIG_NOUPDATE 4u /* UPDATE always refuses it (configBlackList) */
#define NSRV_CONFIG_SECRET 8u   /* never rendered for GET_NAMESRV_CONFIG or -p (a password) */
/* A SIGHUP applies it, all or nothing with the other keys of its part (server.c reload). */
#define NSRV_CONFIG_RELOAD_LOG 16u
#define NSRV_CONFIG_RELOAD_TLS 32u
#define NSRV_CONFIG_RELOAD_NSADDR 64u
#define NSRV_CONFIG_RELOAD_ACL 128u
#define NSRV_CONFIG_RELOAD_GOSSIP 256u
#define NSRV_CONFIG_RELOAD                                                                         \
    (NSRV_CONFIG_RELOAD_LOG | NSRV_CONFIG_RELOAD_TLS | NSRV_CONFIG_RELOAD_NSADDR |                 \
     NSRV_CONFIG_RELOAD_ACL | NSRV_CONFIG_RELOAD_GOSSIP)

#define NSRV__CONFIG_CTYPE_BOOL bool
#define NSRV__CONFIG_CTYPE_INT int32_t
#define NSRV__CONFIG_CTYPE_LONG int64_t
#define NSRV__CONFIG_CTYPE_STRING char *

/*
 * The effective configuration: one typed field per key, named as in the
 * field column of config_keys.def (listenPort -> listen_port,
 * enableAllTopicList -> enable_all_topic_list, ...). Read the fields
 * directly. STRING fields are NUL-terminated heap strings owned by the
 * struct and never NULL after nsrv_config_init_defaults (rocketmq_home is ""
 * when ROCKETMQ_HOME is unset). Change fields only through this API.
 */
typedef struct nsrv_config {
#define NSRV_CFG(name, type, def, field, flags, min, max, check) NSRV__CONFIG_CTYPE_##type field;
#include "nsrv/config_keys.def"
#undef NSRV_CFG
    /* Keys from the -c file that no field matches, in file order. They are
     * kept (and rendered) as Java keeps them; UPDATE never changes them. */
    nsrv_props_t extra;
    /* Bumped by every UPDATE that applied at least one key (Java's config
     * data version); a caller persists when it changed. */
    uint64_t version;
} nsrv_config_t;

/**
 * Fills cfg with the defaults: the Java values, except
 * scanNotActiveBrokerInterval = 10000 (the 4.9.x period), listenPort = 9876,
 * rocketmqHome = $ROCKETMQ_HOME or "", kvConfigPath =
 * $HOME/namesrv/kvConfig.json, configStorePath = $HOME/namesrv/namesrv.properties
 * ($HOME from the environment, else the passwd entry, else "/").
 * cfg must be uninitialised or freed; release with nsrv_config_free.
 */
void nsrv_config_init_defaults(nsrv_config_t *cfg);

/* Frees the strings and extra keys; cfg may then be re-initialised. */
void nsrv_config_free(nsrv_config_t *cfg);

/**
 * Loads a java.util.Properties file (the -c option) over cfg. Every known key
 * is validated strictly: INT/LONG must be a plain decimal integer (optional
 * sign, no surrounding blanks) within the key's range, BOOL must be true or
 * false (any case), STRING values are trimmed as Java trims them. Unknown keys
 * go to cfg->extra (report them with nsrv_config_warn_unknown). Afterwards
 * configStorePath is path, as in Java, so UPDATE_NAMESRV_CONFIG rewrites this
 * file. All or nothing: on error cfg is unchanged.
 *
 * @param err  receives a message naming the file, line, key and value
 * @return 0; -errno if the file cannot be read; NSRV_EBODY on a syntax error
 *         (malformed \uxxxx); NSRV_ECONFIG on a bad value.
 */
int nsrv_config_load_file(nsrv_config_t *cfg, const char *path, char *err, size_t errlen);

/* Same as nsrv_config_load_file over text already in memory (name is used in
 * messages only; configStorePath is not changed). */
int nsrv_config_load_text(nsrv_config_t *cfg, const char *name, const char *text, size_t len,
                          char *err, size_t errlen);

/* The unknown keys kept from the file (borrowed). */
const nsrv_props_t *nsrv_config_unknown_keys(const nsrv_config_t *cfg);

/* Logs one warning per unknown key (group CONFIG). */
void nsrv_config_warn_unknown(const nsrv_config_t *cfg);

/**
 * Appends every key as "key=value\n", sorted by key (byte order), values
 * unescaped, exactly the GET_NAMESRV_CONFIG body (proto/requests.md §2.19) and the -p output:
 * all known keys (rocketmqHome omitted while empty, as Java omits null) and
 * the unknown keys from the file. Never empty.
 */
void nsrv_config_render(const nsrv_config_t *cfg, nsrv_buf_t *out);

/* Same lines and order, but each written with nsrv_props_write_escaped so the
 * text reads back to exactly these keys and values: the persisted form. */
void nsrv_config_render_escaped(const nsrv_config_t *cfg, nsrv_buf_t *out);

typedef enum {
    NSRV_CONFIG_UPDATE_OK = 0,
    NSRV_CONFIG_UPDATE_NO_PERMISSION = 1, /* a blacklisted key: reply NO_PERMISSION (16) */
    NSRV_CONFIG_UPDATE_PARSE_ERROR = 2,   /* body is not properties text: SYSTEM_ERROR */
    NSRV_CONFIG_UPDATE_INVALID = 3,       /* a known key with a bad value: SYSTEM_ERROR */
} nsrv_config_update_result_t;

/**
 * UPDATE_NAMESRV_CONFIG (proto/requests.md §2.18). Parses body as properties text and, all or
 * nothing:
 *  - refuses (NO_PERMISSION, remark "Can not update config in black list.")
 *    if any key is configBlackList, configStorePath, kvConfigPath,
 *    rocketmqHome (any PATH/NOUPDATE key) or an entry of the ';'-separated
 *    cfg->config_black_list;
 *  - refuses (INVALID, remark naming the key and value) if any known key has
 *    a bad value;
 *  - otherwise applies every known key, ignores unknown keys (each logged as
 *    a warning; they are not in the remark, so the reply matches Java's),
 *    bumps cfg->version if anything was applied, and re-applies logLevel.
 * An empty body is OK and changes nothing. The caller persists with
 * nsrv_config_persist when cfg->version changed. Keys without
 * NSRV_CONFIG_RUNTIME are stored and persisted but act after a restart.
 *
 * @param remark_out  receives the remark for a non-OK result (appended; may be NULL)
 */
nsrv_config_update_result_t nsrv_config_update(nsrv_config_t *cfg, const char *body, size_t len,
                                               nsrv_buf_t *remark_out);

/**
 * Writes nsrv_config_render_escaped to cfg->config_store_path atomically,
 * keeping the previous file as ".bak". Blocking (small file).
 * @return 0 or -errno (-EINVAL if configStorePath is empty).
 */
int nsrv_config_persist(const nsrv_config_t *cfg);

/* Sets nsrv_log_level from cfg->log_level (always valid after load). */
void nsrv_config_apply_log_level(const nsrv_config_t *cfg);

/* Introspection over the key table (tests, docs). */
size_t nsrv_config_key_count(void);
const char *nsrv_config_key_name(size_t i); /* NULL past the end */
/* Copies the values of the named keys (a NULL-terminated list) from src into dst, so
 * what a SIGHUP applied live is also what GET_NAMESRV_CONFIG shows and what
 * UPDATE_NAMESRV_CONFIG writes back. Returns -1 (copying nothing further) at an
 * unknown name. */
int nsrv_config_adopt(nsrv_config_t *dst, const nsrv_config_t *src, const char *const *names);
/* Fills names[0..cap-1) with the keys having any of flags, in table order, NULL-terminated;
 * returns how many (at most cap - 1). */
size_t nsrv_config_keys_with(unsigned flags, const char **names, size_t cap);
/* Whether key i (table order) has the same value in a and b. */
bool nsrv_config_key_same(const nsrv_config_t *a, const nsrv_config_t *b, size_t i);
/* Copies every key's value from src into dst (what nsrv_config_adopt does for all of them). */
void nsrv_config_adopt_all(nsrv_config_t *dst, const nsrv_config_t *src);
/* Returns the flags of a known key, or -1 if name is not a known key. */
int nsrv_config_key_flags(const char *name);
/* The table as text (key_docs.c): type name (BOOL, INT, LONG, STRING) and the
 * default as a properties value in buf; NULL past the end. A computed default
 * (from HOME or the environment at start) is rendered as "". */
const char *nsrv_config_key_type_text(size_t i);
const char *nsrv_config_key_default_text(size_t i, char *buf, size_t len);
bool nsrv_config_key_default_computed(size_t i);

/* ---- command line (cli.c) ---- */

/* The configuration file of the Debian package (conf/packaging.cmake installs it, the unit
 * passes it with -c): where `nsrvd status` looks when given neither an address nor -c. */
#define NSRV_PACKAGED_CONFIG "/etc/nsrvd/nsrvd.properties"

typedef struct {
    const char *config_file;  /* -c/--configFile FILE, or NULL; borrowed from argv */
    const char *namesrv_addr; /* -n/--namesrvAddr: accepted and ignored, as in Java */
    bool print_config;        /* -p/--printConfigItem */
    bool help;                /* -h/--help */
    bool version;             /* --version */
    const char *subcommand;   /* a leading non-option word (e.g. "keygen"), or NULL */
    int sub_argc;             /* the arguments after the subcommand, unparsed */
    char **sub_argv;
} nsrv_cli_t;

/**
 * Parses argv (argv[0] is the program name). Options: -c FILE (also -cFILE,
 * --configFile FILE, --configFile=FILE, -configFile FILE), -p, -h, --version,
 * -n ADDR. If argv[1] does not start with '-', it is the subcommand and the
 * rest is left for it. An unknown option, a missing option argument, a
 * repeated -c or a stray argument is an error.
 * @return 0, or -EINVAL with a message in err.
 */
int nsrv_cli_parse(int argc, char **argv, nsrv_cli_t *out, char *err, size_t errlen);

/* Prints the usage text. */
void nsrv_cli_usage(FILE *f);
/* Lists every configuration key with its default (for --help). */
void nsrv_cli_print_keys(FILE *f);
