/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure parts of nsrv-brokersim: option parsing and validation, broker
 * names and fake addresses, topic tables and their bodies (decoded back by
 * the server's own decoder), stdin command parsing, the response stream
 * assembler (byte-at-a-time, many frames per read, oversize prefixes) and
 * the latency histogram and stats JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nsrv/alloc.h"
#include "nsrv/json.h"
#include "nsrv/log.h"
#include "nsrv/register_body.h"
#include "nsrv/remoting.h"
#include "bsim_int.h"
#include "testlib.h"

/* ---- options ---------------------------------------------------------------- */

static int parse(nsrv_bsim_opts_t *o, char *err, size_t err_len, ...) {
    char *argv[64];
    int argc = 0;
    argv[argc++] = "nsrv-brokersim";
    va_list ap;
    va_start(ap, err_len);
    for (char *a = va_arg(ap, char *); a && argc < 63; a = va_arg(ap, char *))
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    err[0] = '\0';
    return nsrv__bsim_opts_parse(o, argc, argv, err, err_len);
}

/* The registration period and the heartbeat: how often, with which request, how patiently. */
static void assert_timing(const nsrv_bsim_opts_t *o, int period_ms, int heartbeat_ms,
                          int heartbeat_code, int hb_timeout_ms) {
    assert_int_equal(o->period_ms, period_ms);
    assert_int_equal(o->heartbeat_ms, heartbeat_ms);
    assert_int_equal(o->heartbeat_code, heartbeat_code);
    assert_int_equal(o->hb_timeout_ms, hb_timeout_ms);
}

static void test_opts_defaults(void **state) {
    (void)state;
    nsrv_bsim_opts_t o;
    char err[256];
    assert_int_equal(parse(&o, err, sizeof(err), "-n", "127.0.0.1:9876", NULL), 0);
    assert_int_equal(o.n_nodes, 1);
    assert_string_equal(o.nodes[0].host, "127.0.0.1");
    assert_int_equal(o.nodes[0].port, 9876);
    assert_int_equal(o.n_brokers, 1);
    assert_int_equal(o.n_slaves, 0);
    assert_string_equal(o.prefix, "broker-");
    assert_string_equal(o.cluster, "DefaultCluster");
    assert_timing(&o, 30000, 0, NSRV_REQ_QUERY_DATA_VERSION, 0);
    assert_false(o.compressed);
    assert_true(o.sys_topics);
    assert_int_equal(o.ser_type, NSRV_SER_JSON);
    /* Bounded by default: a forgotten simulator stops by itself. */
    assert_int_equal(o.duration_ms, 600000);
    assert_int_equal(o.req_timeout_ms, 24000);
    assert_int_equal(o.log_level, NSRV_LOG_NOTICE);
}

static void test_opts_all(void **state) {
    (void)state;
    nsrv_bsim_opts_t o;
    char err[256];
    int rc =
        parse(&o, err, sizeof(err), "--namesrv=127.0.0.1:9876; localhost:9877 ,10.0.0.1:1", "-b",
              "50", "-p", "bk_", "-c", "C1", "-t", "20", "-s", "3", "-q", "4", "--no-sys-topics",
              "--slaves", "2", "--period", "1000", "--heartbeat=500", "--heartbeat-code", "904",
              "--timeout-ms", "3000", "--compressed", "--acting-master", "--ser", "rocketmq",
              "--zone", "z1", "--addr-host", "127.0.0.2", "--addr-base", "40000", "-d", "30",
              "--ramp", "250", "--req-timeout-ms", "500", "--reconnect-max-ms", "800",
              "--json-stats", "--quit-on-eof", "--unregister-on-exit", "-v", "debug", NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(o.n_nodes, 3);
    assert_string_equal(o.nodes[1].host, "127.0.0.1"); /* localhost */
    assert_int_equal(o.nodes[1].port, 9877);
    assert_string_equal(o.nodes[2].host, "10.0.0.1");
    assert_int_equal(o.nodes[2].port, 1);
    assert_int_equal(o.n_brokers, 50);
    assert_string_equal(o.prefix, "bk_");
    assert_string_equal(o.cluster, "C1");
    assert_int_equal(o.n_topics, 20);
    assert_int_equal(o.n_shared, 3);
    assert_int_equal(o.queues, 4);
    assert_false(o.sys_topics);
    assert_int_equal(o.n_slaves, 2);
    assert_timing(&o, 1000, 500, NSRV_REQ_BROKER_HEARTBEAT, 3000);
    assert_true(o.compressed);
    assert_true(o.acting_master);
    assert_int_equal(o.ser_type, NSRV_SER_ROCKETMQ);
    assert_string_equal(o.zone, "z1");
    assert_string_equal(o.addr_host, "127.0.0.2");
    assert_int_equal(o.addr_base, 40000);
    assert_int_equal(o.duration_ms, 30000);
    assert_int_equal(o.ramp_ms, 250);
    assert_int_equal(o.req_timeout_ms, 500);
    assert_int_equal(o.reconnect_max_ms, 800);
    assert_true(o.json_stats);
    assert_true(o.quit_on_eof);
    assert_true(o.unregister_on_exit);
    assert_int_equal(o.log_level, NSRV_LOG_DEBUG);

    /* Reentrant: a second parse starts from the defaults again. */
    assert_int_equal(parse(&o, err, sizeof(err), "-n", "127.0.0.1:1", NULL), 0);
    assert_int_equal(o.n_brokers, 1);
    assert_true(o.sys_topics);

    assert_int_equal(parse(&o, err, sizeof(err), "-h", NULL), 0);
    assert_true(o.help);
}

static void test_opts_errors(void **state) {
    (void)state;
    nsrv_bsim_opts_t o;
    char err[256];
#define BAD(...)                                                                                   \
    do {                                                                                           \
        assert_int_equal(parse(&o, err, sizeof(err), __VA_ARGS__, NULL), -EINVAL);                 \
        assert_true(err[0] != '\0');                                                               \
    } while (0)
    BAD("-b", "5");                                            /* no nameserver */
    BAD("-n", "");                                             /* empty list */
    BAD("-n", ";;");                                           /* still empty */
    BAD("-n", "127.0.0.1");                                    /* no port */
    BAD("-n", "127.0.0.1:0");                                  /* port 0 */
    BAD("-n", "127.0.0.1:65536");                              /* port too big */
    BAD("-n", "127.0.0.1:99x");                                /* junk */
    BAD("-n", "example.com:9876");                             /* not IPv4 */
    BAD("-n", "1.2.3.256:9876");                               /* bad octet */
    BAD("-n", "1.2.3:9876");                                   /* three parts */
    BAD("-n", "127.0.0.1:1", "-b", "0");                       /* no brokers */
    BAD("-n", "127.0.0.1:1", "-b", "-3");                      /* sign */
    BAD("-n", "127.0.0.1:1", "-b", "99999999999999999999999"); /* overflow */
    BAD("-n", "127.0.0.1:1", "-b");                            /* missing value */
    BAD("-n", "127.0.0.1:1", "--bogus");
    BAD("-n", "127.0.0.1:1", "-x");
    BAD("-n", "127.0.0.1:1", "stray");
    BAD("-n", "127.0.0.1:1", "--compressed=yes");
    BAD("-n", "127.0.0.1:1", "--heartbeat-code", "105");
    BAD("-n", "127.0.0.1:1", "--heartbeat", "5"); /* below 10 ms */
    BAD("-n", "127.0.0.1:1", "--period", "0");
    BAD("-n", "127.0.0.1:1", "-q", "0");
    BAD("-n", "127.0.0.1:1", "--ser", "xml");
    BAD("-n", "127.0.0.1:1", "-c", "has space");
    BAD("-n", "127.0.0.1:1", "-c", "");
    BAD("-n", "127.0.0.1:1", "-p", "a/b");
    BAD("-n", "127.0.0.1:1", "--slaves", "9");
    BAD("-n", "127.0.0.1:1", "-d", "0");
    BAD("-n", "127.0.0.1:1", "-v", "loud");
    BAD("-n", "127.0.0.1:1", "--addr-host", "localhost");
    /* 30,000 members need 60,000 ports above 20911. */
    BAD("-n", "127.0.0.1:1", "-b", "10000", "--slaves", "2");
    BAD("-n", "127.0.0.1:1", "-t", "40000", "-s", "20000");
#undef BAD
    /* The largest set that fits: 22312 members from 20911 use up to 65534. */
    assert_int_equal(parse(&o, err, sizeof(err), "-n", "127.0.0.1:1", "-b", "22312", NULL), 0);

    char list[NSRV_BSIM_MAX_NODES * 16 + 32] = "";
    for (int i = 0; i <= NSRV_BSIM_MAX_NODES; i++) {
        char one[24];
        snprintf(one, sizeof(one), "127.0.0.1:%d;", 1000 + i);
        strcat(list, one);
    }
    assert_int_equal(parse(&o, err, sizeof(err), "-n", list, NULL), -EINVAL);
}

static void test_names_and_addresses(void **state) {
    (void)state;
    nsrv_bsim_opts_t o;
    char err[256], name[NSRV_BSIM_NAME_MAX], addr[64], ha[64];
    assert_int_equal(parse(&o, err, sizeof(err), "-n", "127.0.0.1:1", "-b", "3", "--slaves", "2",
                           "--addr-base", "30000", NULL),
                     0);
    nsrv__bsim_opts_group_name(&o, 7, name, sizeof(name));
    assert_string_equal(name, "broker-0007");
    nsrv__bsim_opts_group_name(&o, 12345, name, sizeof(name));
    assert_string_equal(name, "broker-12345");
    /* Group 1, member 2: 30000 + 1 * 3 + 2; HA addresses above all 9 members. */
    nsrv__bsim_opts_member_addr(&o, 1, 2, addr, sizeof(addr), ha, sizeof(ha));
    assert_string_equal(addr, "127.0.0.1:30005");
    assert_string_equal(ha, "127.0.0.1:30014");
    /* Every address and HA address of the run is distinct. */
    char seen[18][64];
    size_t n = 0;
    for (uint32_t g = 0; g < 3; g++)
        for (uint32_t m = 0; m < 3; m++) {
            nsrv__bsim_opts_member_addr(&o, g, m, seen[n], 64, seen[n + 1], 64);
            n += 2;
        }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_string_not_equal(seen[i], seen[j]);

    assert_true(nsrv__bsim_name_ok("a-Z_0%|.", 8));
    assert_false(nsrv__bsim_name_ok("", 0));
    assert_false(nsrv__bsim_name_ok("a b", 3));
    assert_false(nsrv__bsim_name_ok("a\0b", 3));
}

/* ---- topics and bodies ------------------------------------------------------- */

static const nsrv_topic_config_t *find_topic(const nsrv_register_body_t *b, const char *name) {
    for (size_t i = 0; i < b->n_topics; i++)
        if (strcmp(b->topics[i].topic_name, name) == 0)
            return &b->topics[i];
    return NULL;
}

static void check_round_trip(const nsrv_bsim_topics_t *t, bool compressed) {
    nsrv_data_version_t dv = {.counter = 7, .timestamp = 1700000000123, .state_version = 0};
    nsrv_buf_t body = NSRV_BUF_INIT;
    assert_int_equal(nsrv__bsim_topics_encode(t, &dv, compressed, NSRV_MQ_CURRENT, &body), 0);
    if (compressed)
        assert_int_equal((uint8_t)body.data[0], 0x78); /* a zlib stream */
    else
        assert_int_equal(body.data[0], '{');
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 64 * 1024);
    nsrv_register_body_t out;
    char err[200];
    assert_int_equal(nsrv_register_body_decode((const uint8_t *)body.data, body.len,
                                               NSRV_MQ_CURRENT, compressed, &arena, &out, err,
                                               sizeof(err)),
                     0);
    assert_true(nsrv_data_version_eq(&out.data_version, &dv));
    assert_int_equal(out.n_topics, t->n);
    for (size_t i = 0; i < t->n; i++) {
        const nsrv_topic_config_t *got = find_topic(&out, t->v[i].topic_name);
        assert_non_null(got);
        assert_int_equal(got->read_queue_nums, t->v[i].read_queue_nums);
        assert_int_equal(got->write_queue_nums, t->v[i].write_queue_nums);
        assert_int_equal(got->perm, t->v[i].perm);
    }
    assert_true(out.has_filter_servers);
    assert_int_equal(out.n_filter_servers, 0);
    nsrv_arena_deinit(&arena);
    nsrv_buf_deinit(&body);
}

static void test_topics(void **state) {
    (void)state;
    nsrv_bsim_opts_t o;
    char err[256];
    assert_int_equal(parse(&o, err, sizeof(err), "-n", "127.0.0.1:1", "-t", "20", "-s", "3", "-q",
                           "4", "-c", "C1", NULL),
                     0);
    nsrv_bsim_topics_t t;
    assert_int_equal(nsrv__bsim_topics_build(&t, &o, "broker-0005"), 0);
    size_t n_sys = t.n - 23;
    assert_true(n_sys >= 10);
    /* Names: own topics mention the broker, shared ones do not, system ones
     * include the broker's and the cluster's own topics. */
    bool has_own19 = false, has_shared2 = false, has_broker = false, has_cluster = false,
         has_tbw = false;
    for (size_t i = 0; i < t.n; i++) {
        const char *n = t.v[i].topic_name;
        assert_true(nsrv__bsim_name_ok(n, strlen(n)));
        for (size_t j = i + 1; j < t.n; j++)
            assert_string_not_equal(n, t.v[j].topic_name);
        if (strcmp(n, "topic-broker-0005-19") == 0) {
            has_own19 = true;
            assert_int_equal(t.v[i].read_queue_nums, 4);
            assert_int_equal(t.v[i].write_queue_nums, 4);
            assert_int_equal(t.v[i].perm, 6);
        }
        has_shared2 |= strcmp(n, "shared-topic-2") == 0;
        has_broker |= strcmp(n, "broker-0005") == 0;
        has_cluster |= strcmp(n, "C1") == 0;
        has_tbw |= strcmp(n, "TBW102") == 0;
        assert_string_not_equal(n, "topic-broker-0005-20");
        assert_string_not_equal(n, "shared-topic-3");
    }
    assert_true(has_own19 && has_shared2 && has_broker && has_cluster && has_tbw);
    check_round_trip(&t, false);
    check_round_trip(&t, true);

    /* bump adds one fresh topic each time. */
    nsrv__bsim_topics_bump(&t, "broker-0005", 4);
    nsrv__bsim_topics_bump(&t, "broker-0005", 4);
    assert_int_equal(t.n, n_sys + 25);
    assert_string_equal(t.v[t.n - 2].topic_name, "topic-broker-0005-bump1");
    assert_string_equal(t.v[t.n - 1].topic_name, "topic-broker-0005-bump2");
    check_round_trip(&t, false);
    nsrv__bsim_topics_deinit(&t);

    /* Without system topics the table is exactly the generated ones; an empty table still
     * encodes (a broker with no topics). */
    for (int n_topics = 2; n_topics >= 0; n_topics -= 2) {
        char count[8];
        snprintf(count, sizeof count, "%d", n_topics);
        assert_int_equal(
            parse(&o, err, sizeof(err), "-n", "127.0.0.1:1", "-t", count, "--no-sys-topics", NULL),
            0);
        assert_int_equal(nsrv__bsim_topics_build(&t, &o, "b"), 0);
        assert_int_equal(t.n, n_topics);
        for (int i = 0; i < n_topics; i++) {
            char want[32];
            snprintf(want, sizeof want, "topic-b-%d", i);
            assert_string_equal(t.v[i].topic_name, want);
        }
        check_round_trip(&t, n_topics > 0);
        nsrv__bsim_topics_deinit(&t);
    }

    assert_int_equal(nsrv__bsim_topics_build(&t, &o, "bad name"), -EINVAL);
    nsrv__bsim_topics_deinit(&t);
}

/* ---- commands ------------------------------------------------------------------ */

static int cmd(const char *line, nsrv_bsim_cmd_t *c) {
    char err[200];
    return nsrv__bsim_cmd_parse(line, strlen(line), c, err, sizeof(err));
}

static void test_cmd_parse(void **state) {
    (void)state;
    nsrv_bsim_cmd_t c;
    char text[200];

    assert_int_equal(cmd("die broker-0003\n", &c), 0);
    assert_int_equal(c.verb, NSRV_BSIM_CMD_DIE);
    assert_string_equal(c.target, "broker-0003");
    assert_int_equal(c.member_id, -1);
    assert_int_equal(c.node, -1);
    nsrv__bsim_cmd_format(&c, text, sizeof(text));
    assert_string_equal(text, "die broker-0003");

    assert_int_equal(cmd("  cut-close\tbroker-0001/2   1 \r\n", &c), 0);
    assert_int_equal(c.verb, NSRV_BSIM_CMD_CUT_CLOSE);
    assert_string_equal(c.target, "broker-0001");
    assert_int_equal(c.member_id, 2);
    assert_int_equal(c.node, 1);
    nsrv__bsim_cmd_format(&c, text, sizeof(text));
    assert_string_equal(text, "cut-close broker-0001/2 1");

    static const struct {
        const char *line;
        nsrv_bsim_verb_t verb;
    } ok[] = {
        {"stop all", NSRV_BSIM_CMD_STOP},
        {"freeze b", NSRV_BSIM_CMD_FREEZE},
        {"cut b 0", NSRV_BSIM_CMD_CUT},
        {"heal b/0 3", NSRV_BSIM_CMD_HEAL},
        {"resume all", NSRV_BSIM_CMD_RESUME},
        {"bump b", NSRV_BSIM_CMD_BUMP},
        {"stats", NSRV_BSIM_CMD_STATS},
        {"list", NSRV_BSIM_CMD_LIST},
        {"quit", NSRV_BSIM_CMD_QUIT},
        {"", NSRV_BSIM_CMD_NONE},
        {"   \r\n", NSRV_BSIM_CMD_NONE},
        {"# note die x", NSRV_BSIM_CMD_NONE},
        {"#", NSRV_BSIM_CMD_NONE},
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(ok); i++) {
        assert_int_equal(cmd(ok[i].line, &c), 0);
        assert_int_equal(c.verb, ok[i].verb);
        if (c.verb != NSRV_BSIM_CMD_NONE) {
            /* The canonical text parses back to the same command. */
            nsrv_bsim_cmd_t again;
            nsrv__bsim_cmd_format(&c, text, sizeof(text));
            assert_int_equal(cmd(text, &again), 0);
            assert_memory_equal(&again, &c, sizeof(c));
        }
    }

    static const char *bad[] = {
        "explode", "STOP b",        "die",           "die a b",   "stats now",
        "cut b",   "cut b x",       "cut b -1",      "cut b 1 2", "cut b 99999999",
        "die b/",  "die b/x",       "die b/9",       "die /1",    "die all/1",
        "die b c", "die a\tb\tc d", "die bad\"name", "die a/b/c", "heal b 1e3",
    };
    for (size_t i = 0; i < NSRV_ARRAY_LEN(bad); i++) {
        char err[200] = "";
        assert_int_equal(nsrv__bsim_cmd_parse(bad[i], strlen(bad[i]), &c, err, sizeof(err)),
                         -EINVAL);
        assert_true(err[0] != '\0');
    }
    /* Embedded NUL and over-long names. */
    char nul[] = "die a\0b";
    assert_int_equal(nsrv__bsim_cmd_parse(nul, sizeof(nul) - 1, &c, NULL, 0), -EINVAL);
    char longname[300] = "die ";
    memset(longname + 4, 'x', 200);
    longname[204] = '\0';
    assert_int_equal(cmd(longname, &c), -EINVAL);
}

/* ---- stream assembly ------------------------------------------------------------- */

typedef struct {
    int frames;
    int32_t opaques[64];
    int stop_after; /* return -ECANCELED after this many frames; 0 = never */
} sink_t;

static int sink_cb(void *ctx, const uint8_t *frame, size_t len) {
    sink_t *s = ctx;
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 4096);
    nsrv_cmd_t c;
    assert_int_equal(nsrv_cmd_decode(frame, len, &arena, &c), 0);
    s->opaques[s->frames++] = c.opaque;
    nsrv_arena_deinit(&arena);
    if (s->stop_after && s->frames == s->stop_after)
        return -ECANCELED;
    return 0;
}

