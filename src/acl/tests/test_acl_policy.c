/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy: which codes each rule guards (reads never), the order of the
 * checks, the remarks that name the rule, and the start-up errors for an
 * unusable configuration.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "linked_crypto.h"
#include "nsrv/acl.h"
#include "nsrv/config.h"
#include "nsrv/mq_codes.h"
#include "testlib.h"

static const int32_t ADMIN[] = {NSRV_REQ_PUT_KV_CONFIG,
                                NSRV_REQ_DELETE_KV_CONFIG,
                                NSRV_REQ_WIPE_WRITE_PERM_OF_BROKER,
                                NSRV_REQ_DELETE_TOPIC_IN_NAMESRV,
                                NSRV_REQ_REGISTER_TOPIC_IN_NAMESRV,
                                NSRV_REQ_UPDATE_NAMESRV_CONFIG,
                                NSRV_REQ_ADD_WRITE_PERM_OF_BROKER};
static const int32_t BROKER[] = {NSRV_REQ_REGISTER_BROKER, NSRV_REQ_UNREGISTER_BROKER,
                                 NSRV_REQ_BROKER_HEARTBEAT, NSRV_REQ_QUERY_DATA_VERSION};
static const int32_t READS[] = {NSRV_REQ_GET_KV_CONFIG,
                                NSRV_REQ_GET_ROUTEINFO_BY_TOPIC,
                                NSRV_REQ_GET_BROKER_CLUSTER_INFO,
                                NSRV_REQ_GET_KVLIST_BY_NAMESPACE,
                                NSRV_REQ_GET_NAMESRV_CONFIG,
                                NSRV_REQ_GET_BROKER_MEMBER_GROUP,
                                NSRV_REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER};

static nsrv_acl_t *acl_from(const char *props, char *err, size_t cap) {
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(nsrv_config_load_text(&cfg, "test", props, strlen(props), err, cap), 0);
    nsrv_acl_t *acl = nsrv_acl_create(&cfg, err, cap);
    nsrv_config_free(&cfg);
    return acl;
}

static struct sockaddr_in v4(const char *ip) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
    return a;
}

static bool check(nsrv_acl_t *acl, int32_t code, const struct sockaddr_in *from, char *remark) {
    nsrv_cmd_t req;
    memset(&req, 0, sizeof req);
    req.code = code;
    remark[0] = '\0';
    return nsrv_acl_check(acl, &req, (const struct sockaddr *)from, 0, remark, 256);
}

static void test_defaults_are_open(void **state) {
    (void)state;
    char err[256] = "";
    nsrv_acl_t *acl = acl_from("", err, sizeof err);
    assert_non_null(acl);
    assert_true(nsrv_acl_is_open(acl));
    nsrv_acl_destroy(&acl);
    assert_null(acl);
}

static void test_allow_lists_guard_their_codes(void **state) {
    (void)state;
    char err[256] = "", remark[256];
    nsrv_acl_t *acl =
        acl_from("adminAllowList=10.0.0.0/8\nbrokerAllowList=192.168.0.0/16\n", err, sizeof err);
    assert_non_null(acl);
    assert_false(nsrv_acl_is_open(acl));
    struct sockaddr_in admin = v4("10.1.1.1"), broker = v4("192.168.3.4"), other = v4("8.8.8.8");
    for (size_t i = 0; i < sizeof ADMIN / sizeof ADMIN[0]; i++) {
        assert_true(check(acl, ADMIN[i], &admin, remark));
        assert_false(check(acl, ADMIN[i], &broker, remark));
        assert_non_null(strstr(remark, "192.168.3.4"));
        assert_non_null(strstr(remark, "is not in adminAllowList"));
    }
    for (size_t i = 0; i < sizeof BROKER / sizeof BROKER[0]; i++) {
        assert_true(check(acl, BROKER[i], &broker, remark));
        assert_false(check(acl, BROKER[i], &admin, remark));
        assert_non_null(strstr(remark, "is not in brokerAllowList"));
    }
    for (size_t i = 0; i < sizeof READS / sizeof READS[0]; i++)
        assert_true(check(acl, READS[i], &other, remark));
    assert_false(check(acl, NSRV_REQ_PUT_KV_CONFIG, &other, remark));
    assert_string_equal(remark, "PUT_KV_CONFIG refused: 8.8.8.8:0 is not in adminAllowList");
    /* An unknown peer address is in no list. */
    nsrv_cmd_t req;
    memset(&req, 0, sizeof req);
    req.code = NSRV_REQ_REGISTER_BROKER;
    assert_false(nsrv_acl_check(acl, &req, NULL, 0, remark, sizeof remark));
    nsrv_acl_destroy(&acl);
}

