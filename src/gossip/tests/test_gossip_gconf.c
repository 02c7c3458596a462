/* SPDX-License-Identifier: Apache-2.0 */
/* gossipPeers / gossipPeerKeys parsing: good lists, and every kind of bad one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/gossip.h"
#include "nsrv/seal.h"
#include "testlib.h"

static char key_tok[3][NSRV_SEAL_LINE_MAX];

static int setup(void **state) {
    (void)state;
    for (int i = 0; i < 3; i++) {
        uint8_t seed[NSRV_SEAL_SEED_LEN], pk[NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
        memset(seed, i + 1, sizeof seed);
        nsrv_seal_keypair_from_seed(seed, pk, sk);
        char b64[64];
        nsrv_seal_b64_encode(pk, sizeof pk, b64, sizeof b64);
        snprintf(key_tok[i], sizeof key_tok[i], "%d:1:%s", i + 1, b64);
    }
    return 0;
}

static int parse(const char *peers, const char *keys, nsrv_gossip_peer_list_t *l, char *err) {
    return nsrv_gossip_parse_peers(peers, keys, 1, l, err, 256);
}

static void test_good_lists(void **state) {
    (void)state;
    nsrv_gossip_peer_list_t l;
    char err[256] = "", keys[512];
    snprintf(keys, sizeof keys, " %s , %s,%s ", key_tok[0], key_tok[1], key_tok[2]);
    assert_int_equal(parse("2@127.0.0.2:9878, 3@[::1]:9878", keys, &l, err), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.confs[0].node_id, 2);
    assert_string_equal(l.confs[0].addr, "127.0.0.2:9878");
    assert_int_equal(l.confs[0].nkeys, 1);
    assert_int_equal(l.confs[1].node_id, 3);
    assert_string_equal(l.confs[1].addr, "[::1]:9878");
    /* Our own key in the shared list is kept apart for the own-key check; no peers at all
     * is fine. */
    assert_int_equal(parse("", key_tok[0], &l, err), 0);
    assert_int_equal(l.n, 0);
}

static void test_rotation_keys(void **state) {
    (void)state;
    nsrv_gossip_peer_list_t l;
    char err[256] = "", keys[512];
    char second[NSRV_SEAL_LINE_MAX];
    snprintf(second, sizeof second, "2:2%s", strchr(key_tok[1], ':') + 2);
    snprintf(keys, sizeof keys, "%s,%s", key_tok[1], second);
    assert_int_equal(parse("2@127.0.0.2:9878", keys, &l, err), 0);
    assert_int_equal(l.confs[0].nkeys, 2);
    assert_int_equal(l.confs[0].keys[1].key_id, 2);
}

static void test_bad_lists(void **state) {
    (void)state;
    nsrv_gossip_peer_list_t l;
    char err[256], keys[512];
    snprintf(keys, sizeof keys, "%s,%s", key_tok[1], key_tok[2]);
    const char *bad_peers[] = {
        "2",                                 /* no address */
        "x@127.0.0.2:9878",                  /* bad id */
        "0@127.0.0.2:9878",                  /* id out of range */
        "255@127.0.0.2:9878",                /* id out of range */
        "+2@127.0.0.2:9878",                 /* a sign is not a digit */
        "1@127.0.0.2:9878",                  /* ourselves */
        "2@127.0.0.2:9878,2@127.0.0.3:9878", /* twice */
        "2@host.example:9878",               /* not a literal address */
        "2@127.0.0.2",                       /* no port */
        "2@127.0.0.2:0",                     /* port 0 */
        "3@127.0.0.3:9878",                  /* fine, but node 2's key has no peer */
    };
    for (size_t i = 0; i < sizeof bad_peers / sizeof bad_peers[0]; i++) {
        err[0] = '\0';
        if (parse(bad_peers[i], keys, &l, err) != -EINVAL)
            fail_msg("accepted gossipPeers=%s", bad_peers[i]);
        assert_true(strlen(err) > 0);
    }
    const char *bad_keys[] = {"2:1:not-base64", "2:1", "2:0:AAAA", "junk"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        if (parse("2@127.0.0.2:9878", bad_keys[i], &l, err) != -EINVAL)
            fail_msg("accepted gossipPeerKeys=%s", bad_keys[i]);
    }
    /* A peer without any key, and the same key id twice. */
    assert_int_equal(parse("2@127.0.0.2:9878", "", &l, err), -EINVAL);
    assert_non_null(strstr(err, "no public key for node 2"));
    snprintf(keys, sizeof keys, "%s,%s", key_tok[1], key_tok[1]);
    assert_int_equal(parse("2@127.0.0.2:9878", keys, &l, err), -EINVAL);
}

/* The node's own public key in the shared list is checked against its secret key file:
 * another node's key under its key id, or its own id and key id twice, is refused. */
static void test_own_key_checked(void **state) {
    (void)state;
    nsrv_gossip_peer_list_t l;
    char err[256] = "", keys[512];
    uint8_t seed[NSRV_SEAL_SEED_LEN], pk[3][NSRV_SEAL_PK_LEN], sk[NSRV_SEAL_SK_LEN];
    for (int i = 0; i < 3; i++) {
        memset(seed, i + 1, sizeof seed);
        nsrv_seal_keypair_from_seed(seed, pk[i], sk);
    }
    snprintf(keys, sizeof keys, "%s,%s", key_tok[0], key_tok[1]);
    assert_int_equal(parse("2@127.0.0.2:9878", keys, &l, err), 0);
    assert_int_equal(l.n_self_keys, 1);
    assert_int_equal(nsrv_gossip_check_own_key(&l, 1, 1, pk[0], err, sizeof err), 0);
    assert_int_equal(nsrv_gossip_check_own_key(&l, 1, 1, pk[1], err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "does not match this node's public key 1:1"));
    /* Signing with key 2 while the list holds only key 1 (a rotation under way): unchecked. */
    assert_int_equal(nsrv_gossip_check_own_key(&l, 1, 2, pk[1], err, sizeof err), 0);
    /* Only peers' keys listed: nothing to check against. */
    assert_int_equal(parse("2@127.0.0.2:9878", key_tok[1], &l, err), 0);
    assert_int_equal(nsrv_gossip_check_own_key(&l, 1, 1, pk[1], err, sizeof err), 0);
    /* Node 1's key 1 twice (the second one node 3's public key under node 1's name). */
    snprintf(keys, sizeof keys, "%s,%s,1:1%s", key_tok[0], key_tok[1], strchr(key_tok[2], ':') + 2);
    assert_int_equal(parse("2@127.0.0.2:9878", keys, &l, err), -EINVAL);
    assert_non_null(strstr(err, "key 1 of node 1 listed twice"));
}

NSRV_TEST_MAIN(setup, NULL, cmocka_unit_test(test_good_lists), cmocka_unit_test(test_rotation_keys),
               cmocka_unit_test(test_bad_lists), cmocka_unit_test(test_own_key_checked))
