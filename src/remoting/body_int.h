/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the registration-body codec (body_*.c): the decode context and
 * the helpers the JSON and the compressed parts share.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsrv/arena.h"
#include "nsrv/json.h"
#include "nsrv/register_body.h"

/* Decode state shared by the helpers: where to allocate and where to report. */
typedef struct {
    nsrv_arena_t *arena;
    char *err;
    size_t err_len;
    const char *prefix; /* prepended to every reason */
    /* Budget of one RegisterBrokerBody decode (NULL: none); see nsrv__body_charge. */
    const nsrv_register_body_limits_t *lim;
    size_t arena_start; /* arena->allocated when the decode began */
    size_t inflated;    /* bytes of inflated text alive during the decode */
} nsrv_body_dctx_t;

/* Writes prefix + the formatted reason to d->err (if any); returns NSRV_EBODY. */
__attribute__((format(printf, 2, 3))) int nsrv__body_fail(nsrv_body_dctx_t *d, const char *fmt,
                                                          ...);
bool nsrv__body_key_is(const nsrv_json_t *member, const char *key);
/* NSRV_ETOOBIG (with the reason in err) once what the decode allocated passes
 * lim->max_decoded_bytes; 0 otherwise. */
int nsrv__body_charge(nsrv_body_dctx_t *d);
/* Bytes of the budget still free (SIZE_MAX without a budget). */
size_t nsrv__body_budget_left(const nsrv_body_dctx_t *d);
/* NSRV_ETOOBIG when a table of n topics is over lim->max_topics. */
int nsrv__body_check_topics(nsrv_body_dctx_t *d, size_t n);
/* Absent or JSON null. */
bool nsrv__body_is_null(const nsrv_json_t *v);
int nsrv__body_parse_json(nsrv_body_dctx_t *d, const void *text, size_t len, const char *what,
                          nsrv_json_t **root);
/*
 * Field casts as fastjson does them: a number or a numeric string for the
 * integers, numbers and booleans as their text for strings; null keeps *out.
 */
int nsrv__body_get_i64(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what, int64_t *out);
int nsrv__body_get_i32(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what, int32_t *out);
int nsrv__body_get_str(nsrv_body_dctx_t *d, const nsrv_json_t *v, const char *what,
                       const char **out);
/* One scalar member of a JSON object and where it lands in a C struct. */
typedef enum { NSRV_BODY_STR, NSRV_BODY_I32, NSRV_BODY_I64 } nsrv_body_kind_t;
typedef struct {
    const char *key;  /* the member's name */
    const char *what; /* its name in error messages */
    nsrv_body_kind_t kind;
    size_t offset; /* offsetof the const char * / int32_t / int64_t field */
} nsrv_body_field_t;
/* The entry for member key, read into field of struct T and named by its key in errors. */
#define NSRV_BODY_FIELD(T, key, kind, field)                                                       \
    { key, key, kind, offsetof(T, field) }
/* The members TopicConfig and QueueData share (queue counts, permission, system flag), with
 * the same names and casts, as the entries of struct T. */
#define NSRV_BODY_QUEUE_FIELDS(T)                                                                  \
    NSRV_BODY_FIELD(T, "readQueueNums", NSRV_BODY_I32, read_queue_nums),                           \
        NSRV_BODY_FIELD(T, "writeQueueNums", NSRV_BODY_I32, write_queue_nums),                     \
        NSRV_BODY_FIELD(T, "perm", NSRV_BODY_I32, perm),                                           \
        NSRV_BODY_FIELD(T, "topicSysFlag", NSRV_BODY_I32, topic_sys_flag)
/* Reads the members of object o named in fields[0..n) into the struct at out, with the casts
 * of nsrv__body_get_*; other members are ignored; a repeated member's last value counts. */
int nsrv__body_read_fields(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                           const nsrv_body_field_t *fields, size_t n, void *out);
/* Java Integer.parseInt of s[0..n) (nsrv_parse_int in int32 range). */
bool nsrv__body_parse_i32(const char *s, size_t n, int32_t *out);

int nsrv__body_data_version_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o,
                                      nsrv_data_version_t *out);
/*
 * TopicQueueMappingInfo. key_topic is the map key of the JSON form; NULL for
 * the compressed form, where the info's own `topic` is used.
 */
int nsrv__body_mapping_from_json(nsrv_body_dctx_t *d, const nsrv_json_t *o, const char *key_topic,
                                 nsrv_mapping_info_t *out);

/* The two RegisterBrokerBody forms; b is zeroed by the caller. */
int nsrv__body_decode_json(nsrv_body_dctx_t *d, const uint8_t *body, size_t len, int32_t version,
                           nsrv_register_body_t *b);
int nsrv__body_decode_compressed(nsrv_body_dctx_t *d, const uint8_t *body, size_t len,
                                 int32_t version, nsrv_register_body_t *b);