static void test_update_switch(void **state) {
    (void)state;
    char err[256] = "", remark[256];
    nsrv_acl_t *acl = acl_from("updateNamesrvConfigEnable=false\n", err, sizeof err);
    assert_non_null(acl);
    assert_false(nsrv_acl_is_open(acl));
    struct sockaddr_in any = v4("127.0.0.1");
    assert_false(check(acl, NSRV_REQ_UPDATE_NAMESRV_CONFIG, &any, remark));
    assert_non_null(strstr(remark, "updateNamesrvConfigEnable=false"));
    assert_true(check(acl, NSRV_REQ_PUT_KV_CONFIG, &any, remark));
    assert_true(check(acl, NSRV_REQ_GET_NAMESRV_CONFIG, &any, remark));
    nsrv_acl_destroy(&acl);
}

static void test_signed_admin_writes(void **state) {
    (void)state;
    nsrv_test_dir_t d;
    assert_int_equal(nsrv_test_dir_make(&d, "acl_policy"), 0);
    char path[160], props[256], err[256] = "", remark[256];
    snprintf(path, sizeof path, "%s", nsrv_test_dir_join(&d, "keys"));
    nsrv_test_write_file(path, "rocketmq2=12345678\n");
    assert_int_equal(chmod(path, 0600), 0);
    snprintf(props, sizeof props, "adminAclEnable=true\nadminAclFile=%s\n", path);
    nsrv_acl_t *acl = acl_from(props, err, sizeof err);
    assert_non_null(acl);
    struct sockaddr_in from = v4("127.0.0.1");
    nsrv_ext_field_t ext[3] = {{{"key", 3}, {"k", 1}}, {{"AccessKey", 9}, {"rocketmq2", 9}}};
    nsrv_cmd_t req;
    memset(&req, 0, sizeof req);
    req.code = NSRV_REQ_PUT_KV_CONFIG;
    req.ext = ext;
    req.n_ext = 2;
    char sig[NSRV_ACL_SIG_B64_LEN + 1];
    assert_int_equal(nsrv_acl_signature(&req, "12345678", sig), 0);
    /* No Signature yet: unsigned. */
    assert_false(
        nsrv_acl_check(acl, &req, (const struct sockaddr *)&from, 0, remark, sizeof remark));
    assert_non_null(strstr(remark, "not signed"));
    ext[2] = (nsrv_ext_field_t){{"Signature", 9}, {sig, NSRV_ACL_SIG_B64_LEN}};
    req.n_ext = 3;
    assert_true(
        nsrv_acl_check(acl, &req, (const struct sockaddr *)&from, 0, remark, sizeof remark));
    /* Brokers and reads need no signature. */
    assert_true(check(acl, NSRV_REQ_REGISTER_BROKER, &from, remark));
    assert_true(check(acl, NSRV_REQ_GET_KV_CONFIG, &from, remark));
    /* A changed value, a wrong key, an unknown AccessKey. */
    ext[0].val.ptr = "K";
    assert_false(
        nsrv_acl_check(acl, &req, (const struct sockaddr *)&from, 0, remark, sizeof remark));
    assert_non_null(strstr(remark, "does not match"));
    assert_null(strstr(remark, "12345678"));
    ext[0].val.ptr = "k";
    ext[1].val = (nsrv_str_t){"intruder", 8};
    assert_false(
        nsrv_acl_check(acl, &req, (const struct sockaddr *)&from, 0, remark, sizeof remark));
    assert_non_null(strstr(remark, "AccessKey is not in adminAclFile"));
    assert_non_null(strstr(remark, "'intruder'"));
    nsrv_acl_destroy(&acl);

    /* Start-up errors: a readable-by-others file, no file, no keys, a bad list. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_null(acl_from(props, err, sizeof err));
    assert_non_null(strstr(err, "mode 0644"));
    assert_null(acl_from("adminAclEnable=true\n", err, sizeof err));
    assert_non_null(strstr(err, "needs adminAclFile"));
    nsrv_test_write_file(path, "# nobody yet\n");
    assert_int_equal(chmod(path, 0600), 0);
    assert_null(acl_from(props, err, sizeof err));
    assert_non_null(strstr(err, "holds no accessKey"));
    assert_null(acl_from("brokerAllowList=10.0.0.0/8,nonsense\n", err, sizeof err));
    assert_non_null(strstr(err, "brokerAllowList: entry 'nonsense'"));
    nsrv_test_dir_remove(&d);
}

NSRV_TEST_MAIN(use_linked_crypto, NULL, cmocka_unit_test(test_defaults_are_open),
               cmocka_unit_test(test_allow_lists_guard_their_codes),
               cmocka_unit_test(test_update_switch), cmocka_unit_test(test_signed_admin_writes))
