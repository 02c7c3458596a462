/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACL signature: Java's own known answer (AclSignerTest: HmacSHA1 of
 * "RocketMQ" with "12345678"), the field order and selection of
 * AclClientRPCHook (sorted keys, Signature left out, the last of a repeated
 * key, the body after the values), and String.compareTo's UTF-16 order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "linked_crypto.h"
#include "nsrv/acl.h"
#include "testlib.h"

#define F(k, v)                                                                                    \
    {                                                                                              \
        {(k), sizeof(k) - 1}, {                                                                    \
            (v), sizeof(v) - 1                                                                     \
        }                                                                                          \
    }

static nsrv_cmd_t cmd_of(nsrv_ext_field_t *ext, size_t n, const char *body) {
    nsrv_cmd_t c;
    memset(&c, 0, sizeof c);
    c.ext = ext;
    c.n_ext = n;
    c.has_ext = n > 0;
    c.body = (const uint8_t *)body;
    c.body_len = body ? strlen(body) : 0;
    return c;
}

static void test_java_known_answer(void **state) {
    (void)state;
    char sig[NSRV_ACL_SIG_B64_LEN + 1];
    /* "Rocket" + body "MQ" is the data "RocketMQ" of Java's AclSignerTest. */
    nsrv_ext_field_t ext[] = {F("x", "Rocket")};
    nsrv_cmd_t c = cmd_of(ext, 1, "MQ");
    assert_int_equal(nsrv_acl_signature(&c, "12345678", sig), 0);
    assert_string_equal(sig, "IUc8rrO/0gDch8CjObLQsW2rsiA=");
    /* All in the values, no body: the same bytes, the same signature. */
    nsrv_ext_field_t ext2[] = {F("x", "RocketMQ")};
    c = cmd_of(ext2, 1, NULL);
    assert_int_equal(nsrv_acl_signature(&c, "12345678", sig), 0);
    assert_string_equal(sig, "IUc8rrO/0gDch8CjObLQsW2rsiA=");
}

static void test_fields_sorted_signature_excluded(void **state) {
    (void)state;
    char sig[NSRV_ACL_SIG_B64_LEN + 1];
    /* Wire order differs from key order; Signature (any value) is not signed;
     * "key" appears twice and its last value counts. Signed bytes:
     * "rocketmq2" "K" "NS" then the body (computed independently in Python). */
    nsrv_ext_field_t ext[] = {F("namespace", "NS"), F("key", "old"), F("Signature", "whatever"),
                              F("AccessKey", "rocketmq2"), F("key", "K")};
    nsrv_cmd_t c = cmd_of(ext, 5, "{\"x\":1}");
    assert_int_equal(nsrv_acl_signature(&c, "12345678", sig), 0);
    assert_string_equal(sig, "MGLkKNYrGCl7nw4+2k0VgQU0ou8=");
    /* Changing any signed byte changes it. */
    ext[4].val.ptr = "L";
    assert_int_equal(nsrv_acl_signature(&c, "12345678", sig), 0);
    assert_string_not_equal(sig, "MGLkKNYrGCl7nw4+2k0VgQU0ou8=");
}

static void test_java_string_order(void **state) {
    (void)state;
    /* Upper case before lower case (AccessKey before key), prefix first. */
    assert_true(nsrv_acl_java_strcmp("AccessKey", 9, "key", 3) < 0);
    assert_true(nsrv_acl_java_strcmp("key", 3, "keys", 4) < 0);
    assert_int_equal(nsrv_acl_java_strcmp("same", 4, "same", 4), 0);
    /* U+1F600 (UTF-16 D83D DE00) sorts before U+FF01 in Java, after it in
     * UTF-8 byte order. */
    const char *emoji = "\xf0\x9f\x98\x80", *fullwidth = "\xef\xbc\x81";
    assert_true(nsrv_acl_java_strcmp(emoji, 4, fullwidth, 3) < 0);
    assert_true(nsrv_acl_java_strcmp(fullwidth, 3, emoji, 4) > 0);
    assert_true(memcmp(emoji, fullwidth, 1) > 0);
}

NSRV_TEST_MAIN(use_linked_crypto, NULL, cmocka_unit_test(test_java_known_answer),
               cmocka_unit_test(test_fields_sorted_signature_excluded),
               cmocka_unit_test(test_java_string_order))
