/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy that decides who may change the cluster: which request codes are
 * admin writes and which are a broker's own, the allow list for each, the
 * signature check on admin writes, and the UPDATE_NAMESRV_CONFIG switch.
 * Reads are never restricted. Everything is off by default (the Java
 * NameServer restricts nothing).
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "nsrv/crypto.h"

#include "nsrv/acl.h"
#include "nsrv/alloc.h"
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "nsrv/mq_codes.h"
#include "nsrv/netaddr.h"

/* Refusals are logged at most this often; the ones in between are counted. */
#define REFUSAL_LOG_INTERVAL_MS 1000

struct nsrv_acl {
    nsrv_cidr_list_t admin_allow;
    nsrv_cidr_list_t broker_allow;
    nsrv_acl_keys_t *keys; /* NULL unless adminAclEnable */
    bool update_config_enable;
    uint64_t logged_ms;
    uint64_t unlogged;
};

typedef enum { CLASS_READ, CLASS_ADMIN, CLASS_BROKER } req_class_t;

static req_class_t classify(int32_t code) {
    switch (code) {
    case NSRV_REQ_PUT_KV_CONFIG:
    case NSRV_REQ_DELETE_KV_CONFIG:
    case NSRV_REQ_WIPE_WRITE_PERM_OF_BROKER:
    case NSRV_REQ_DELETE_TOPIC_IN_NAMESRV:
    case NSRV_REQ_REGISTER_TOPIC_IN_NAMESRV:
    case NSRV_REQ_UPDATE_NAMESRV_CONFIG:
    case NSRV_REQ_ADD_WRITE_PERM_OF_BROKER:
        return CLASS_ADMIN;
    /* QUERY_DATA_VERSION is a broker's (only brokers send it) and, like a
     * heartbeat, refreshes the broker's liveness: open, it would let anyone
     * keep a dead broker routable. */
    case NSRV_REQ_REGISTER_BROKER:
    case NSRV_REQ_UNREGISTER_BROKER:
    case NSRV_REQ_BROKER_HEARTBEAT:
    case NSRV_REQ_QUERY_DATA_VERSION:
        return CLASS_BROKER;
    default:
        return CLASS_READ;
    }
}

static const char *code_name(int32_t code) {
    switch (code) {
#define X(num, name)                                                                               \
    case num:                                                                                      \
        return #name;
#include "request_codes.def"
#undef X
    default:
        return "request";
    }
}

nsrv_acl_t *nsrv_acl_create(const nsrv_config_t *cfg, char *err, size_t err_cap) {
    nsrv_acl_t *acl = nsrv_calloc(1, sizeof *acl);
    char perr[256] = "";
    acl->update_config_enable = cfg->update_namesrv_config_enable;
    if (nsrv_cidr_list_parse(cfg->admin_allow_list, strlen(cfg->admin_allow_list),
                             &acl->admin_allow, perr, sizeof perr) != 0) {
        snprintf(err, err_cap, "adminAllowList: %s", perr);
        goto fail;
    }
    if (nsrv_cidr_list_parse(cfg->broker_allow_list, strlen(cfg->broker_allow_list),
                             &acl->broker_allow, perr, sizeof perr) != 0) {
        snprintf(err, err_cap, "brokerAllowList: %s", perr);
        goto fail;
    }
    if (cfg->admin_acl_enable) {
        if (!cfg->admin_acl_file[0]) {
            snprintf(err, err_cap,
                     "adminAclEnable=true needs adminAclFile (accessKey=secretKey lines)");
            goto fail;
        }
        if (nsrv_acl_keys_load(cfg->admin_acl_file, &acl->keys, err, err_cap) != 0)
            goto fail;
        if (nsrv_acl_keys_count(acl->keys) == 0) {
            snprintf(err, err_cap,
                     "adminAclFile '%s' holds no accessKey=secretKey line: no admin write could "
                     "ever pass",
                     cfg->admin_acl_file);
            goto fail;
        }
        /* Signatures need HmacSHA1: OpenSSL is loaded now, when the keys ask for it. */
        char why[512] = "";
        if (!nsrv_crypto_get(why, sizeof why)) {
            snprintf(err, err_cap, "adminAclEnable=true: %s", why);
            goto fail;
        }
    }
    return acl;
fail:
    nsrv_acl_destroy(&acl);
    return NULL;
}

