/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RemotingCommand decode/encode around the two header codecs: the length
 * prefix, the header-length word (serialize type in the top byte), and the
 * body (proto/remoting.md §2-§3; Java RemotingCommand.decode/fastEncodeHeader).
 * Pure; parses untrusted input; fuzzed by fuzz/fuzz_frame.c.
 */
#include "nsrv/remoting.h"

#include <string.h>

#include "remoting_int.h"

/* LanguageCode names indexed by code (proto/remoting.md §8.2). */
static const char *const language_names[] = {
    "JAVA",  "CPP",  "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO",     "PHP",    "OMS",    "RUST",   "NODE_JS",
};

const char *nsrv_language_name(int32_t code) {
    if (code < 0 || (size_t)code >= NSRV_ARRAY_LEN(language_names))
        return NULL;
    return language_names[code];
}

int32_t nsrv_language_from_name(const char *name, size_t len) {
    if (!name)
        return -1;
    for (size_t i = 0; i < NSRV_ARRAY_LEN(language_names); i++) {
        const char *n = language_names[i];
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return (int32_t)i;
    }
    return -1;
}

int nsrv_cmd_decode(const uint8_t *frame, size_t frame_len, nsrv_arena_t *arena, nsrv_cmd_t *out) {
    if (frame_len < 8)
        return NSRV_EFRAME;
    int32_t n = (int32_t)nsrv_load_be32(frame);
    if (n < 4 || (uint64_t)(uint32_t)n + 4u != (uint64_t)frame_len)
        return NSRV_EFRAME;

    uint32_t word = nsrv_load_be32(frame + 4);
    uint8_t type = (uint8_t)(word >> 24);
    size_t hdr_len = word & NSRV_HDR_LEN_MAX;
    size_t room = frame_len - 8; /* N - 4 */
    /* Same order as Java: the length check comes before the type switch. */
    if (hdr_len > room)
        return NSRV_EFRAME;
    if (type != NSRV_SER_JSON && type != NSRV_SER_ROCKETMQ)
        return NSRV_ESERTYPE;

    /* Java field defaults (RemotingCommand), for keys a JSON header omits. */
    nsrv_cmd_t cmd = {
        .language = NSRV_LANG_JAVA,
        .ser_type = type,
    };
    const uint8_t *hdr = frame + 8;
    int rc = type == NSRV_SER_JSON ? nsrv__hdr_json_decode(hdr, hdr_len, arena, &cmd)
                                   : nsrv__hdr_rocketmq_decode(hdr, hdr_len, arena, &cmd);
    if (rc < 0)
        return rc;

    size_t body_len = room - hdr_len;
    if (body_len > 0) {
        cmd.body = hdr + hdr_len;
        cmd.body_len = body_len;
    }
    *out = cmd;
    return 0;
}

nsrv_str_t nsrv_cmd_ext_n(const nsrv_cmd_t *cmd, const char *key, size_t klen) {
    if (klen && cmd->ext_keys && !(cmd->ext_keys & nsrv_ext_key_bit(key, klen)))
        return NSRV_STR_NULL;
    /* Backwards so a duplicate key behaves like Java's HashMap.put: last wins. */
    for (size_t i = cmd->n_ext; i-- > 0;) {
        const nsrv_ext_field_t *f = &cmd->ext[i];
        if (f->key.ptr && f->val.ptr && f->key.len == klen && memcmp(f->key.ptr, key, klen) == 0)
            return f->val;
    }
    return NSRV_STR_NULL;
}

const nsrv_ext_field_t *nsrv_cmd_find_nul(const nsrv_cmd_t *cmd) {
    if (cmd->ext_nul_free)
        return NULL;
    for (size_t i = 0; i < cmd->n_ext; i++) {
        const nsrv_ext_field_t *f = &cmd->ext[i];
        if ((f->key.ptr && memchr(f->key.ptr, '\0', f->key.len)) ||
            (f->val.ptr && memchr(f->val.ptr, '\0', f->val.len)))
            return f;
    }
    return NULL;
}

/* The frame up to its body, with lengths that count the body; with_body appends it too. */
static int encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd, bool with_body) {
    size_t start = out->len;
    size_t body_len = cmd->body ? cmd->body_len : 0;
    if (body_len > (size_t)INT32_MAX - 4)
        return NSRV_ETOOBIG;
    nsrv_buf_reserve(out, 8 + 128 + (with_body ? body_len : 0));
    /* Room for N and the header-length word, patched below (reserved above). */
    out->len += 8;

    uint8_t type = cmd->ser_type == NSRV_SER_ROCKETMQ ? NSRV_SER_ROCKETMQ : NSRV_SER_JSON;
    if (type == NSRV_SER_ROCKETMQ) {
        if (nsrv__hdr_rocketmq_encode(out, cmd) < 0)
            goto too_big;
    } else {
        nsrv__hdr_json_encode(out, cmd);
    }
    size_t hdr_len = out->len - start - 8;
    /* N = 4 + H + B must be a positive int32. */
    if (hdr_len > NSRV_HDR_LEN_MAX || body_len > (size_t)INT32_MAX - 4 - hdr_len)
        goto too_big;

    if (body_len && with_body)
        nsrv_buf_append(out, cmd->body, body_len);
    nsrv_frame_set_lengths((uint8_t *)out->data + start, 8 + hdr_len, body_len, (uint8_t)type);
    return 0;

too_big:
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    return NSRV_ETOOBIG;
}

int nsrv_cmd_encode(nsrv_buf_t *out, const nsrv_cmd_t *cmd) {
    return encode(out, cmd, true);
}

int nsrv_cmd_encode_head(nsrv_buf_t *out, const nsrv_cmd_t *cmd) {
    return encode(out, cmd, false);
}

void nsrv_cmd_init_response(nsrv_cmd_t *resp, const nsrv_cmd_t *req, int32_t code) {
    *resp = (nsrv_cmd_t){
        .code = code,
        .language = NSRV_LANG_JAVA,
        .version = NSRV_MQ_CURRENT,
        .opaque = req->opaque,
        .flag = NSRV_FLAG_RESPONSE,
        .ser_type = req->ser_type == NSRV_SER_ROCKETMQ ? NSRV_SER_ROCKETMQ : NSRV_SER_JSON,
    };
}
