/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RocketMQ remoting codec: frame length prefix, JSON and ROCKETMQ (binary)
 * command headers, and the decoded command value nsrv_cmd_t.
 * Pure code: no I/O, no libuv, no global state; callable from any thread.
 * Parses untrusted bytes: every length is checked and bad input returns an
 * error, never asserts. Fuzzed by src/remoting/fuzz/fuzz_frame.c and
 * fuzz_hdr_json.c. Wire format: proto/remoting.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/rcbuf.h"
#include "nsrv/common.h"
#include "nsrv/mq_codes.h"
#include "nsrv/mq_version.h"

/* Netty's maxFrameLength in the Java server; it counts the 4-byte length too
 * (proto/remoting.md §2). */
#define NSRV_FRAME_MAX_DEFAULT 16777216u
/* The header length is the low 24 bits of the second word. */
#define NSRV_HDR_LEN_MAX 0x00FFFFFFu
/* Fixed part of a ROCKETMQ binary header (proto/remoting.md §4). */
#define NSRV_HDR_ROCKETMQ_FIXED 21u

#define NSRV_SER_JSON 0
#define NSRV_SER_ROCKETMQ 1

#define NSRV_FLAG_RESPONSE 1
#define NSRV_FLAG_ONEWAY 2

/* LanguageCode (proto/remoting.md §8.2); name and binary code. */
#define NSRV_LANG_JAVA 0
#define NSRV_LANG_CPP 1
#define NSRV_LANG_DOTNET 2
#define NSRV_LANG_PYTHON 3
#define NSRV_LANG_DELPHI 4
#define NSRV_LANG_ERLANG 5
#define NSRV_LANG_RUBY 6
#define NSRV_LANG_OTHER 7
#define NSRV_LANG_HTTP 8
#define NSRV_LANG_GO 9
#define NSRV_LANG_PHP 10
#define NSRV_LANG_OMS 11
#define NSRV_LANG_RUST 12
#define NSRV_LANG_NODE_JS 13

typedef struct {
    nsrv_str_t key;
    nsrv_str_t val;
} nsrv_ext_field_t;

/*
 * One decoded (or to-be-encoded) RemotingCommand. After nsrv_cmd_decode all
 * strings and the ext array live in the caller's arena, and body points into
 * the frame: the command is valid while both are.
 */
typedef struct {
    int32_t code;
    int32_t language; /* LanguageCode, -1 if the name/byte was unknown (Java: null) */
    int32_t version;
    int32_t opaque;
    int32_t flag;
    /* .ptr == NULL when absent; "" also decodes as absent (Java: empty = null).
     * NUL-terminated after decode. */
    nsrv_str_t remark;
    /* JSON: the extFields key was present and not null. Binary: the map
     * section length was > 0 (even if every entry in it was dropped). */
    bool has_ext;
    /* Keys and values are NUL-terminated after decode. JSON null values and
     * binary zero-length keys/values are dropped (= absent). Duplicate keys
     * are kept in wire order; nsrv_cmd_ext returns the last, like a HashMap.
     * Decoded strings (these and the remark) are valid UTF-8: ill-formed
     * bytes become U+FFFD as in Java's decoder. They may still contain a NUL
     * (U+0000), which nsrv_cmd_find_nul finds so that it can be refused. */
    nsrv_ext_field_t *ext;
    size_t n_ext;
    /* Set by the decoders, 0 when not known (a command built by hand): the
     * nsrv_ext_key_bit of every non-empty key, so that looking up a key the
     * request lacks (most of those a handler asks for) costs no scan. */
    uint64_t ext_keys;
    /* Set by the binary decoder when it saw that no key or value contains a
     * NUL: nsrv_cmd_find_nul answers without a scan. */
    bool ext_nul_free;
    const uint8_t *body; /* points into the frame; NULL/0 = no body */
    size_t body_len;
    /* Responses only: when set, body is this buffer's bytes, which a sender may
     * keep referenced instead of copying them (include/nsrv/rcbuf.h). */
    nsrv_rcbuf_t *body_rc;
    uint8_t ser_type; /* NSRV_SER_JSON or NSRV_SER_ROCKETMQ */
} nsrv_cmd_t;

/**
 * Looks at buffered stream bytes for one whole frame.
 * @param p, len     borrowed bytes received so far (p may be NULL when len is 0).
 * @param max_frame  cap on the whole frame, length prefix included
 *                   (NSRV_FRAME_MAX_DEFAULT for Java parity).
 * @param frame_len  out: 4 + N, written only when 0 is returned.
 * @return 0 when p[0..*frame_len) is a whole frame; NSRV_AGAIN when more bytes
 *         are needed; NSRV_EFRAME when N is negative, N < 4 or 4 + N > max_frame
 *         (decided as soon as the first 4 bytes are in; close the connection).
 */
int nsrv_frame_peek(const uint8_t *p, size_t len, size_t max_frame, size_t *frame_len);

/* The longest topic nsrv_route_query_peek takes (RocketMQ's own limit is 127 characters); a
 * longer one goes the generic way, which answers it the same. */
#define NSRV_ROUTE_QUERY_TOPIC_MAX 255

/* What a route query of the common shape carries. */
typedef struct {
    int32_t version;
    int32_t opaque;
    uint8_t ser_type;     /* NSRV_SER_JSON or NSRV_SER_ROCKETMQ */
    const uint8_t *topic; /* into the frame, not NUL-terminated; printable ASCII */
    size_t topic_len;     /* 1..NSRV_ROUTE_QUERY_TOPIC_MAX */
} nsrv_route_query_t;

