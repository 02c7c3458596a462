/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to the broker simulator (src/tools): the pure parts that the unit
 * tests reach without sockets. Options (bsim_opts.c), topic tables and
 * registration bodies (bsim_topics.c), stdin control commands (bsim_cmd.c),
 * the response stream assembler (bsim_rx.c) and statistics (bsim_stats.c).
 * No libuv here; the event-loop code is brokersim.c and bsim_net.c.
 * Everything here parses operator input (argv, stdin) or server bytes and
 * returns errors instead of asserting.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nsrv/buf.h"
#include "nsrv/common.h"
#include "nsrv/mq_codes.h"
#include "nsrv/route_types.h"

/* ---- options (bsim_opts.c) ------------------------------------------------- */

/* Enough for any test cluster; each node costs one connection per broker. */
#define NSRV_BSIM_MAX_NODES 64
/* Names go on the wire and in stdin commands; RocketMQ names are short. */
#define NSRV_BSIM_NAME_MAX 96
/* Ten thousand groups with two slaves fit the port range comfortably. */
#define NSRV_BSIM_MAX_BROKERS 100000
#define NSRV_BSIM_MAX_SLAVES 8
/* A topic costs about 200 bytes of JSON; 50,000 stays below the 16 MiB frame. */
#define NSRV_BSIM_MAX_TOPICS 50000

typedef struct {
    char host[64]; /* IPv4 literal ("localhost" is rewritten to 127.0.0.1) */
    int port;
} nsrv_bsim_node_t;

typedef struct {
    nsrv_bsim_node_t nodes[NSRV_BSIM_MAX_NODES];
    size_t n_nodes;
    uint32_t n_brokers; /* broker groups, i.e. masters */
    uint32_t n_slaves;  /* slaves per master, brokerId 1..n_slaves */
    char prefix[NSRV_BSIM_NAME_MAX / 2];
    char cluster[NSRV_BSIM_NAME_MAX];
    uint32_t n_topics; /* own topics per group: topic-<broker>-<i> */
    uint32_t n_shared; /* topics every group hosts: shared-topic-<j> */
    uint32_t queues;   /* read = write queue count of generated topics */
    bool sys_topics;   /* add the system topics a real 5.x broker reports */
    uint64_t period_ms;
    uint64_t heartbeat_ms;  /* 0 = no light heartbeats */
    int32_t heartbeat_code; /* NSRV_REQ_QUERY_DATA_VERSION or NSRV_REQ_BROKER_HEARTBEAT */
    uint64_t hb_timeout_ms; /* heartbeatTimeoutMillis ext; 0 = not sent */
    bool compressed;
    bool acting_master;
    uint8_t ser_type;              /* NSRV_SER_JSON or NSRV_SER_ROCKETMQ */
    char zone[NSRV_BSIM_NAME_MAX]; /* __ZONE_NAME; "" = not sent */
    char addr_host[64];
    uint32_t addr_base; /* first fake broker port */
    uint64_t duration_ms;
    uint64_t ramp_ms; /* spread the groups' first registration over this */
    uint64_t req_timeout_ms;
    uint64_t reconnect_max_ms;
    bool json_stats;
    bool quit_on_eof;
    bool unregister_on_exit;
    int log_level;
    bool help;
} nsrv_bsim_opts_t;

void nsrv__bsim_opts_defaults(nsrv_bsim_opts_t *o);

/**
 * Parses argv (argv[0] is skipped) over the defaults. Accepts "--opt value",
 * "--opt=value" and "-x value". Validates ranges and cross-option limits
 * (the fake address range must fit below port 65536).
 * @param o    written (defaults first, then the options) even on error.
 * @param err  receives a one-line reason on error.
 * @return 0, or -EINVAL with err set. "-h/--help" returns 0 with o->help.
 */
int nsrv__bsim_opts_parse(nsrv_bsim_opts_t *o, int argc, char *const *argv, char *err,
                          size_t err_len);

/**
 * Parses "host:port;host:port" (also ',' separated, blanks ignored) into o->nodes.
 * @return 0 or -EINVAL with err set (bad port, empty list, too many nodes).
 */
int nsrv__bsim_opts_parse_nodes(nsrv_bsim_opts_t *o, const char *list, char *err, size_t err_len);

