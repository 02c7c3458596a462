/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line options of nsrv-brokersim: defaults, a reentrant parser (no
 * getopt state, so the unit tests can call it repeatedly), range checks and
 * the generated broker names and fake addresses. Pure code.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nsrv/log.h"
#include "nsrv/netaddr.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"
#include "bsim_int.h"

/* Java BrokerConfig defaults: listenPort 10911 is the real broker's; we start
 * higher so simulated brokers never look like a real one on the same host. */
#define DEFAULT_ADDR_BASE 20911
/* A forgotten simulator must stop by itself (bounded runs). */
#define DEFAULT_DURATION_MS (600u * 1000u)
/* The longest run we accept: a week. */
#define MAX_DURATION_MS (7ull * 24 * 3600 * 1000)
/* registerBrokerTimeoutMills of a 5.x broker (proto/peers.md §1.2). */
#define DEFAULT_REQ_TIMEOUT_MS 24000
/* Below 10 ms the timers, not the server, would be measured. */
#define MIN_PERIOD_MS 10

void nsrv__bsim_opts_defaults(nsrv_bsim_opts_t *o) {
    memset(o, 0, sizeof(*o));
    o->n_brokers = 1;
    snprintf(o->prefix, sizeof(o->prefix), "broker-");
    snprintf(o->cluster, sizeof(o->cluster), "DefaultCluster");
    o->n_topics = 10;
    o->queues = 8;
    o->sys_topics = true;
    o->period_ms = 30000; /* registerNameServerPeriod (proto/peers.md §1.2) */
    o->heartbeat_code = NSRV_REQ_QUERY_DATA_VERSION;
    o->ser_type = NSRV_SER_JSON;
    snprintf(o->addr_host, sizeof(o->addr_host), "127.0.0.1");
    o->addr_base = DEFAULT_ADDR_BASE;
    o->duration_ms = DEFAULT_DURATION_MS;
    o->req_timeout_ms = DEFAULT_REQ_TIMEOUT_MS;
    o->reconnect_max_ms = 5000;
    o->log_level = NSRV_LOG_NOTICE;
}

bool nsrv__bsim_name_ok(const char *s, size_t len) {
    if (len == 0 || len >= NSRV_BSIM_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '%' || c == '|' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

/* Decimal in [min, max]; no sign, no blanks, no trailing junk. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    uint64_t v;
    if (!s || !nsrv_parse_uint(s, strlen(s), max, &v) || v < min)
        return -EINVAL;
    *out = v;
    return 0;
}

/* An IPv4 literal, as uv_ip4_addr will take it. */
static bool is_ipv4(const char *s) {
    struct in_addr a4;
    return inet_pton(AF_INET, s, &a4) == 1;
}

static int parse_node(nsrv_bsim_opts_t *o, const char *s, size_t len, char *err, size_t err_len) {
    char text[96], host[64];
    uint16_t port;
    snprintf(text, sizeof text, "%.*s", (int)NSRV_MIN(len, sizeof text - 1), s);
    if (len >= sizeof text || nsrv_hostport_split(text, host, sizeof host, &port) != 0)
        return nsrv_fail(err, err_len, -EINVAL, "nameserver '%.*s': want host:port", (int)len, s);
    if (o->n_nodes == NSRV_BSIM_MAX_NODES)
        return nsrv_fail(err, err_len, -EINVAL, "more than %d nameservers", NSRV_BSIM_MAX_NODES);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    else if (!is_ipv4(host))
        return nsrv_fail(err, err_len, -EINVAL, "nameserver '%.*s': host must be an IPv4 address",
                         (int)len, s);
    nsrv_bsim_node_t *n = &o->nodes[o->n_nodes];
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    o->n_nodes++;
    return 0;
}

int nsrv__bsim_opts_parse_nodes(nsrv_bsim_opts_t *o, const char *list, char *err, size_t err_len) {
    o->n_nodes = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ';' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ' ' && *p != '\t' && *p != ';' && *p != ',')
            p++;
        if (p > start) {
            int rc = parse_node(o, start, (size_t)(p - start), err, err_len);
            if (rc < 0)
                return rc;
        }
    }
    if (o->n_nodes == 0)
        return nsrv_fail(err, err_len, -EINVAL, "empty nameserver list");
    return 0;
}

