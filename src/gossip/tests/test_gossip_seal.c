/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seal: signatures, hashing (known answers from Python's hashlib), base64,
 * public-key tokens, and the secret-key file (mode 0600 written, group or
 * other access refused, never overwritten).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gossip_test.h"
#include "testlib.h"

NSRV_TEST_DIR_FIXTURE("gossip-seal")

static void path_in(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", tmp.path, name);
}

static void test_sign_verify(void **state) {
    (void)state;
    assert_int_equal(nsrv_seal_init(), 0);
    assert_int_equal(nsrv_seal_init(), 0);
    uint8_t pk[32], sk[64], sig[64], sig2[64];
    nsrv_seal_keygen(pk, sk);
    const char msg[] = "broker-live digest";
    nsrv_seal_sign(sk, msg, sizeof msg, sig);
    assert_int_equal(nsrv_seal_verify(pk, msg, sizeof msg, sig), 0);
    nsrv_seal_sign(sk, msg, sizeof msg, sig2);
    assert_memory_equal(sig, sig2, 64); /* deterministic */
    sig[10] ^= 1;
    assert_int_equal(nsrv_seal_verify(pk, msg, sizeof msg, sig), -EBADMSG);
    sig[10] ^= 1;
    assert_int_equal(nsrv_seal_verify(pk, msg, sizeof msg - 1, sig), -EBADMSG);
    uint8_t pk2[32], sk2[64];
    nsrv_seal_keygen(pk2, sk2);
    assert_int_equal(nsrv_seal_verify(pk2, msg, sizeof msg, sig), -EBADMSG);
    /* Seeds give fixed keys (keys.txt of the vectors). */
    gt_key_t k = gt_key_1_1();
    char b64[45];
    assert_int_equal(nsrv_seal_b64_encode(k.pk, 32, b64, sizeof b64), 44);
    assert_string_equal(b64, "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=");
    uint8_t r1[16] = {0}, r2[16] = {0};
    nsrv_seal_random(r1, sizeof r1);
    nsrv_seal_random(r2, sizeof r2);
    assert_memory_not_equal(r1, r2, 16);
}

static void test_hash_known_answers(void **state) {
    (void)state;
    static const uint8_t abc[32] = {0xbd, 0xdd, 0x81, 0x3c, 0x63, 0x42, 0x39, 0x72,
                                    0x31, 0x71, 0xef, 0x3f, 0xee, 0x98, 0x57, 0x9b,
                                    0x94, 0x96, 0x4e, 0x3b, 0xb1, 0xcb, 0x3e, 0x42,
                                    0x72, 0x62, 0xc8, 0xc0, 0x68, 0xd5, 0x23, 0x19};
    static const uint8_t empty[4] = {0x0e, 0x57, 0x51, 0xc0};
    nsrv_seal_hash_t h;
    uint8_t out[32];
    nsrv_seal_hash_init(&h);
    nsrv_seal_hash_update(&h, "a", 1);
    nsrv_seal_hash_update(&h, "bc", 2);
    nsrv_seal_hash_final(&h, out);
    assert_memory_equal(out, abc, 32);
    nsrv_seal_hash_init(&h);
    nsrv_seal_hash_final(&h, out);
    assert_memory_equal(out, empty, 4);
}

static void test_b64_and_tokens(void **state) {
    (void)state;
    uint8_t bin[32], back[32];
    for (int i = 0; i < 32; i++)
        bin[i] = (uint8_t)(i * 37);
    char text[45];
    assert_int_equal(nsrv_seal_b64_encode(bin, 32, text, 44), -ENOSPC);
    assert_int_equal(nsrv_seal_b64_encode(bin, 32, text, sizeof text), 44);
    assert_int_equal(nsrv_seal_b64_decode32(text, 44, back), 0);
    assert_memory_equal(bin, back, 32);
    assert_int_equal(nsrv_seal_b64_decode32(text, 43, back), -EINVAL);
    char bad[45];
    memcpy(bad, text, 45);
    bad[3] = '*';
    assert_int_equal(nsrv_seal_b64_decode32(bad, 44, back), -EINVAL);
    memcpy(bad, text, 45);
    bad[42] = '='; /* 31 bytes + padding */
    assert_int_equal(nsrv_seal_b64_decode32(bad, 44, back), -EINVAL);

    char tok[80];
    snprintf(tok, sizeof tok, "7:2:%s", text);
    uint8_t node, kid, pk[32];
    assert_int_equal(nsrv_seal_pubkey_token_parse(nsrv_str_c(tok), &node, &kid, pk), 0);
    assert_int_equal(node, 7);
    assert_int_equal(kid, 2);
    assert_memory_equal(pk, bin, 32);
    const char *bads[] = {
        "0:1:", "255:1:", "1:256:", "1::", ":1:", "+1:1:", "1:1", "1:-1:", "1234:1:", "a:1:"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bads); i++) {
        snprintf(tok, sizeof tok, "%s%s", bads[i], text);
        assert_int_equal(nsrv_seal_pubkey_token_parse(nsrv_str_c(tok), &node, &kid, pk), -EINVAL);
    }
    snprintf(tok, sizeof tok, "1:1:%s ", text); /* trailing space */
    assert_int_equal(nsrv_seal_pubkey_token_parse(nsrv_str_c(tok), &node, &kid, pk), -EINVAL);
    assert_int_equal(nsrv_seal_pubkey_token_parse(NSRV_STR_NULL, &node, &kid, pk), -EINVAL);
}