void nsrv_acl_destroy(nsrv_acl_t **aclp) {
    nsrv_acl_t *acl = aclp ? *aclp : NULL;
    if (!acl)
        return;
    nsrv_cidr_list_free(&acl->admin_allow);
    nsrv_cidr_list_free(&acl->broker_allow);
    nsrv_acl_keys_free(&acl->keys);
    nsrv_free(acl);
    *aclp = NULL;
}

bool nsrv_acl_is_open(const nsrv_acl_t *acl) {
    return !acl || (acl->admin_allow.n == 0 && acl->broker_allow.n == 0 && !acl->keys &&
                    acl->update_config_enable);
}

/* Why a signed admin write fails, or NULL when its signature is right. */
static const char *signature_problem(const nsrv_acl_t *acl, const nsrv_cmd_t *req,
                                     const char **access_key) {
    nsrv_str_t ak = nsrv_cmd_ext(req, "AccessKey");
    nsrv_str_t sig = nsrv_cmd_ext(req, "Signature");
    *access_key = ak.ptr;
    if (!ak.ptr || !sig.ptr)
        return "the request is not signed (it needs the AccessKey and Signature ext fields of "
               "a client configured with credentials)";
    const char *secret = nsrv_acl_keys_secret(acl->keys, ak.ptr);
    if (!secret)
        return "its AccessKey is not in adminAclFile";
    char want[NSRV_ACL_SIG_B64_LEN + 1];
    if (nsrv_acl_signature(req, secret, want) != 0)
        return "the signature could not be computed";
    /* The length is no secret; the bytes are compared in constant time. */
    bool ok = sig.len == NSRV_ACL_SIG_B64_LEN && sodium_memcmp(want, sig.ptr, sig.len) == 0;
    sodium_memzero(want, sizeof want);
    return ok ? NULL
              : "its Signature does not match the request signed with that AccessKey's secret";
}

static void log_refusal(nsrv_acl_t *acl, const struct sockaddr *peer, uint64_t now_ms,
                        const char *remark) {
    if (acl->logged_ms && now_ms - acl->logged_ms < REFUSAL_LOG_INTERVAL_MS) {
        acl->unlogged++;
        return;
    }
    char addr[NSRV_SOCKADDR_TEXT_MAX] = "?";
    if (peer)
        nsrv_sockaddr_format(peer, addr, sizeof addr);
    if (acl->unlogged)
        nsrv_log_warn("ACL",
                      "refused a request from %s: %s (and %llu other refusals since the last line)",
                      addr, remark, (unsigned long long)acl->unlogged);
    else
        nsrv_log_warn("ACL", "refused a request from %s: %s", addr, remark);
    acl->logged_ms = now_ms ? now_ms : 1;
    acl->unlogged = 0;
}

bool nsrv_acl_check(nsrv_acl_t *acl, const nsrv_cmd_t *req, const struct sockaddr *peer,
                    uint64_t now_ms, char *remark, size_t remark_cap) {
    req_class_t cls = classify(req->code);
    const char *name = code_name(req->code);
    if (cls == CLASS_READ)
        return true;
    char host[NSRV_SOCKADDR_TEXT_MAX] = "an unknown address";
    if (peer)
        nsrv_sockaddr_format(peer, host, sizeof host);
    if (cls == CLASS_BROKER) {
        if (acl->broker_allow.n == 0 || nsrv_cidr_list_match(&acl->broker_allow, peer))
            return true;
        snprintf(remark, remark_cap, "%s refused: %s is not in brokerAllowList", name, host);
    } else if (req->code == NSRV_REQ_UPDATE_NAMESRV_CONFIG && !acl->update_config_enable) {
        snprintf(remark, remark_cap,
                 "UPDATE_NAMESRV_CONFIG refused: it is switched off on this node "
                 "(updateNamesrvConfigEnable=false)");
    } else if (acl->admin_allow.n && !nsrv_cidr_list_match(&acl->admin_allow, peer)) {
        snprintf(remark, remark_cap, "%s refused: %s is not in adminAllowList", name, host);
    } else if (acl->keys) {
        const char *ak = NULL;
        const char *why = signature_problem(acl, req, &ak);
        if (!why)
            return true;
        /* The access key is named (it is an identity, not a secret), cut short. */
        if (ak)
            snprintf(remark, remark_cap, "%s refused by adminAclEnable: %s (AccessKey '%.64s')",
                     name, why, ak);
        else
            snprintf(remark, remark_cap, "%s refused by adminAclEnable: %s", name, why);
    } else {
        return true;
    }
    log_refusal(acl, peer, now_ms, remark);
    return false;
}
