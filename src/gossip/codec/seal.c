/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libsodium wrappers (the only file that includes sodium.h) and the
 * secret-key file. See include/nsrv/seal.h and proto/gossip.md §3.
 */
#include "nsrv/seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "nsrv/alloc.h"
#include "nsrv/fileio.h"
#include "nsrv/text.h"

_Static_assert(sizeof(nsrv_seal_hash_t) >= sizeof(crypto_generichash_state),
               "nsrv_seal_hash_t too small for crypto_generichash_state");
_Static_assert(_Alignof(nsrv_seal_hash_t) >= _Alignof(crypto_generichash_state),
               "nsrv_seal_hash_t under-aligned");
_Static_assert(NSRV_SEAL_PK_LEN == crypto_sign_PUBLICKEYBYTES, "pk size");
_Static_assert(NSRV_SEAL_SK_LEN == crypto_sign_SECRETKEYBYTES, "sk size");
_Static_assert(NSRV_SEAL_SEED_LEN == crypto_sign_SEEDBYTES, "seed size");
_Static_assert(NSRV_SEAL_SIG_LEN == crypto_sign_BYTES, "sig size");
_Static_assert(NSRV_SEAL_HASH_LEN == crypto_generichash_BYTES, "hash size");

/* A key file is one base64 line; anything much longer is not ours. */
#define SK_FILE_MAX 256

static bool seal_ready;

int nsrv_seal_init(void) {
    if (seal_ready)
        return 0;
    /* 0 = initialized now, 1 = already initialized, -1 = failure. */
    if (sodium_init() < 0)
        return -EIO;
    seal_ready = true;
    return 0;
}

/* libsodium cannot work uninitialized; there is no way to continue. */
static void ensure_init(void) {
    if (nsrv_seal_init() != 0) {
        fprintf(stderr, "nsrvd: libsodium initialization failed\n");
        abort();
    }
}

void nsrv_seal_keygen(uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]) {
    ensure_init();
    crypto_sign_keypair(pk, sk);
}

void nsrv_seal_keypair_from_seed(const uint8_t seed[NSRV_SEAL_SEED_LEN],
                                 uint8_t pk[NSRV_SEAL_PK_LEN], uint8_t sk[NSRV_SEAL_SK_LEN]) {
    ensure_init();
    crypto_sign_seed_keypair(pk, sk, seed);
}

void nsrv_seal_sign(const uint8_t sk[NSRV_SEAL_SK_LEN], const void *msg, size_t len,
                    uint8_t sig[NSRV_SEAL_SIG_LEN]) {
    ensure_init();
    crypto_sign_detached(sig, NULL, (const unsigned char *)msg, len, sk);
}

int nsrv_seal_verify(const uint8_t pk[NSRV_SEAL_PK_LEN], const void *msg, size_t len,
                     const uint8_t sig[NSRV_SEAL_SIG_LEN]) {
    ensure_init();
    return crypto_sign_verify_detached(sig, (const unsigned char *)msg, len, pk) == 0 ? 0
                                                                                      : -EBADMSG;
}

void nsrv_seal_random(void *buf, size_t len) {
    ensure_init();
    randombytes_buf(buf, len);
}

void nsrv_seal_wipe(void *p, size_t len) {
    sodium_memzero(p, len);
}

void nsrv_seal_hash_init(nsrv_seal_hash_t *h) {
    ensure_init();
    crypto_generichash_init((crypto_generichash_state *)h->opaque, NULL, 0,
                            crypto_generichash_BYTES);
}

void nsrv_seal_hash_update(nsrv_seal_hash_t *h, const void *p, size_t len) {
    crypto_generichash_update((crypto_generichash_state *)h->opaque, (const unsigned char *)p, len);
}

void nsrv_seal_hash_final(nsrv_seal_hash_t *h, uint8_t out[NSRV_SEAL_HASH_LEN]) {
    crypto_generichash_final((crypto_generichash_state *)h->opaque, out, NSRV_SEAL_HASH_LEN);
}

int nsrv_seal_b64_encode(const uint8_t *bin, size_t len, char *out, size_t out_cap) {
    size_t need = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
    if (out_cap < need)
        return -ENOSPC;
    sodium_bin2base64(out, out_cap, bin, len, sodium_base64_VARIANT_ORIGINAL);
    return (int)(need - 1);
}