static mode_t file_mode(const char *p) {
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_mode & 07777;
}

#define NO_OWNER ((uid_t)-1)
#define NO_GROUP ((gid_t)-1)

static void test_key_files(void **state) {
    (void)state;
    char p[128], line[NSRV_SEAL_LINE_MAX];
    path_in(p, sizeof p, "node1.key");
    mode_t old = umask(0); /* even with a permissive umask the file is 0600 */
    assert_int_equal(nsrv_seal_keygen_files(p, 1, 3, NO_OWNER, NO_GROUP, line, sizeof line), 0);
    umask(old);
    assert_int_equal(file_mode(p), 0600);
    /* One item of gossipPeerKeys, nothing around it: the docs join three of them with commas. */
    assert_int_equal(strncmp(line, "1:3:", 4), 0);
    assert_int_equal(strlen(line), 4 + 44);

    /* The printed public key is the file's. */
    uint8_t pk[32], sk[64], node, kid, pk_line[32];
    assert_int_equal(nsrv_seal_sk_load(p, pk, sk), 0);
    assert_int_equal(nsrv_seal_pubkey_token_parse(nsrv_str_c(line), &node, &kid, pk_line), 0);
    assert_int_equal(node, 1);
    assert_int_equal(kid, 3);
    assert_memory_equal(pk, pk_line, 32);
    uint8_t sig[64];
    nsrv_seal_sign(sk, "m", 1, sig);
    assert_int_equal(nsrv_seal_verify(pk_line, "m", 1, sig), 0);

    /* Never overwritten. */
    char line2[NSRV_SEAL_LINE_MAX];
    assert_int_equal(nsrv_seal_keygen_files(p, 1, 3, NO_OWNER, NO_GROUP, line2, sizeof line2),
                     -EEXIST);
    uint8_t pk_again[32];
    assert_int_equal(nsrv_seal_sk_load(p, pk_again, sk), 0);
    assert_memory_equal(pk, pk_again, 32);

    /* Group- or other-accessible files are refused. */
    const mode_t refused[] = {0644, 0640, 0604, 0620, 0602, 0610, 0601};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(refused); i++) {
        assert_int_equal(chmod(p, refused[i]), 0);
        assert_int_equal(nsrv_seal_sk_load(p, pk, sk), -EPERM);
    }
    assert_int_equal(chmod(p, 0400), 0);
    assert_int_equal(nsrv_seal_sk_load(p, pk, sk), 0);

    /* Through a symlink (Kubernetes secrets): the target's mode counts. */
    char link_path[128];
    path_in(link_path, sizeof link_path, "link.key");
    assert_int_equal(symlink(p, link_path), 0);
    assert_int_equal(nsrv_seal_sk_load(link_path, pk, sk), 0);

    /* Bad arguments and content. */
    assert_int_equal(nsrv_seal_keygen_files(p, 1, 1, NO_OWNER, NO_GROUP, line, 10), -EINVAL);
    assert_int_equal(nsrv_seal_keygen_files(p, 0, 1, NO_OWNER, NO_GROUP, line, sizeof line),
                     -EINVAL);
    char q[128];
    path_in(q, sizeof q, "missing.key");
    assert_int_equal(nsrv_seal_sk_load(q, pk, sk), -ENOENT);
    assert_int_equal(nsrv_seal_sk_load(tmp.path, pk, sk), -EINVAL); /* a directory (mode 0700) */
    const char *contents[] = {"", "hello\n", "AAAA\n",
                              "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=A\n"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(contents); i++) {
        path_in(q, sizeof q, "bad.key");
        unlink(q);
        int fd = open(q, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, contents[i], strlen(contents[i])), (ssize_t)strlen(contents[i]));
        close(fd);
        assert_int_equal(nsrv_seal_sk_load(q, pk, sk), -EINVAL);
    }
    /* Surrounding whitespace is fine; this is the seed 0x00..0x1f. */
    path_in(q, sizeof q, "seed.key");
    uint8_t seed[32];
    for (int i = 0; i < 32; i++)
        seed[i] = (uint8_t)i;
    assert_int_equal(nsrv_seal_sk_save(q, seed, NO_OWNER, NO_GROUP), 0);
    assert_int_equal(file_mode(q), 0600);
    gt_key_t k = gt_key_1_1();
    assert_int_equal(nsrv_seal_sk_load(q, pk, sk), 0);
    assert_memory_equal(pk, k.pk, 32);
    assert_memory_equal(sk, k.sk, 64);
    char *text;
    size_t len;
    assert_int_equal(nsrv_file_read_all(q, 100, &text, &len), 0);
    assert_int_equal(len, 45);
    assert_int_equal(text[44], '\n');
    nsrv_free(text);
}