/* Appends a response frame with `body_len` body bytes. */
static void make_frame(nsrv_buf_t *out, int32_t opaque, size_t body_len) {
    nsrv_cmd_t c;
    memset(&c, 0, sizeof(c));
    c.code = 0;
    c.flag = NSRV_FLAG_RESPONSE;
    c.opaque = opaque;
    c.version = NSRV_MQ_CURRENT;
    uint8_t *body = NULL;
    if (body_len) {
        body = nsrv_malloc(body_len);
        memset(body, 'x', body_len);
    }
    c.body = body;
    c.body_len = body_len;
    assert_int_equal(nsrv_cmd_encode(out, &c), 0);
    nsrv_free(body);
}

static void test_rx(void **state) {
    (void)state;
    nsrv_buf_t stream = NSRV_BUF_INIT;
    const size_t sizes[] = {0, 3, 100, 70000, 1};
    for (int i = 0; i < 5; i++)
        make_frame(&stream, 100 + i, sizes[i]);

    /* All at once: several frames in one read. */
    nsrv_bsim_rx_t rx;
    sink_t s = {0};
    nsrv__bsim_rx_init(&rx, NSRV_FRAME_MAX_DEFAULT);
    assert_int_equal(nsrv__bsim_rx_feed(&rx, (const uint8_t *)stream.data, stream.len, sink_cb, &s),
                     0);
    assert_int_equal(s.frames, 5);
    assert_int_equal(rx.len, 0);
    nsrv__bsim_rx_deinit(&rx);

    /* One byte at a time, and in uneven chunks: same frames, same order. */
    const size_t chunks[] = {1, 2, 3, 7, 64, 4093, 65536};
    for (size_t k = 0; k < NSRV_ARRAY_LEN(chunks); k++) {
        memset(&s, 0, sizeof(s));
        nsrv__bsim_rx_init(&rx, NSRV_FRAME_MAX_DEFAULT);
        for (size_t off = 0; off < stream.len; off += chunks[k]) {
            size_t n = NSRV_MIN(chunks[k], stream.len - off);
            assert_int_equal(
                nsrv__bsim_rx_feed(&rx, (const uint8_t *)stream.data + off, n, sink_cb, &s), 0);
            /* Bounded: never more than one frame plus one read. */
            assert_true(rx.len <= 70000 + 200 + chunks[k]);
        }
        assert_int_equal(s.frames, 5);
        for (int i = 0; i < 5; i++)
            assert_int_equal(s.opaques[i], 100 + i);
        assert_int_equal(rx.len, 0);
        nsrv__bsim_rx_deinit(&rx);
    }

    /* A frame above the cap is refused from its prefix, before buffering it. */
    memset(&s, 0, sizeof(s));
    nsrv__bsim_rx_init(&rx, 1024);
    nsrv_buf_t big = NSRV_BUF_INIT;
    make_frame(&big, 1, 10);
    make_frame(&big, 2, 5000);
    assert_int_equal(nsrv__bsim_rx_feed(&rx, (const uint8_t *)big.data, 200, sink_cb, &s),
                     NSRV_EFRAME);
    assert_int_equal(s.frames, 1);
    nsrv__bsim_rx_deinit(&rx);
    nsrv_buf_deinit(&big);

    /* Negative and too-short length prefixes. */
    static const uint8_t neg[] = {0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0};
    static const uint8_t shortn[] = {0, 0, 0, 2, 0, 0};
    nsrv__bsim_rx_init(&rx, 1024);
    assert_int_equal(nsrv__bsim_rx_feed(&rx, neg, sizeof(neg), sink_cb, &s), NSRV_EFRAME);
    nsrv__bsim_rx_reset(&rx);
    assert_int_equal(nsrv__bsim_rx_feed(&rx, shortn, sizeof(shortn), sink_cb, &s), NSRV_EFRAME);
    nsrv__bsim_rx_deinit(&rx);

    /* A callback can stop the feed (its link closed); the stream is then reset. */
    memset(&s, 0, sizeof(s));
    s.stop_after = 2;
    nsrv__bsim_rx_init(&rx, NSRV_FRAME_MAX_DEFAULT);
    assert_int_equal(nsrv__bsim_rx_feed(&rx, (const uint8_t *)stream.data, stream.len, sink_cb, &s),
                     -ECANCELED);
    assert_int_equal(s.frames, 2);
    nsrv__bsim_rx_reset(&rx);
    assert_int_equal(rx.len, 0);
    nsrv__bsim_rx_deinit(&rx);
    nsrv_buf_deinit(&stream);
}