typedef enum {
    OPT_NAMESRV,
    OPT_BROKERS,
    OPT_PREFIX,
    OPT_CLUSTER,
    OPT_TOPICS,
    OPT_SHARED,
    OPT_QUEUES,
    OPT_NO_SYS_TOPICS,
    OPT_SLAVES,
    OPT_PERIOD,
    OPT_HEARTBEAT,
    OPT_HEARTBEAT_CODE,
    OPT_TIMEOUT,
    OPT_COMPRESSED,
    OPT_ACTING_MASTER,
    OPT_SER,
    OPT_ZONE,
    OPT_ADDR_HOST,
    OPT_ADDR_BASE,
    OPT_DURATION,
    OPT_RAMP,
    OPT_REQ_TIMEOUT,
    OPT_RECONNECT_MAX,
    OPT_JSON_STATS,
    OPT_QUIT_ON_EOF,
    OPT_UNREGISTER_ON_EXIT,
    OPT_LOG_LEVEL,
    OPT_HELP,
} opt_id_t;

/* How apply() stores a plain option; the others (CUSTOM) have their own case. */
typedef enum { KIND_CUSTOM, KIND_FLAG, KIND_U32, KIND_U64 } opt_kind_t;

typedef struct {
    const char *long_name;
    char short_name; /* 0 = none */
    bool has_arg;
    opt_id_t id;
    const char *help;
    opt_kind_t kind;
    size_t offset;     /* of the bool / uint32_t / uint64_t field in nsrv_bsim_opts_t */
    uint64_t min, max; /* the integer's range */
} opt_def_t;

/* The tail of a plain option's row: a flag set to true, or an integer in [lo, hi]. */
#define FLAG(field) KIND_FLAG, offsetof(nsrv_bsim_opts_t, field), 0, 0
#define U32(field, lo, hi) KIND_U32, offsetof(nsrv_bsim_opts_t, field), lo, hi
#define U64(field, lo, hi) KIND_U64, offsetof(nsrv_bsim_opts_t, field), lo, hi
#define CUSTOM KIND_CUSTOM, 0, 0, 0