/* Root making a service account's key: the file is that account's from the start; anyone else
 * asking for a foreign owner is refused by the kernel and leaves no file behind. */
static void test_key_file_owner(void **state) {
    (void)state;
    const uid_t uid = 65534;
    const gid_t gid = 65534;
    char p[128], line[NSRV_SEAL_LINE_MAX];
    path_in(p, sizeof p, "service.key");
    int rc = nsrv_seal_keygen_files(p, 2, 1, uid, gid, line, sizeof line);
    struct stat st;
    if (geteuid() == 0) {
        assert_int_equal(rc, 0);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_uid, uid);
        assert_int_equal(st.st_gid, gid);
        assert_int_equal(st.st_mode & 07777, 0600);
    } else {
        assert_int_equal(rc, -EPERM);
        assert_int_equal(stat(p, &st), -1);
    }
    /* No temp file is left either way. */
    char tmp_name[160];
    snprintf(tmp_name, sizeof tmp_name, "%s.tmp.%ld", p, (long)getpid());
    assert_int_equal(access(tmp_name, F_OK), -1);
}

NSRV_TEST_MAIN(setup, teardown, cmocka_unit_test(test_sign_verify),
               cmocka_unit_test(test_hash_known_answers), cmocka_unit_test(test_b64_and_tokens),
               cmocka_unit_test(test_key_files), cmocka_unit_test(test_key_file_owner))