int nsrv_seal_b64_decode32(const char *text, size_t len, uint8_t out[32]) {
    if (len != NSRV_SEAL_B64_32_LEN)
        return -EINVAL;
    uint8_t tmp[32];
    size_t bin_len = 0;
    const char *end = NULL;
    if (sodium_base642bin(tmp, sizeof tmp, text, len, NULL, &bin_len, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        bin_len != 32 || end != text + len)
        return -EINVAL;
    memcpy(out, tmp, 32);
    return 0;
}

/* Decimal 0..max, 1-3 digits, nothing else. */
static int parse_small(const char *p, size_t len, unsigned max, uint8_t *out) {
    uint64_t v;
    if (len > 3 || !nsrv_parse_uint(p, len, max, &v))
        return -EINVAL;
    *out = (uint8_t)v;
    return 0;
}

int nsrv_seal_pubkey_token_parse(nsrv_str_t tok, uint8_t *node_id, uint8_t *key_id,
                                 uint8_t pk[NSRV_SEAL_PK_LEN]) {
    if (!tok.ptr)
        return -EINVAL;
    const char *c1 = memchr(tok.ptr, ':', tok.len);
    if (!c1)
        return -EINVAL;
    size_t rest = tok.len - (size_t)(c1 + 1 - tok.ptr);
    const char *c2 = memchr(c1 + 1, ':', rest);
    if (!c2)
        return -EINVAL;
    uint8_t n, k, key[32];
    if (parse_small(tok.ptr, (size_t)(c1 - tok.ptr), 254, &n) != 0 || n == 0 ||
        parse_small(c1 + 1, (size_t)(c2 - c1 - 1), 255, &k) != 0 ||
        nsrv_seal_b64_decode32(c2 + 1, tok.len - (size_t)(c2 + 1 - tok.ptr), key) != 0)
        return -EINVAL;
    *node_id = n;
    *key_id = k;
    memcpy(pk, key, 32);
    return 0;
}

int nsrv_seal_sk_save(const char *path, const uint8_t seed[NSRV_SEAL_SEED_LEN], uid_t owner,
                      gid_t group) {
    char text[NSRV_SEAL_B64_32_LEN + 2];
    int n = nsrv_seal_b64_encode(seed, NSRV_SEAL_SEED_LEN, text, sizeof text);
    if (n < 0)
        return n;
    text[n++] = '\n';

    size_t plen = strlen(path);
    char *tmp = nsrv_malloc(plen + 32);
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());

    int rc = 0;
    /* O_EXCL: never write a secret through someone else's file or symlink. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = -errno;
        goto cleanup;
    }
    /* The umask can only remove bits; make the mode exact anyway. */
    if (fchmod(fd, 0600) != 0)
        rc = -errno;
    /* On the descriptor, before the name exists: a path could be swapped by whoever owns the
     * directory, and root must never chown a file it did not just create. */
    if (rc == 0 && (owner != (uid_t)-1 || group != (gid_t)-1) && fchown(fd, owner, group) != 0)
        rc = -errno;
    if (rc == 0)
        rc = nsrv_fd_write_all(fd, text, (size_t)n);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    /* link(2) instead of rename(2): an existing key is never replaced. */
    if (rc == 0 && link(tmp, path) != 0)
        rc = -errno;
    unlink(tmp);
    if (rc == 0)
        rc = nsrv_file_sync_dir_of(path);

cleanup:
    nsrv_seal_wipe(text, sizeof text);
    nsrv_free(tmp);
    return rc;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int nsrv_seal_sk_parse(const char *text, size_t len, uint8_t pk[NSRV_SEAL_PK_LEN],
                       uint8_t sk[NSRV_SEAL_SK_LEN]) {
    uint8_t seed[NSRV_SEAL_SEED_LEN];
    size_t b = 0, e = len;
    while (b < e && is_space(text[b]))
        b++;
    while (e > b && is_space(text[e - 1]))
        e--;
    int rc = nsrv_seal_b64_decode32(text + b, e - b, seed);
    if (rc == 0)
        nsrv_seal_keypair_from_seed(seed, pk, sk);
    nsrv_seal_wipe(seed, sizeof seed);
    return rc;
}

int nsrv_seal_sk_load(const char *path, uint8_t pk[NSRV_SEAL_PK_LEN],
                      uint8_t sk[NSRV_SEAL_SK_LEN]) {
    char text[SK_FILE_MAX + 1];
    size_t len = 0;
    int rc = 0;

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto cleanup;
    }
    if (st.st_mode & 077) {
        rc = -EPERM;
        goto cleanup;
    }
    for (;;) {
        if (len == sizeof text) {
            rc = -EINVAL; /* longer than any key file */
            goto cleanup;
        }
        ssize_t r = read(fd, text + len, sizeof text - len);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto cleanup;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    rc = nsrv_seal_sk_parse(text, len, pk, sk);

cleanup:
    close(fd);
    nsrv_seal_wipe(text, sizeof text);
    return rc;
}

int nsrv_seal_keygen_files(const char *path, uint8_t node_id, uint8_t key_id, uid_t owner,
                           gid_t group, char *line, size_t line_cap) {
    if (line_cap < NSRV_SEAL_LINE_MAX || node_id == 0 || node_id == 255)
        return -EINVAL;
    uint8_t seed[NSRV_SEAL_SEED_LEN], pk[NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
    nsrv_seal_random(seed, sizeof seed);
    nsrv_seal_keypair_from_seed(seed, pk, sk);
    int rc = nsrv_seal_sk_save(path, seed, owner, group);
    if (rc == 0) {
        char b64[NSRV_SEAL_B64_32_LEN + 1];
        nsrv_seal_b64_encode(pk, sizeof pk, b64, sizeof b64);
        snprintf(line, line_cap, "%u:%u:%s", (unsigned)node_id, (unsigned)key_id, b64);
    }
    nsrv_seal_wipe(seed, sizeof seed);
    nsrv_seal_wipe(sk, sizeof sk);
    return rc;
}
