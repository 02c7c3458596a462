/* SPDX-License-Identifier: Apache-2.0 */
/* gossipPeers / gossipPeerKeys parsing (include/nsrv/gossip.h). Pure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/config.h"
#include "nsrv/gossip.h"
#include "nsrv/netaddr.h"
#include "nsrv/seal.h"
#include "nsrv/text.h"

static void trim(const char **s, size_t *len) {
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

/* Calls fn on each non-empty comma-separated token; stops at the first error. */
static int each_token(const char *list, int (*fn)(void *ud, const char *tok, size_t len),
                      void *ud) {
    const char *p = list ? list : "";
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *tok = p;
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        trim(&tok, &len);
        if (len) {
            int rc = fn(ud, tok, len);
            if (rc)
                return rc;
        }
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

typedef struct {
    nsrv_gossip_peer_list_t *l;
    uint8_t self;
    char *err;
    size_t errlen;
    size_t nkeys[NSRV_GOSSIP_NODE_MAX];
} parse_ctx_t;

static int find_peer(const nsrv_gossip_peer_list_t *l, uint8_t id) {
    for (size_t i = 0; i < l->n; i++) {
        if (l->confs[i].node_id == id)
            return (int)i;
    }
    return -1;
}

static int peer_token(void *ud, const char *tok, size_t len) {
    parse_ctx_t *c = ud;
    const char *at = memchr(tok, '@', len);
    size_t idlen = at ? (size_t)(at - tok) : 0;
    if (!at || idlen == 0 || len - idlen - 1 >= 64)
        return nsrv_fail(c->err, c->errlen, -EINVAL, "gossipPeers: '%.*s' is not id@host:port",
                         (int)len, tok);
    uint64_t id = 0;
    if (!nsrv_parse_uint(tok, idlen, NSRV_GOSSIP_NODE_MAX, &id) || id < NSRV_GOSSIP_NODE_MIN) {
        snprintf(c->err, c->errlen, "gossipPeers: bad node id in '%.*s' (1..254)", (int)len, tok);
        return -EINVAL;
    }
    if (id == c->self || find_peer(c->l, (uint8_t)id) >= 0 || c->l->n == NSRV_GOSSIP_NODE_MAX) {
        snprintf(c->err, c->errlen, "gossipPeers: node %u listed twice or is this node",
                 (unsigned)id);
        return -EINVAL;
    }
    size_t i = c->l->n;
    snprintf(c->l->addrs[i], sizeof c->l->addrs[i], "%.*s", (int)(len - idlen - 1), at + 1);
    if (!nsrv_gossip_peer_addr_valid(c->l->addrs[i])) {
        snprintf(c->err, c->errlen, "gossipPeers: '%s' is not ip:port or host:port",
                 c->l->addrs[i]);
        return -EINVAL;
    }
    c->l->confs[i].node_id = (uint8_t)id;
    c->l->confs[i].addr = c->l->addrs[i];
    c->l->confs[i].keys = c->l->keys[i];
    c->l->n++;
    return 0;
}

/* Adds key (node, key_id, pk) to keys[0..*n): a second key of the same id is an error, not
 * "the last one wins". */
static int add_key(parse_ctx_t *c, nsrv_gossip_key_t *keys, size_t *n, uint8_t node, uint8_t key_id,
                   const uint8_t *pk) {
    if (*n == NSRV_GOSSIP_MAX_KEYS) {
        snprintf(c->err, c->errlen, "gossipPeerKeys: more than %d keys for node %u",
                 NSRV_GOSSIP_MAX_KEYS, node);
        return -EINVAL;
    }
    for (size_t k = 0; k < *n; k++) {
        if (keys[k].key_id == key_id) {
            snprintf(c->err, c->errlen, "gossipPeerKeys: key %u of node %u listed twice", key_id,
                     node);
            return -EINVAL;
        }
    }
    keys[*n].key_id = key_id;
    memcpy(keys[*n].pk, pk, NSRV_SEAL_PK_LEN);
    (*n)++;
    return 0;
}

static int own_key_token(parse_ctx_t *c, uint8_t node, uint8_t key_id, const uint8_t *pk) {
    return add_key(c, c->l->self_keys, &c->l->n_self_keys, node, key_id, pk);
}

static int key_token(void *ud, const char *tok, size_t len) {
    parse_ctx_t *c = ud;
    uint8_t node, key_id, pk[NSRV_SEAL_PK_LEN];
    if (nsrv_seal_pubkey_token_parse((nsrv_str_t){tok, len}, &node, &key_id, pk) != 0) {
        snprintf(c->err, c->errlen, "gossipPeerKeys: '%.*s' is not id:keyId:base64", (int)len, tok);
        return -EINVAL;
    }
    if (node == c->self)
        return own_key_token(c, node, key_id, pk); /* the list may be shared by every node */
    int i = find_peer(c->l, node);
    if (i < 0) {
        snprintf(c->err, c->errlen, "gossipPeerKeys: node %u is not in gossipPeers", node);
        return -EINVAL;
    }
    int rc = add_key(c, c->l->keys[i], &c->nkeys[i], node, key_id, pk);
    if (rc != 0)
        return rc;
    c->l->confs[i].nkeys = c->nkeys[i];
    return 0;
}

int nsrv_gossip_parse_peers(const char *peers, const char *keys, uint8_t self_id,
                            nsrv_gossip_peer_list_t *list, char *err, size_t errlen) {
    memset(list, 0, sizeof *list);
    parse_ctx_t c = {list, self_id, err, errlen, {0}};
    int rc = each_token(peers, peer_token, &c);
    if (rc == 0)
        rc = each_token(keys, key_token, &c);
    for (size_t i = 0; rc == 0 && i < list->n; i++) {
        if (list->confs[i].nkeys == 0) {
            snprintf(err, errlen, "gossipPeerKeys: no public key for node %u",
                     list->confs[i].node_id);
            rc = -EINVAL;
        }
    }
    return rc;
}

void nsrv_gossip_state_path(const nsrv_config_t *cfg, char *out, size_t cap) {
    if (cfg->gossip_state_path[0]) {
        snprintf(out, cap, "%s", cfg->gossip_state_path);
        return;
    }
    const char *slash = strrchr(cfg->kv_config_path, '/');
    snprintf(out, cap, "%.*sgossip.state", slash ? (int)(slash - cfg->kv_config_path + 1) : 0,
             cfg->kv_config_path);
}

int nsrv_gossip_check_own_key(const nsrv_gossip_peer_list_t *list, uint8_t self_id, uint8_t key_id,
                              const uint8_t pk[NSRV_SEAL_PK_LEN], char *err, size_t errlen) {
    /* Only a listed key can be checked: during a rotation (proto/gossip.md) a node may sign
     * with a key its own copy of the list does not hold yet. */
    for (size_t k = 0; k < list->n_self_keys; k++) {
        if (list->self_keys[k].key_id != key_id ||
            memcmp(list->self_keys[k].pk, pk, NSRV_SEAL_PK_LEN) == 0)
            continue;
        return nsrv_fail(err, errlen, -EINVAL,
                         "gossipSecretKeyFile does not match this node's public key %u:%u in "
                         "gossipPeerKeys (the file holds another node's or another key's secret)",
                         self_id, key_id);
    }
    return 0;
}