static const opt_def_t OPTS[] = {
    {"namesrv", 'n', true, OPT_NAMESRV, "host:port;host:port  nameservers (required)", CUSTOM},
    {"brokers", 'b', true, OPT_BROKERS, "N  broker groups (masters), default 1",
     U32(n_brokers, 1, NSRV_BSIM_MAX_BROKERS)},
    {"prefix", 'p', true, OPT_PREFIX, "STR  broker name prefix, default 'broker-' (broker-0000..)",
     CUSTOM},
    {"cluster", 'c', true, OPT_CLUSTER, "NAME  cluster name, default DefaultCluster", CUSTOM},
    {"topics", 't', true, OPT_TOPICS, "T  own topics per broker (topic-<broker>-<i>), default 10",
     U32(n_topics, 0, NSRV_BSIM_MAX_TOPICS)},
    {"shared", 's', true, OPT_SHARED, "S  topics every broker hosts (shared-topic-<j>), default 0",
     U32(n_shared, 0, NSRV_BSIM_MAX_TOPICS)},
    {"queues", 'q', true, OPT_QUEUES, "Q  read/write queues of generated topics, default 8",
     U32(queues, 1, 1024)},
    {"no-sys-topics", 0, false, OPT_NO_SYS_TOPICS, "  omit the system topics of a real broker",
     CUSTOM},
    {"slaves", 0, true, OPT_SLAVES, "K  slaves per master (brokerId 1..K), default 0",
     U32(n_slaves, 0, NSRV_BSIM_MAX_SLAVES)},
    {"period", 0, true, OPT_PERIOD, "MS  REGISTER_BROKER period, default 30000",
     U64(period_ms, MIN_PERIOD_MS, MAX_DURATION_MS)},
    {"heartbeat", 0, true, OPT_HEARTBEAT, "MS  light heartbeat period, 0 = off (default)", CUSTOM},
    {"heartbeat-code", 0, true, OPT_HEARTBEAT_CODE,
     "322|904  QUERY_DATA_VERSION (default) or BROKER_HEARTBEAT", CUSTOM},
    {"timeout-ms", 0, true, OPT_TIMEOUT, "MS  heartbeatTimeoutMillis to send, 0 = omit (default)",
     U64(hb_timeout_ms, 0, MAX_DURATION_MS)},
    {"compressed", 0, false, OPT_COMPRESSED, "  zlib body, header compressed=true",
     FLAG(compressed)},
    {"acting-master", 0, false, OPT_ACTING_MASTER, "  send enableActingMaster=true",
     FLAG(acting_master)},
    {"ser", 0, true, OPT_SER, "json|rocketmq  request header serialization, default json", CUSTOM},
    {"zone", 0, true, OPT_ZONE, "NAME  send __ZONE_NAME", CUSTOM},
    {"addr-host", 0, true, OPT_ADDR_HOST,
     "IP  host of the fake broker addresses, default 127.0.0.1", CUSTOM},
    {"addr-base", 0, true, OPT_ADDR_BASE, "PORT  first fake broker port, default 20911",
     U32(addr_base, 1, 65535)},
    {"duration", 'd', true, OPT_DURATION, "S  exit after S seconds, default 600", CUSTOM},
    {"ramp", 0, true, OPT_RAMP, "MS  spread the first registrations over MS, default 0",
     U64(ramp_ms, 0, MAX_DURATION_MS)},
    {"req-timeout-ms", 0, true, OPT_REQ_TIMEOUT, "MS  request timeout, default 24000",
     U64(req_timeout_ms, 1, MAX_DURATION_MS)},
    {"reconnect-max-ms", 0, true, OPT_RECONNECT_MAX, "MS  reconnect backoff cap, default 5000",
     U64(reconnect_max_ms, 1, MAX_DURATION_MS)},
    {"json-stats", 0, false, OPT_JSON_STATS, "  print a JSON stats line at exit", FLAG(json_stats)},
    {"quit-on-eof", 0, false, OPT_QUIT_ON_EOF, "  exit when stdin reaches end of file",
     FLAG(quit_on_eof)},
    {"unregister-on-exit", 0, false, OPT_UNREGISTER_ON_EXIT,
     "  UNREGISTER_BROKER everything before exiting", FLAG(unregister_on_exit)},
    {"log-level", 'v', true, OPT_LOG_LEVEL, "LEVEL  error|warn|notice|info|debug, default notice",
     CUSTOM},
    {"help", 'h', false, OPT_HELP, "  this text", FLAG(help)},
};

void nsrv__bsim_opts_usage(FILE *f) {
    fprintf(f, "usage: nsrv-brokersim -n host:port[;host:port...] [options]\n"
               "Simulates RocketMQ brokers registering with NameServers; stdin takes\n"
               "commands: stop|die|freeze|resume|bump <broker>[/<id>]|all,\n"
               "cut|cut-close|heal <broker>[/<id>]|all <node-index>, stats, list, quit.\n"
               "Every command is answered on stdout with 'ok <command>' or 'err <reason>'.\n\n");
    for (size_t i = 0; i < NSRV_ARRAY_LEN(OPTS); i++) {
        const opt_def_t *d = &OPTS[i];
        if (d->short_name)
            fprintf(f, "  -%c, --%s %s\n", d->short_name, d->long_name, d->help);
        else
            fprintf(f, "      --%s %s\n", d->long_name, d->help);
    }
}

static int set_name(char *dst, size_t dst_len, const char *v, const char *what, char *err,
                    size_t err_len) {
    size_t n = strlen(v);
    if (!nsrv__bsim_name_ok(v, n) || n >= dst_len)
        return nsrv_fail(err, err_len, -EINVAL,
                         "%s '%s': want 1..%zu characters of [A-Za-z0-9_%%|.-]", what, v,
                         dst_len - 1);
    memcpy(dst, v, n + 1);
    return 0;
}