void nsrv__bsim_opts_usage(FILE *f);

/* A name usable on the wire, in stdin commands and in the compressed text
 * form: 1..NSRV_BSIM_NAME_MAX-1 of [A-Za-z0-9_%|.-] (RocketMQ's topic rule
 * plus '.'). */
bool nsrv__bsim_name_ok(const char *s, size_t len);

/* "<prefix><index as %04u>" into out (NUL-terminated, truncated to len). */
void nsrv__bsim_opts_group_name(const nsrv_bsim_opts_t *o, uint32_t group, char *out, size_t len);

/*
 * The fake, unique address of member `id` (0 = master) of group `group`:
 * addr_host:(addr_base + group * (n_slaves + 1) + id), and its haServerAddr
 * one port above the whole range so it never equals another broker's address.
 */
void nsrv__bsim_opts_member_addr(const nsrv_bsim_opts_t *o, uint32_t group, uint32_t id, char *addr,
                                 size_t addr_len, char *ha, size_t ha_len);

/* ---- topic tables and bodies (bsim_topics.c) ------------------------------ */

typedef struct {
    nsrv_topic_config_t *v; /* topic_name strings are owned (nsrv_strdup) */
    size_t n;
    size_t cap;
    uint32_t n_bumps;
} nsrv_bsim_topics_t;

/**
 * Builds the topic table of group `broker_name`: the system topics (when
 * o->sys_topics), o->n_shared shared topics and o->n_topics own topics.
 * @param t  initialized here; release with nsrv__bsim_topics_deinit.
 * @return 0, or -EINVAL if a generated name is not a valid name.
 */
int nsrv__bsim_topics_build(nsrv_bsim_topics_t *t, const nsrv_bsim_opts_t *o,
                            const char *broker_name);
/* Appends one topic (name copied). */
void nsrv__bsim_topics_add(nsrv_bsim_topics_t *t, const char *name, int32_t queues, int32_t perm);
/* Appends "topic-<broker>-bump<k>" with `queues` queues, k counting from 1. */
void nsrv__bsim_topics_bump(nsrv_bsim_topics_t *t, const char *broker_name, int32_t queues);
void nsrv__bsim_topics_deinit(nsrv_bsim_topics_t *t);

/**
 * Appends the RegisterBrokerBody (JSON, or the zlib form when compressed) for
 * topics `t` and DataVersion `dv` as a 5.x broker of request version
 * `version` writes it, with an empty filterServerList.
 * @return 0, or the encoder's negative error (compressed form only).
 */
int nsrv__bsim_topics_encode(const nsrv_bsim_topics_t *t, const nsrv_data_version_t *dv,
                             bool compressed, int32_t version, nsrv_buf_t *out);

/* ---- stdin control commands (bsim_cmd.c) ---------------------------------- */

typedef enum {
    NSRV_BSIM_CMD_NONE, /* blank line or '#' comment: no reply */
    NSRV_BSIM_CMD_STOP,
    NSRV_BSIM_CMD_DIE,
    NSRV_BSIM_CMD_FREEZE,
    NSRV_BSIM_CMD_CUT,
    NSRV_BSIM_CMD_CUT_CLOSE,
    NSRV_BSIM_CMD_HEAL,
    NSRV_BSIM_CMD_RESUME,
    NSRV_BSIM_CMD_BUMP,
    NSRV_BSIM_CMD_STATS,
    NSRV_BSIM_CMD_LIST,
    NSRV_BSIM_CMD_QUIT,
} nsrv_bsim_verb_t;

typedef struct {
    nsrv_bsim_verb_t verb;
    /* Broker group name, or "all"; "" for verbs without a target. */
    char target[NSRV_BSIM_NAME_MAX];
    int32_t member_id; /* "<name>/<id>": one member; -1: every member */
    int32_t node;      /* node index (0-based) for cut/cut-close/heal, else -1 */
} nsrv_bsim_cmd_t;

/**
 * Parses one stdin line (without or with its trailing "\n" / "\r\n"):
 * "<verb> [<broker>[/<id>]|all] [<node-index>]", words separated by blanks.
 * @return 0 (out written) or -EINVAL with a reason in err.
 */
int nsrv__bsim_cmd_parse(const char *line, size_t len, nsrv_bsim_cmd_t *out, char *err,
                         size_t err_len);