/**
 * Reads a whole frame (as found by nsrv_frame_peek) in place when it is a
 * GET_ROUTEINFO_BY_TOPIC request of the shape Java, Go and nsrvd's tools send:
 * no body, flag 0, no remark, one ext field "topic" (src/remoting/route_query.c
 * lists the shapes). Whatever it takes, nsrv_cmd_decode reads as the same
 * opaque, version, serialize type and topic with no other field set.
 * @return true with *out filled; false (out undefined) for any other frame,
 *         which nsrv_cmd_decode then handles.
 */
bool nsrv_route_query_peek(const uint8_t *frame, size_t frame_len, nsrv_route_query_t *out);

/* Sets the two length words of a frame head[0..head_len) that body_len bytes of body will
 * follow: the frame length and the serialize type with the header length (proto/remoting.md
 * §2). */
static inline void nsrv_frame_set_lengths(uint8_t *head, size_t head_len, size_t body_len,
                                          uint8_t ser_type) {
    nsrv_store_be32(head, (uint32_t)(head_len - 4 + body_len));
    nsrv_store_be32(head + 4, (uint32_t)ser_type << 24 | (uint32_t)(head_len - 8));
}

/**
 * Decodes one whole frame (its 4-byte length included, as found by
 * nsrv_frame_peek).
 * @param frame, frame_len  borrowed; out->body points into it.
 * @param arena  strings and the ext array are allocated here.
 * @param out    written only on success.
 * @return 0; NSRV_EFRAME (frame_len inconsistent with N, header length past
 *         the frame); NSRV_ESERTYPE (type byte not 0/1); NSRV_EHEADER (bad
 *         JSON, JSON not an object, bad field types, truncated or inconsistent
 *         binary header). Any error means: close the connection, no reply.
 */
int nsrv_cmd_decode(const uint8_t *frame, size_t frame_len, nsrv_arena_t *arena, nsrv_cmd_t *out);

/* The bit of a non-empty ext key in nsrv_cmd_t.ext_keys: its length and last
 * byte, which tell apart the keys a handler asks for in one request. */
static inline uint64_t nsrv_ext_key_bit(const char *key, size_t len) {
    return 1ull << ((len * 7u + (unsigned char)key[len - 1]) & 63u);
}

/**
 * Ext field lookup by exact (case-sensitive) key of klen bytes.
 * @return the value (NUL-terminated when decoded), or {NULL,0} if absent.
 *         With duplicate keys the last one wins.
 */
nsrv_str_t nsrv_cmd_ext_n(const nsrv_cmd_t *cmd, const char *key, size_t klen);

/* nsrv_cmd_ext_n of a C string key (inline: a literal's length is folded). */
static inline nsrv_str_t nsrv_cmd_ext(const nsrv_cmd_t *cmd, const char *key) {
    return nsrv_cmd_ext_n(cmd, key, strlen(key));
}

/**
 * The first ext field whose key or value contains a NUL byte, or NULL.
 * nsrvd handles names as C strings, so such a request is refused rather
 * than served with a name cut short (docs/compatibility.md, "Names and text").
 */
const nsrv_ext_field_t *nsrv_cmd_find_nul(const nsrv_cmd_t *cmd);

/**
 * Appends the whole frame (length prefix included) of cmd, serialized with
 * cmd->ser_type (any value other than NSRV_SER_ROCKETMQ means JSON).
 * JSON header: fastjson's form, keys in alphabetical order: code, extFields
 * (omitted when !has_ext, {} when has_ext and no fields), flag, language
 * (name; omitted when unknown), opaque, remark (omitted when .ptr is NULL),
 * serializeTypeCurrentRPC, version. Ext entries in array order.
 * Binary header: proto/remoting.md §4; a remark that is absent or empty has length
 * 0; an unknown language is written as JAVA; ext entries in array order.
 * In both, ext entries with a NULL key or value are skipped; binary also skips
 * keys longer than 32767 bytes (int16 length).
 * @return 0, or NSRV_ETOOBIG (nothing appended) when the header exceeds 24
 *         bits of length or the frame exceeds INT32_MAX. Callers that build
 *         bounded responses may ignore the result.
 */
int nsrv_cmd_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd);

/**
 * nsrv_cmd_encode without the body: the frame's length prefix counts the body,
 * which the caller sends right after these bytes (a scatter/gather write of a
 * cached body). Same results as nsrv_cmd_encode.
 */
int nsrv_cmd_encode_head(nsrv_buf_t *out, const nsrv_cmd_t *cmd);

/**
 * Prepares a response to req as the Java NameServer does (proto/remoting.md §5,
 * proto/remoting.md §5): flag exactly RESPONSE, opaque copied, language JAVA, version
 * NSRV_MQ_CURRENT, the request's serialize type mirrored, no remark, no
 * ext, no body.
 */
void nsrv_cmd_init_response(nsrv_cmd_t *resp, const nsrv_cmd_t *req, int32_t code);

static inline bool nsrv_cmd_is_response(const nsrv_cmd_t *cmd) {
    return (cmd->flag & NSRV_FLAG_RESPONSE) != 0;
}
static inline bool nsrv_cmd_is_oneway(const nsrv_cmd_t *cmd) {
    return (cmd->flag & NSRV_FLAG_ONEWAY) != 0;
}

/* "JAVA", "CPP", ... or NULL when code is not a LanguageCode. */
const char *nsrv_language_name(int32_t code);
/* The code of an exact (case-sensitive) name, or -1 if unknown. */
int32_t nsrv_language_from_name(const char *name, size_t len);