/* ---- statistics -------------------------------------------------------------------- */

static void test_hist(void **state) {
    (void)state;
    static nsrv_bsim_hist_t h; /* 30 KiB: not on the stack */
    memset(&h, 0, sizeof(h));
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 0.5), 0);
    /* Small values are exact. */
    for (uint64_t v = 1; v <= 50; v++)
        nsrv__bsim_hist_add(&h, v);
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 0.5), 25);
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 0.99), 50);
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 1.0), 50);
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 0.0), 1);
    assert_int_equal(h.max, 50);
    assert_int_equal(h.sum, 50 * 51 / 2);

    /* Large values: within 1/64 above the true sample, never above max. */
    memset(&h, 0, sizeof(h));
    uint64_t x = 12345;
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        nsrv__bsim_hist_add(&h, 100 + (x >> 44)); /* 100 .. ~1e6 */
    }
    uint64_t prev = 0;
    const double ps[] = {0.1, 0.5, 0.9, 0.99, 0.999, 1.0};
    for (size_t i = 0; i < NSRV_ARRAY_LEN(ps); i++) {
        uint64_t v = nsrv__bsim_hist_percentile(&h, ps[i]);
        assert_true(v >= prev);
        assert_true(v <= h.max);
        prev = v;
    }
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 1.0), h.max);
    /* A uniform spread: the median is near the middle of the range. */
    uint64_t mid = 100 + (1ull << 19);
    uint64_t p50 = nsrv__bsim_hist_percentile(&h, 0.5);
    assert_true(p50 > mid - mid / 20 && p50 < mid + mid / 20);

    /* One huge value lands in the last rows without overflow. */
    memset(&h, 0, sizeof(h));
    nsrv__bsim_hist_add(&h, UINT64_MAX);
    nsrv__bsim_hist_add(&h, 1ull << 40);
    assert_int_equal(nsrv__bsim_hist_percentile(&h, 1.0), UINT64_MAX);
    uint64_t p = nsrv__bsim_hist_percentile(&h, 0.5);
    assert_true(p >= (1ull << 40) && p <= (1ull << 40) + (1ull << 34));
}

