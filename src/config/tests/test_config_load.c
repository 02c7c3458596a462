/* SPDX-License-Identifier: Apache-2.0 */
/* Defaults (against the proto/requests.md §2.19 list), loading a -c file, strict validation,
 * unknown keys, rendering, and the example file staying in sync. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/config.h"
#include "nsrv/fileio.h"
#include "config_test.h"
#include "testlib.h"

/* The example file must parse to exactly the defaults. */
#define NSRV_EXAMPLE_CONF NSRV_SOURCE_DIR "/conf/nsrvd.properties.example"

/* proto/requests.md §2.19, verbatim: the Java 5.x default body with
 * user.home=/srv/nsrv-home and ROCKETMQ_HOME=/opt/rocketmq. */
static const char java_default_body[] =
    "bindAddress=0.0.0.0\n"
    "clientRequestThreadPoolNums=8\n"
    "clientRequestThreadPoolQueueCapacity=50000\n"
    "clusterTest=false\n"
    "configBlackList=configBlackList;configStorePath;kvConfigPath\n"
    "configStorePath=/srv/nsrv-home/namesrv/namesrv.properties\n"
    "defaultThreadPoolNums=16\n"
    "defaultThreadPoolQueueCapacity=10000\n"
    "deleteTopicWithBrokerRegistration=false\n"
    "enableAllTopicList=true\n"
    "enableControllerInNamesrv=false\n"
    "enableShutdownGracefully=false\n"
    "enableTopicList=true\n"
    "kvConfigPath=/srv/nsrv-home/namesrv/kvConfig.json\n"
    "listenPort=9876\n"
    "needWaitForService=false\n"
    "notifyMinBrokerIdChanged=false\n"
    "orderMessageEnable=false\n"
    "productEnvName=center\n"
    "returnOrderTopicConfigToBroker=true\n"
    "rocketmqHome=/opt/rocketmq\n"
    "scanNotActiveBrokerInterval=5000\n"
    "serverAsyncSemaphoreValue=64\n"
    "serverCallbackExecutorThreads=0\n"
    "serverChannelMaxIdleTimeSeconds=120\n"
    "serverNettyWorkerGroupEnable=true\n"
    "serverOnewaySemaphoreValue=256\n"
    "serverPooledByteBufAllocatorEnable=true\n"
    "serverSelectorThreads=3\n"
    "serverSocketBacklog=1024\n"
    "serverSocketRcvBufSize=0\n"
    "serverSocketSndBufSize=0\n"
    "serverWorkerThreads=8\n"
    "shutdownWaitTimeSeconds=30\n"
    "supportActingMaster=false\n"
    "unRegisterBrokerQueueCapacity=3000\n"
    "useEpollNativeSelector=false\n"
    "waitSecondsForService=45\n"
    "writeBufferHighWaterMark=0\n"
    "writeBufferLowWaterMark=0\n";

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The Java body with nsrvd's documented differences, sorted by key. */
static char *expected_default_body(bool with_home) {
    char *lines[96];
    size_t n = 0;
    char *copy = nsrv_strdup(java_default_body);
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strcmp(l, "scanNotActiveBrokerInterval=5000") == 0)
            l = "scanNotActiveBrokerInterval=10000"; /* project decision (4.9.x) */
        if (!with_home && strncmp(l, "rocketmqHome=", 13) == 0)
            continue; /* Java omits a null rocketmqHome */
        lines[n++] = l;
    }
    lines[n++] = "logLevel=notice";
    lines[n++] = "maxFrameLength=16777216";
    lines[n++] = "connOutputLimitBytes=4194304";
    lines[n++] = "maxConnections=0";
    lines[n++] = "totalOutputLimitBytes=536870912";
    lines[n++] = "totalInputLimitBytes=536870912";
    lines[n++] = "registerMaxTopics=200000";
    lines[n++] = "registerMaxDecodedBytes=268435456";
    lines[n++] = "bigFrameWorkerBytes=65536";
    static const char *const nsrvd_keys[] = {"statusAddress=127.0.0.1",
                                             "statusPort=0",
                                             "advertisedAddress=",
                                             "gossipPeerAdvertisedAddresses=",
                                             "addressServiceSubgroup=nsaddr",
                                             "gossipEnable=false",
                                             "gossipNodeId=0",
                                             "gossipClusterName=DefaultNsCluster",
                                             "gossipListenAddress=0.0.0.0",
                                             "gossipPort=9878",
                                             "gossipPeers=",
                                             "gossipPeerKeys=",
                                             "gossipSecretKeyFile=",
                                             "gossipKeyId=1",
                                             "gossipIntervalMs=5000",
                                             "gossipDeltaMs=100",
                                             "gossipMaxDatagram=1200",
                                             "gossipStatePath=",
                                             "tls.server.mode=permissive",
                                             "tls.config.file=/etc/rocketmq/tls.properties",
                                             "tls.test.mode.enable=true",
                                             "tls.server.certPath=",
                                             "tls.server.keyPath=",
                                             "tls.server.need.client.auth=none",
                                             "tls.server.authClient=false",
                                             "tls.server.trustCertPath=",
                                             "tlsSessionTicketSeconds=86400"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(nsrvd_keys); i++)
        lines[n++] = (char *)nsrvd_keys[i];
    /* Who may change the cluster (src/acl/): everything open by default. */
    static const char *const acl_keys[] = {
        "adminAllowList=", "brokerAllowList=", "adminAclEnable=false",
        "adminAclFile=", "updateNamesrvConfigEnable=true"};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(acl_keys); i++)
        lines[n++] = (char *)acl_keys[i];
    qsort(lines, n, sizeof lines[0], cmp_str);
    nsrv_buf_t b = NSRV_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        nsrv_buf_append_c(&b, lines[i]);
        nsrv_buf_append_ch(&b, '\n');
    }
    nsrv_free(copy);
    return nsrv_buf_steal(&b, NULL);
}