static int apply(nsrv_bsim_opts_t *o, const opt_def_t *d, const char *v, char *err,
                 size_t err_len) {
    uint64_t u = 0;
    int rc = 0;
#define NUM(min, max)                                                                              \
    do {                                                                                           \
        if (parse_u64(v, (min), (max), &u) < 0)                                                    \
            return nsrv_fail(err, err_len, -EINVAL, "--%s '%s': want an integer in [%llu, %llu]",  \
                             d->long_name, v, (unsigned long long)(min),                           \
                             (unsigned long long)(max));                                           \
    } while (0)
    char *field = (char *)o + d->offset;
    switch (d->kind) {
    case KIND_FLAG:
        *(bool *)field = true;
        return 0;
    case KIND_U32:
        NUM(d->min, d->max);
        *(uint32_t *)field = (uint32_t)u;
        return 0;
    case KIND_U64:
        NUM(d->min, d->max);
        *(uint64_t *)field = u;
        return 0;
    case KIND_CUSTOM:
        break;
    }
    switch (d->id) {
    case OPT_NAMESRV:
        rc = nsrv__bsim_opts_parse_nodes(o, v, err, err_len);
        break;
    case OPT_PREFIX:
        if (*v == '\0') {
            o->prefix[0] = '\0'; /* names are then just the 4-digit index */
            break;
        }
        rc = set_name(o->prefix, sizeof(o->prefix), v, "--prefix", err, err_len);
        break;
    case OPT_CLUSTER:
        rc = set_name(o->cluster, sizeof(o->cluster), v, "--cluster", err, err_len);
        break;
    case OPT_NO_SYS_TOPICS:
        o->sys_topics = false;
        break;
    case OPT_HEARTBEAT:
        NUM(0, MAX_DURATION_MS);
        if (u != 0 && u < MIN_PERIOD_MS)
            return nsrv_fail(err, err_len, -EINVAL, "--heartbeat %s: 0 or at least %d", v,
                             MIN_PERIOD_MS);
        o->heartbeat_ms = u;
        break;
    case OPT_HEARTBEAT_CODE:
        NUM(0, 100000);
        if (u != NSRV_REQ_QUERY_DATA_VERSION && u != NSRV_REQ_BROKER_HEARTBEAT)
            return nsrv_fail(err, err_len, -EINVAL, "--heartbeat-code %s: want %d or %d", v,
                             NSRV_REQ_QUERY_DATA_VERSION, NSRV_REQ_BROKER_HEARTBEAT);
        o->heartbeat_code = (int32_t)u;
        break;
    case OPT_SER:
        if (strcmp(v, "json") == 0 || strcmp(v, "JSON") == 0)
            o->ser_type = NSRV_SER_JSON;
        else if (strcmp(v, "rocketmq") == 0 || strcmp(v, "ROCKETMQ") == 0)
            o->ser_type = NSRV_SER_ROCKETMQ;
        else
            return nsrv_fail(err, err_len, -EINVAL, "--ser '%s': want json or rocketmq", v);
        break;
    case OPT_ZONE:
        rc = set_name(o->zone, sizeof(o->zone), v, "--zone", err, err_len);
        break;
    case OPT_ADDR_HOST:
        if (!is_ipv4(v) || strlen(v) >= sizeof(o->addr_host))
            return nsrv_fail(err, err_len, -EINVAL, "--addr-host '%s': want an IPv4 address", v);
        snprintf(o->addr_host, sizeof(o->addr_host), "%s", v);
        break;
    case OPT_DURATION:
        NUM(1, MAX_DURATION_MS / 1000);
        o->duration_ms = u * 1000;
        break;
    case OPT_LOG_LEVEL: {
        int lvl = nsrv_log_level_parse(v);
        if (lvl < 0)
            return nsrv_fail(err, err_len, -EINVAL,
                             "--log-level '%s': want error|warn|notice|info|debug", v);
        o->log_level = lvl;
        break;
    }
    default:
        break; /* the plain options, stored above */
    }
#undef NUM
    return rc;
}

