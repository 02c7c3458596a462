/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may change the cluster (docs/design/tls-and-access.md "Who may change the cluster"): address
 * allow lists for the admin-write and broker codes, RocketMQ ACL signatures
 * (AccessKey/Signature ext fields, HmacSHA1 as AclClientRPCHook computes
 * them) on admin writes, and the UPDATE_NAMESRV_CONFIG switch.
 * The parsers (CIDR lists, the access-key file) take outside text and are
 * fuzzed. Loop thread only, except the pure parsers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nsrv/remoting.h"

struct nsrv_config;

/* ---- CIDR allow lists (cidr.c) ---- */

/* One rule, IPv4 held as IPv4-mapped IPv6 (::ffff:a.b.c.d, prefix 96 + p), so
 * an IPv4 peer seen on a dual-stack socket as ::ffff:a.b.c.d matches IPv4 rules. */
typedef struct {
    uint8_t addr[16]; /* host bits past the prefix are zero */
    uint8_t prefix;   /* 0..128 */
} nsrv_cidr_t;

typedef struct {
    nsrv_cidr_t *v;
    size_t n; /* 0: the list is off (everyone allowed) */
} nsrv_cidr_list_t;

/*
 * Parses "cidr[,cidr...]": each entry an IPv4 or IPv6 literal with an
 * optional /prefix (none: the single address); spaces around entries are
 * ignored; an empty or all-blank text is the empty list. An address with
 * host bits set past its prefix is refused (10.0.0.1/8 is a typo more often
 * than not). Returns 0, or -1 with a message naming the bad entry in err.
 */
int nsrv_cidr_list_parse(const char *text, size_t len, nsrv_cidr_list_t *out, char *err,
                         size_t err_cap);
void nsrv_cidr_list_free(nsrv_cidr_list_t *l);
/* sa (AF_INET or AF_INET6) is inside one of the rules. Other families never match. */
bool nsrv_cidr_list_match(const nsrv_cidr_list_t *l, const struct sockaddr *sa);

/* ---- the access-key file (acl_keys.c) ---- */

typedef struct nsrv_acl_keys nsrv_acl_keys_t;

/*
 * Parses lines "accessKey=secretKey" (split at the first '='; spaces and tabs
 * around both trimmed; a CR before the newline dropped); empty lines and lines
 * starting with '#' are skipped. Refused with the line number (never a
 * secret) in err: a line without '=', an empty key or secret, a key given
 * twice, a NUL byte. Returns 0 (*out set, possibly with no key) or -1.
 */
int nsrv_acl_keys_parse(const char *text, size_t len, nsrv_acl_keys_t **out, char *err,
                        size_t err_cap);
/* Reads and parses path; refused unless it is a regular file with no group or
 * other permission bits (0600 or 0400). Returns 0 or -1 with err. */
int nsrv_acl_keys_load(const char *path, nsrv_acl_keys_t **out, char *err, size_t err_cap);
/* The secret of access_key, or NULL. */
const char *nsrv_acl_keys_secret(const nsrv_acl_keys_t *k, const char *access_key);
size_t nsrv_acl_keys_count(const nsrv_acl_keys_t *k);
/* Wipes the secrets and frees; *k becomes NULL. */
void nsrv_acl_keys_free(nsrv_acl_keys_t **k);

/* ---- signatures (acl_sign.c) ---- */

#define NSRV_ACL_SIG_B64_LEN 28 /* base64 of a 20-byte HmacSHA1 */

/*
 * The Signature a RocketMQ AclClientRPCHook puts on req when signing with
 * secret: base64(HmacSHA1(secret as UTF-8, the values of req's ext fields
 * sorted by key as Java's String.compareTo orders them, the field
 * "Signature" left out, a repeated key counted once with its last value,
 * then the body bytes)). out gets 28 characters and a NUL. Returns 0, or -1
 * if libcrypto fails or is not loaded (nsrv_acl_create with adminAclEnable
 * loads it; include/nsrv/crypto.h).
 */
int nsrv_acl_signature(const nsrv_cmd_t *req, const char *secret,
                       char out[NSRV_ACL_SIG_B64_LEN + 1]);
/* Java's String.compareTo on two UTF-8 strings: UTF-16 code unit order. */
int nsrv_acl_java_strcmp(const char *a, size_t alen, const char *b, size_t blen);

/* ---- the policy (acl.c) ---- */

typedef struct nsrv_acl nsrv_acl_t;

/* Builds the policy from cfg (adminAllowList, brokerAllowList, adminAclEnable,
 * adminAclFile, updateNamesrvConfigEnable). Returns NULL with a message in err
 * when a list does not parse or the key file cannot be used. */
nsrv_acl_t *nsrv_acl_create(const struct nsrv_config *cfg, char *err, size_t err_cap);
void nsrv_acl_destroy(nsrv_acl_t **acl);
/* Nothing is restricted: every request passes without a look. */
bool nsrv_acl_is_open(const nsrv_acl_t *acl);

/*
 * Decides whether req from peer (NULL: unknown, which no allow list admits)
 * may run. Returns true, or false with a NUL-terminated remark naming the rule
 * that refused it in remark (the reply's NO_PERMISSION remark; it never holds
 * a secret). Refusals are logged with the peer's address, at most one line a
 * second (the lines skipped meanwhile are counted in the next). now_ms:
 * monotonic.
 */
bool nsrv_acl_check(nsrv_acl_t *acl, const nsrv_cmd_t *req, const struct sockaddr *peer,
                    uint64_t now_ms, char *remark, size_t remark_cap);
