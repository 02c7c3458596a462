/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one home of libsodium (proto/gossip.md §3): Ed25519 keys, detached
 * signatures, BLAKE2b hashing, randomness, base64 and the secret-key file.
 * Everything here is synchronous and does no I/O except the key-file
 * functions, which block (startup and `nsrvd keygen` only).
 *
 * Key material: a node's secret is the 32-byte Ed25519 seed; the 64-byte
 * libsodium secret key (seed ‖ public key) is derived from it on load.
 * Public keys travel in config as standard base64 with padding (44 chars).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nsrv/common.h"

#define NSRV_SEAL_PK_LEN 32
#define NSRV_SEAL_SK_LEN 64
#define NSRV_SEAL_SEED_LEN 32
#define NSRV_SEAL_SIG_LEN 64
#define NSRV_SEAL_HASH_LEN 32
/* base64 (standard alphabet, padded) of 32 bytes, without the NUL */
#define NSRV_SEAL_B64_32_LEN 44
/* Room for the public-key item nsrv_seal_keygen_files writes, NUL included. */
#define NSRV_SEAL_LINE_MAX 96

/*
 * Initializes libsodium once. Every function below calls it lazily, but the
 * server should call it at startup from the loop thread: the lazy path is not
 * thread-safe. Returns 0, or -EIO if libsodium cannot initialize.
 */
int nsrv_seal_init(void);

/* A fresh random key pair. */
void nsrv_seal_keygen(uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]);
/* The key pair of a seed (deterministic: used for test vectors). */
void nsrv_seal_keypair_from_seed(const uint8_t seed[NSRV_SEAL_SEED_LEN],
                                 uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]);

/* Ed25519 detached signature of msg[0..len). Deterministic. */
void nsrv_seal_sign(const uint8_t sk[NSRV_SEAL_SK_LEN], const void *msg, size_t len,
                    uint8_t sig[NSRV_SEAL_SIG_LEN]);
/* 0 if sig is pk's signature of msg[0..len), else -EBADMSG. */
int nsrv_seal_verify(const uint8_t pk[NSRV_SEAL_PK_LEN], const void *msg, size_t len,
                     const uint8_t sig[NSRV_SEAL_SIG_LEN]);

/* Cryptographic random bytes (pull nonces). */
void nsrv_seal_random(void *buf, size_t len);
/* Zeroes secrets in a way the compiler does not remove. */
void nsrv_seal_wipe(void *p, size_t len);

/*
 * Unkeyed BLAKE2b with a 32-byte output (libsodium crypto_generichash with
 * its default length). The state is opaque storage sized for libsodium's
 * crypto_generichash_state (checked at compile time in seal.c).
 */
typedef struct {
    _Alignas(64) unsigned char opaque[384];
} nsrv_seal_hash_t;

void nsrv_seal_hash_init(nsrv_seal_hash_t *h);
void nsrv_seal_hash_update(nsrv_seal_hash_t *h, const void *p, size_t len);
void nsrv_seal_hash_final(nsrv_seal_hash_t *h, uint8_t out[NSRV_SEAL_HASH_LEN]);

/*
 * Standard padded base64 of bin[0..len) into out (NUL-terminated). Returns
 * the text length, or -ENOSPC if out_cap is too small.
 */
int nsrv_seal_b64_encode(const uint8_t *bin, size_t len, char *out, size_t out_cap);
/*
 * Decodes text[0..len) (standard padded base64, nothing else: no whitespace)
 * into exactly 32 bytes. Returns 0 or -EINVAL.
 */
int nsrv_seal_b64_decode32(const char *text, size_t len, uint8_t out[32]);

/*
 * A public-key token as printed by keygen and written in config:
 * "<node_id>:<key_id>:<base64 public key>", node_id 1..254, key_id 0..255,
 * decimal without sign or leading '+'. Returns 0 or -EINVAL.
 */
int nsrv_seal_pubkey_token_parse(nsrv_str_t tok, uint8_t *node_id, uint8_t *key_id,
                                 uint8_t pk[NSRV_SEAL_PK_LEN]);

/*
 * Secret-key file: base64 of the 32-byte seed, then "\n". Written mode 0600
 * through a temp file, fsync and link(2), so an existing file is never
 * replaced (-EEXIST) and a crash leaves either no file or a complete one.
 * owner/group as for fchown(2): (uid_t)-1 and (gid_t)-1 keep the caller's;
 * others give the file to that account before it appears under path (root
 * making the key of a service account). Blocking. Returns 0 or -errno.
 */
int nsrv_seal_sk_save(const char *path, const uint8_t seed[NSRV_SEAL_SEED_LEN], uid_t owner,
                      gid_t group);
/* The key file's bytes (len of them, not NUL-terminated): the base64 seed, surrounding
 * whitespace ignored. Returns 0 or a negative errno. The file checks stay in sk_load. */
int nsrv_seal_sk_parse(const char *text, size_t len, uint8_t pk[NSRV_SEAL_PK_LEN],
                       uint8_t sk[NSRV_SEAL_SK_LEN]);
/*
 * Loads a secret-key file. Refuses (-EPERM) a file that group or others can
 * access in any way (mode & 077), and (-EINVAL) one that is not a regular
 * file or does not hold exactly one base64 seed (surrounding whitespace is
 * allowed). Symbolic links are followed (Kubernetes secret volumes use them);
 * the mode checked is the target's. Blocking. On success writes pk and sk.
 */
int nsrv_seal_sk_load(const char *path, uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]);

/*
 * `nsrvd keygen`: creates a key pair, saves the seed to path (see
 * nsrv_seal_sk_save, owner and group included; -EEXIST if path exists) and
 * writes into line the public-key item every node's gossipPeerKeys lists (the
 * items of all nodes joined with commas):
 *   "<node_id>:<key_id>:<base64 public key>"
 * line_cap must be >= NSRV_SEAL_LINE_MAX. Returns 0 or -errno.
 */
int nsrv_seal_keygen_files(const char *path, uint8_t node_id, uint8_t key_id, uid_t owner,
                           gid_t group, char *line, size_t line_cap);

/*
 * The start-up (or reload) error for a gossipSecretKeyFile that nsrv_seal_sk_load refused
 * with rc, in words that name the file, the user nsrvd runs as and the fix. node_id is the
 * node's gossipNodeId (for the keygen command it suggests).
 */
void nsrv_seal_sk_load_explain(const char *path, int rc, unsigned node_id, char *err,
                               size_t errlen);