static void test_stats_json(void **state) {
    (void)state;
    static nsrv_bsim_stats_t s;
    memset(&s, 0, sizeof(s));
    s.reg_sent = 10;
    s.reg_ok = 7;
    s.reg_err = 1;
    s.reg_timeout = 1;
    s.reg_lost = 1;
    s.first_total = 10;
    s.first_done = 9;
    for (uint64_t v = 1; v <= 7; v++)
        nsrv__bsim_hist_add(&s.reg_lat_us, v * 10);
    nsrv_buf_t out = NSRV_BUF_INIT;
    nsrv__bsim_stats_json(&s, "stats", 2000, 5, 2, &out);
    nsrv_arena_t arena;
    nsrv_arena_init(&arena, 8192);
    nsrv_json_t *root;
    char err[100];
    assert_int_equal(nsrv_json_parse(&arena, out.data, out.len, &root, err, sizeof(err)), 0);
    int64_t v;
    assert_string_equal(nsrv_json_as_str(nsrv_json_get(root, "event"), NULL), "stats");
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "reg_failed"), &v) && v == 3);
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "reg_ok"), &v) && v == 7);
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "lat_p50_us"), &v) && v == 40);
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "lat_max_us"), &v) && v == 70);
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "brokers"), &v) && v == 5);
    assert_true(nsrv_json_as_i64(nsrv_json_get(root, "nodes"), &v) && v == 2);
    assert_int_equal(nsrv_json_get(root, "first_round_ms")->type, NSRV_JSON_NULL);
    assert_float_equal(nsrv_json_get(root, "reg_ok_per_s")->dbl, 3.5, 1e-9);

    s.first_done = 10;
    s.first_ok = 9;
    s.first_round_us = 1500;
    nsrv_buf_reset(&out);
    nsrv__bsim_stats_json(&s, "exit", 2000, 5, 2, &out);
    nsrv_arena_reset(&arena);
    assert_int_equal(nsrv_json_parse(&arena, out.data, out.len, &root, err, sizeof(err)), 0);
    assert_float_equal(nsrv_json_get(root, "first_round_ms")->dbl, 1.5, 1e-9);
    assert_float_equal(nsrv_json_get(root, "first_round_ok_per_s")->dbl, 6000.0, 1e-9);
    nsrv_arena_deinit(&arena);
    nsrv_buf_deinit(&out);
}

NSRV_TEST_MAIN(NULL, NULL, cmocka_unit_test(test_opts_defaults), cmocka_unit_test(test_opts_all),
               cmocka_unit_test(test_opts_errors), cmocka_unit_test(test_names_and_addresses),
               cmocka_unit_test(test_topics), cmocka_unit_test(test_cmd_parse),
               cmocka_unit_test(test_rx), cmocka_unit_test(test_hist),
               cmocka_unit_test(test_stats_json))