/* The canonical text of a parsed command ("cut broker-0001/1 0"), for acks. */
void nsrv__bsim_cmd_format(const nsrv_bsim_cmd_t *cmd, char *out, size_t len);

/* ---- response stream assembly (bsim_rx.c) ---------------------------------- */

/*
 * Splits a TCP byte stream into whole frames. Bytes that do not yet make a
 * frame are kept; nothing is buffered beyond one frame of at most max_frame
 * bytes plus the read that completed it.
 */
typedef struct {
    uint8_t *p;
    size_t len;
    size_t cap;
    size_t max_frame;
} nsrv_bsim_rx_t;

/* Called once per whole frame (length prefix included). A negative return
 * stops the feed, which returns it; the stream must then be reset or dropped. */
typedef int (*nsrv_bsim_frame_fn)(void *ctx, const uint8_t *frame, size_t len);

void nsrv__bsim_rx_init(nsrv_bsim_rx_t *rx, size_t max_frame);
void nsrv__bsim_rx_deinit(nsrv_bsim_rx_t *rx);
/* Drops buffered bytes (a new connection); frees a buffer grown past 64 KiB. */
void nsrv__bsim_rx_reset(nsrv_bsim_rx_t *rx);

/**
 * Feeds `len` new bytes (borrowed; may be the caller's scratch read buffer).
 * @return 0; NSRV_EFRAME when a length prefix is invalid or above max_frame
 *         (drop the connection); or the callback's negative value.
 */
int nsrv__bsim_rx_feed(nsrv_bsim_rx_t *rx, const uint8_t *data, size_t len, nsrv_bsim_frame_fn fn,
                       void *ctx);

/* ---- statistics (bsim_stats.c) --------------------------------------------- */

/*
 * Latency histogram in microseconds, log-linear: values below 64 are exact,
 * above that each power of two is split into 64 buckets, so a reported
 * percentile is within 1/64 (1.6 %) above the true sample. Fixed size, so a
 * week-long run costs no more memory than a second.
 */
#define NSRV_BSIM_HIST_SUB_BITS 6
#define NSRV_BSIM_HIST_SUB (1u << NSRV_BSIM_HIST_SUB_BITS)
#define NSRV_BSIM_HIST_BUCKETS ((64 - NSRV_BSIM_HIST_SUB_BITS + 1) * NSRV_BSIM_HIST_SUB)

typedef struct {
    uint64_t counts[NSRV_BSIM_HIST_BUCKETS];
    uint64_t n;
    uint64_t sum;
    uint64_t max;
} nsrv_bsim_hist_t;

void nsrv__bsim_hist_add(nsrv_bsim_hist_t *h, uint64_t v);
/* The smallest bucket upper bound (capped at max) with at least p*n samples
 * at or below it; 0 when empty. p in [0,1]. */
uint64_t nsrv__bsim_hist_percentile(const nsrv_bsim_hist_t *h, double p);

typedef struct {
    uint64_t reg_sent, reg_ok, reg_err, reg_timeout, reg_lost, reg_skipped;
    uint64_t hb_sent;
    uint64_t unreg_sent, unreg_ok, unreg_failed;
    uint64_t connects, connect_failed, disconnects, rx_errors, rx_unmatched;
    uint64_t bytes_sent;
    /* First round: every (broker, node) link's first registration outcome. */
    uint64_t first_total, first_done, first_ok;
    uint64_t first_round_us; /* valid when first_done == first_total */
    nsrv_bsim_hist_t reg_lat_us;
} nsrv_bsim_stats_t;

/**
 * Appends one JSON object line (no newline) describing s:
 * {"event":..,"elapsed_ms":..,"brokers":..,"nodes":..,"reg_sent":..,"reg_ok":..,
 *  "reg_failed":..,...,"lat_p50_us":..,"lat_p99_us":..,"lat_max_us":..,...}.
 * reg_failed = reg_err + reg_timeout + reg_lost (every registration that was
 * sent and did not get SUCCESS).
 */
void nsrv__bsim_stats_json(const nsrv_bsim_stats_t *s, const char *event, uint64_t elapsed_ms,
                           uint64_t n_brokers, uint64_t n_nodes, nsrv_buf_t *out);