static const opt_def_t *find_long(const char *name, size_t len) {
    for (size_t i = 0; i < NSRV_ARRAY_LEN(OPTS); i++)
        if (strlen(OPTS[i].long_name) == len && memcmp(OPTS[i].long_name, name, len) == 0)
            return &OPTS[i];
    return NULL;
}

static const opt_def_t *find_short(char c) {
    for (size_t i = 0; i < NSRV_ARRAY_LEN(OPTS); i++)
        if (OPTS[i].short_name == c)
            return &OPTS[i];
    return NULL;
}

/* Cross-option checks that single values cannot catch. */
static int validate(const nsrv_bsim_opts_t *o, char *err, size_t err_len) {
    if (o->n_nodes == 0)
        return nsrv_fail(err, err_len, -EINVAL, "-n/--namesrv is required");
    /* Members get consecutive ports, their HA addresses the same count above. */
    uint64_t members = (uint64_t)o->n_brokers * (o->n_slaves + 1);
    if ((uint64_t)o->addr_base + 2 * members - 1 > 65535)
        return nsrv_fail(err, err_len, -EINVAL,
                         "%llu brokers need ports %u..%llu (addresses and HA addresses): lower "
                         "--addr-base or the broker count",
                         (unsigned long long)members, o->addr_base,
                         (unsigned long long)(o->addr_base + 2 * members - 1));
    uint64_t topics = (uint64_t)o->n_topics + o->n_shared;
    if (topics > NSRV_BSIM_MAX_TOPICS)
        return nsrv_fail(err, err_len, -EINVAL, "%llu topics per broker: at most %d",
                         (unsigned long long)topics, NSRV_BSIM_MAX_TOPICS);
    return 0;
}

int nsrv__bsim_opts_parse(nsrv_bsim_opts_t *o, int argc, char *const *argv, char *err,
                          size_t err_len) {
    nsrv__bsim_opts_defaults(o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const opt_def_t *d = NULL;
        const char *val = NULL;
        if (a[0] == '-' && a[1] == '-' && a[2] != '\0') {
            const char *eq = strchr(a + 2, '=');
            size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            d = find_long(a + 2, nlen);
            if (!d)
                return nsrv_fail(err, err_len, -EINVAL, "unknown option '%s'", a);
            if (eq) {
                if (!d->has_arg)
                    return nsrv_fail(err, err_len, -EINVAL, "option '--%s' takes no value",
                                     d->long_name);
                val = eq + 1;
            }
        } else if (a[0] == '-' && a[1] != '\0' && a[2] == '\0') {
            d = find_short(a[1]);
            if (!d)
                return nsrv_fail(err, err_len, -EINVAL, "unknown option '%s'", a);
        } else {
            return nsrv_fail(err, err_len, -EINVAL, "unexpected argument '%s'", a);
        }
        if (d->has_arg && !val) {
            if (i + 1 >= argc)
                return nsrv_fail(err, err_len, -EINVAL, "option '%s' needs a value", a);
            val = argv[++i];
        }
        int rc = apply(o, d, val, err, err_len);
        if (rc < 0)
            return rc;
        if (o->help)
            return 0;
    }
    return validate(o, err, err_len);
}

void nsrv__bsim_opts_group_name(const nsrv_bsim_opts_t *o, uint32_t group, char *out, size_t len) {
    snprintf(out, len, "%s%04u", o->prefix, group);
}

void nsrv__bsim_opts_member_addr(const nsrv_bsim_opts_t *o, uint32_t group, uint32_t id, char *addr,
                                 size_t addr_len, char *ha, size_t ha_len) {
    uint64_t members = (uint64_t)o->n_brokers * (o->n_slaves + 1);
    uint64_t port = o->addr_base + (uint64_t)group * (o->n_slaves + 1) + id;
    snprintf(addr, addr_len, "%s:%llu", o->addr_host, (unsigned long long)port);
    snprintf(ha, ha_len, "%s:%llu", o->addr_host, (unsigned long long)(port + members));
}