static nsrv_test_dir_t tmp;

static int setup(void **state) {
    (void)state;
    if (nsrv_test_dir_make(&tmp, "cfg-load") != 0)
        return -1;
    setenv("HOME", "/srv/nsrv-home", 1);
    setenv("ROCKETMQ_HOME", "/opt/rocketmq", 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv_test_dir_remove(&tmp);
    return 0;
}

static char *write_tmp(const char *name, const char *text) {
    nsrv_buf_t p = NSRV_BUF_INIT;
    nsrv_buf_printf(&p, "%s/%s", tmp.path, name);
    assert_int_equal(nsrv_file_write_atomic(p.data, text, strlen(text), false), 0);
    return nsrv_buf_steal(&p, NULL);
}

static void test_defaults_match_java(void **state) {
    (void)state;
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    char *got = ct_render(&cfg);
    char *want = expected_default_body(true);
    assert_string_equal(got, want);
    assert_int_equal(cfg.listen_port, 9876);
    assert_int_equal(cfg.scan_not_active_broker_interval, 10000);
    assert_true(cfg.enable_all_topic_list);
    assert_int_equal(cfg.max_frame_length, 16777216);
    assert_int_equal(cfg.conn_output_limit_bytes, 4194304);
    assert_string_equal(cfg.log_level, "notice");
    assert_string_equal(cfg.kv_config_path, "/srv/nsrv-home/namesrv/kvConfig.json");
    nsrv_free(got);
    nsrv_free(want);
    nsrv_config_free(&cfg);

    /* Without ROCKETMQ_HOME the key is not rendered at all. */
    unsetenv("ROCKETMQ_HOME");
    nsrv_config_init_defaults(&cfg);
    got = ct_render(&cfg);
    want = expected_default_body(false);
    assert_string_equal(got, want);
    assert_string_equal(cfg.rocketmq_home, "");
    nsrv_free(got);
    nsrv_free(want);
    nsrv_config_free(&cfg);
    setenv("ROCKETMQ_HOME", "/opt/rocketmq", 1);
}

static void test_home_paths(void **state) {
    (void)state;
    nsrv_config_t cfg;
    setenv("HOME", "/srv/tester/", 1);
    nsrv_config_init_defaults(&cfg);
    assert_string_equal(cfg.kv_config_path, "/srv/tester/namesrv/kvConfig.json");
    assert_string_equal(cfg.config_store_path, "/srv/tester/namesrv/namesrv.properties");
    nsrv_config_free(&cfg);
    /* No $HOME: the passwd entry. */
    unsetenv("HOME");
    nsrv_config_init_defaults(&cfg);
    const char *suffix = "/namesrv/kvConfig.json";
    size_t n = strlen(cfg.kv_config_path);
    assert_true(n > strlen(suffix));
    assert_string_equal(cfg.kv_config_path + n - strlen(suffix), suffix);
    nsrv_config_free(&cfg);
    setenv("HOME", "/srv/nsrv-home", 1);
}

static void test_key_table(void **state) {
    (void)state;
    /* 40 Java keys (proto/requests.md §2.19) + logLevel, maxFrameLength, connOutputLimitBytes,
     * maxConnections, totalOutputLimitBytes, totalInputLimitBytes, registerMaxTopics,
     * registerMaxDecodedBytes, bigFrameWorkerBytes, 2 status keys, 3 address-service keys, 13
     * gossip keys, 10 TLS keys and 5 access keys. */
    assert_int_equal(nsrv_config_key_count(), 82);
    assert_null(nsrv_config_key_name(82));
    assert_int_equal(nsrv_config_key_flags("tls.server.keyPassword"),
                     NSRV_CONFIG_NOUPDATE | NSRV_CONFIG_SECRET | NSRV_CONFIG_RELOAD_TLS);
    assert_int_equal(nsrv_config_key_flags("adminAllowList"),
                     NSRV_CONFIG_NOUPDATE | NSRV_CONFIG_RELOAD_ACL);
    assert_int_equal(nsrv_config_key_flags("adminAclFile"),
                     NSRV_CONFIG_PATH | NSRV_CONFIG_RELOAD_ACL);
    assert_int_equal(nsrv_config_key_flags("kvConfigPath"), NSRV_CONFIG_PATH);
    assert_int_equal(nsrv_config_key_flags("configBlackList"), NSRV_CONFIG_NOUPDATE);
    assert_int_equal(nsrv_config_key_flags("enableAllTopicList"), NSRV_CONFIG_RUNTIME);
    assert_int_equal(nsrv_config_key_flags("listenPort"), 0);
    assert_int_equal(nsrv_config_key_flags("nope"), -1);
}

static void test_load_file(void **state) {
    (void)state;
    char *path = write_tmp("a.properties", "# operator config\n"
                                           "listenPort = 9877\n"
                                           "enableAllTopicList=FALSE\n"
                                           "productEnvName=  test  \n"
                                           "scanNotActiveBrokerInterval=+2500\n"
                                           "zzUnknown=kept value\n"
                                           "brokerClusterName=x\n"
                                           "kvConfigPath=/data/kv.json\n"
                                           "configStorePath=/elsewhere.properties\n"
                                           "logLevel=DEBUG\n");
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(nsrv_config_load_file(&cfg, path, err, sizeof err), 0);
    assert_int_equal(cfg.listen_port, 9877);
    assert_false(cfg.enable_all_topic_list);
    assert_string_equal(cfg.product_env_name, "test");
    assert_int_equal(cfg.scan_not_active_broker_interval, 2500);
    assert_string_equal(cfg.kv_config_path, "/data/kv.json");
    assert_string_equal(cfg.log_level, "DEBUG");
    /* Java points configStorePath at the -c file, whatever the file says. */
    assert_string_equal(cfg.config_store_path, path);

    const nsrv_props_t *unk = nsrv_config_unknown_keys(&cfg);
    assert_int_equal(unk->count, 2);
    assert_string_equal(unk->items[0].key, "zzUnknown");
    assert_string_equal(unk->items[0].value, "kept value");
    assert_int_equal(unk->items[0].line, 6);
    assert_string_equal(unk->items[1].key, "brokerClusterName");
    nsrv_config_warn_unknown(&cfg);

    char *out = ct_render(&cfg);
    assert_non_null(strstr(out, "\nbrokerClusterName=x\n"));
    assert_non_null(strstr(out, "\nlistenPort=9877\n"));
    /* Sorted: the unknown "zz" key is last. */
    const char *last = "zzUnknown=kept value\n";
    assert_string_equal(out + strlen(out) - strlen(last), last);
    nsrv_free(out);
    nsrv_config_free(&cfg);
    nsrv_free(path);
}

static void expect_bad(const char *line, const char *want_key, const char *want_value) {
    nsrv_buf_t text = NSRV_BUF_INIT;
    nsrv_buf_printf(&text, "productEnvName=changed\n%s\n", line);
    char *path = write_tmp("bad.properties", text.data);
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    int rc = nsrv_config_load_file(&cfg, path, err, sizeof err);
    if (rc != NSRV_ECONFIG)
        fail_msg("'%s': rc %d, expected NSRV_ECONFIG", line, rc);
    char key_q[128], val_q[128];
    snprintf(key_q, sizeof key_q, "'%s'", want_key);
    snprintf(val_q, sizeof val_q, "'%s'", want_value);
    if (!strstr(err, key_q) || !strstr(err, val_q) || !strstr(err, ":2: "))
        fail_msg("'%s': message [%s] lacks key, value or line", line, err);
    /* Nothing applied: the good line before the bad one is not in effect. */
    assert_string_equal(cfg.product_env_name, "center");
    assert_string_equal(cfg.config_store_path, "/srv/nsrv-home/namesrv/namesrv.properties");
    nsrv_config_free(&cfg);
    nsrv_free(path);
    nsrv_buf_deinit(&text);
}

static void test_bad_values(void **state) {
    (void)state;
    expect_bad("listenPort=abc", "listenPort", "abc");
    expect_bad("listenPort=70000", "listenPort", "70000");
    expect_bad("listenPort=-1", "listenPort", "-1");
    expect_bad("listenPort=", "listenPort", "");
    expect_bad("listenPort=9876 ", "listenPort", "9876 ");
    expect_bad("listenPort=0x10", "listenPort", "0x10");
    expect_bad("enableAllTopicList=yes", "enableAllTopicList", "yes");
    expect_bad("enableAllTopicList=1", "enableAllTopicList", "1");
    expect_bad("scanNotActiveBrokerInterval=0", "scanNotActiveBrokerInterval", "0");
    expect_bad("scanNotActiveBrokerInterval=99999999999999999999", "scanNotActiveBrokerInterval",
               "99999999999999999999");
    expect_bad("maxFrameLength=2147483648", "maxFrameLength", "2147483648");
    expect_bad("logLevel=verbose", "logLevel", "verbose");
    expect_bad("tls.server.mode=strict", "tls.server.mode", "strict");
    expect_bad("tls.server.need.client.auth=always", "tls.server.need.client.auth", "always");
    /* A hostile value cannot forge a second line in the message. */
    expect_bad("listenPort=1\\nfake", "listenPort", "1\\nfake");
}

/* The key password is loaded and persisted, but GET_NAMESRV_CONFIG and -p never show it. */
static void test_secret_not_rendered(void **state) {
    (void)state;
    char *path = write_tmp("tls.properties", "tls.server.keyPassword=s3cret\n"
                                             "tls.server.mode=ENFORCING\n");
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(nsrv_config_load_file(&cfg, path, err, sizeof err), 0);
    assert_string_equal(cfg.tls_server_key_password, "s3cret");
    assert_string_equal(cfg.tls_server_mode, "ENFORCING");
    char *shown = ct_render(&cfg);
    assert_null(strstr(shown, "s3cret"));
    assert_non_null(strstr(shown, "\ntls.server.mode=ENFORCING\n"));
    nsrv_buf_t persisted = NSRV_BUF_INIT;
    nsrv_config_render_escaped(&cfg, &persisted);
    assert_non_null(strstr(persisted.data, "tls.server.keyPassword=s3cret"));
    nsrv_buf_deinit(&persisted);
    nsrv_free(shown);
    nsrv_config_free(&cfg);
    nsrv_free(path);
}

static void test_load_errors(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    nsrv_buf_t missing = NSRV_BUF_INIT;
    nsrv_buf_printf(&missing, "%s/missing.properties", tmp.path);
    assert_int_equal(nsrv_config_load_file(&cfg, missing.data, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, missing.data));
    nsrv_buf_deinit(&missing);

    char *path = write_tmp("syntax.properties", "a=1\n\nb=\\u12G4\n");
    assert_int_equal(nsrv_config_load_file(&cfg, path, err, sizeof err), NSRV_EBODY);
    assert_non_null(strstr(err, "line 3"));
    assert_non_null(strstr(err, "Malformed"));
    nsrv_free(path);
    assert_int_equal(cfg.listen_port, 9876);
    nsrv_config_free(&cfg);
}

static void test_limits_accepted(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    const char *text = "listenPort=0\nwaitSecondsForService=-0\nenableTopicList=fAlSe\n"
                       "maxFrameLength=2147483647\nbindAddress=\t127.0.0.1 \n";
    assert_int_equal(nsrv_config_load_text(&cfg, "t", text, strlen(text), err, sizeof err), 0);
    assert_int_equal(cfg.listen_port, 0);
    assert_int_equal(cfg.wait_seconds_for_service, 0);
    assert_false(cfg.enable_topic_list);
    assert_int_equal(cfg.max_frame_length, INT32_MAX);
    assert_string_equal(cfg.bind_address, "127.0.0.1");
    /* load_text does not touch configStorePath. */
    assert_string_equal(cfg.config_store_path, "/srv/nsrv-home/namesrv/namesrv.properties");
    nsrv_config_free(&cfg);
}

/* conf/nsrvd.properties.example documents every key and sets exactly the
 * defaults. */
static void test_example_file(void **state) {
    (void)state;
    nsrv_config_t def, ex;
    char err[256];
    nsrv_config_init_defaults(&def);
    nsrv_config_init_defaults(&ex);
    int rc = nsrv_config_load_file(&ex, NSRV_EXAMPLE_CONF, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(ex.extra.count, 0);
    assert_string_equal(ex.config_store_path, NSRV_EXAMPLE_CONF);
    nsrv_free(ex.config_store_path);
    ex.config_store_path = nsrv_strdup(def.config_store_path);
    char *a = ct_render(&def), *b = ct_render(&ex);
    assert_string_equal(a, b);
    nsrv_free(a);
    nsrv_free(b);

    /* Every key is documented, as "key=" or "#key=" at a line start. */
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(nsrv_file_read_all(NSRV_EXAMPLE_CONF, 1 << 20, &text, &len), 0);
    for (size_t i = 0; i < nsrv_config_key_count(); i++) {
        char p1[128], p2[128];
        snprintf(p1, sizeof p1, "\n%s=", nsrv_config_key_name(i));
        snprintf(p2, sizeof p2, "\n#%s=", nsrv_config_key_name(i));
        if (!strstr(text, p1) && !strstr(text, p2))
            fail_msg("key %s missing from the example file", nsrv_config_key_name(i));
    }
    nsrv_free(text);
    nsrv_config_free(&def);
    nsrv_config_free(&ex);
}

NSRV_TEST_MAIN(setup, teardown, cmocka_unit_test(test_defaults_match_java),
               cmocka_unit_test(test_home_paths), cmocka_unit_test(test_key_table),
               cmocka_unit_test(test_load_file), cmocka_unit_test(test_bad_values),
               cmocka_unit_test(test_load_errors), cmocka_unit_test(test_limits_accepted),
               cmocka_unit_test(test_example_file), cmocka_unit_test(test_secret_not_rendered))
