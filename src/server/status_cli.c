/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `nsrvd status [HOST:PORT | -c FILE] [--json]`: asks a node's status
 * endpoint and prints its view (node, brokers and where their liveness comes
 * from, gossip peers) as a table, or the raw JSON. Without an address it reads
 * the -c file or the packaged configuration.
 */
#include "nsrv/status_cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "nsrv/alloc.h"
#include "nsrv/arena.h"
#include "nsrv/buf.h"
#include "nsrv/config.h"
#include "nsrv/json.h"
#include "nsrv/netaddr.h"
#include "nsrv/remoting.h"
#include "nsrv/text.h"

/* The status JSON of a big node is well under this; a cap keeps a bad peer harmless. */
#define STATUS_MAX_REPLY (64u << 20)
/* A reply to the remoting probe is a few hundred bytes; more is not a NameServer's. */
#define PROBE_MAX_REPLY (1u << 20)

/* A connected TCP socket to host:port with 5 s send and receive timeouts, trying every
 * address the name has ("localhost" may be ::1 first while the node listens on 127.0.0.1). */
static int dial(const char *host, const char *port, char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s:%s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last = 0;
    for (const struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last = errno;
            continue;
        }
        struct timeval tv = {5, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            last = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        snprintf(err, errlen, "cannot connect to %s:%s: %s", host, port, strerror(last));
    return fd;
}

static bool send_all(int fd, const void *p, size_t len) {
    const char *c = p;
    while (len > 0) {
        ssize_t n = send(fd, c, len, MSG_NOSIGNAL); /* a peer that closed must not kill us */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        c += n;
        len -= (size_t)n;
    }
    return true;
}

/* GET /status. Returns -1 (message in err) only when host:port cannot be reached; whatever
 * came back otherwise, even nothing or a reset, is in reply for the caller to judge, and
 * *silent says the peer neither answered nor closed within the timeout. */
static int fetch(const char *host, const char *port, nsrv_buf_t *reply, bool *silent, char *err,
                 size_t errlen) {
    *silent = false;
    int fd = dial(host, port, err, errlen);
    if (fd < 0)
        return -1;
    const char req[] = "GET /status HTTP/1.0\r\n\r\n";
    if (send_all(fd, req, sizeof req - 1)) {
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0 && reply->len < STATUS_MAX_REPLY)
            nsrv_buf_append(reply, buf, (size_t)n);
        *silent = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && reply->len == 0;
    }
    close(fd);
    return 0;
}

/* True when host:port answers a RocketMQ remoting request (a harmless GET_KV_CONFIG of a
 * key nobody sets, answered by nsrvd and by both Java lines) with a well-formed response:
 * the operator gave the NameServer port where the status listener was meant. */
static bool answers_remoting(const char *host, const char *port) {
    char err[256];
    int fd = dial(host, port, err, sizeof err);
    if (fd < 0)
        return false;
    nsrv_ext_field_t ext[] = {{nsrv_str_c("namespace"), nsrv_str_c("nsrvd-status")},
                              {nsrv_str_c("key"), nsrv_str_c("probe")}};
    nsrv_cmd_t req = {.code = NSRV_REQ_GET_KV_CONFIG,
                      .language = NSRV_LANG_CPP,
                      .version = NSRV_MQ_CURRENT,
                      .opaque = 1,
                      .has_ext = true,
                      .ext = ext,
                      .n_ext = NSRV_ARRAY_LEN(ext),
                      .ser_type = NSRV_SER_JSON};
    nsrv_buf_t out = NSRV_BUF_INIT, in = NSRV_BUF_INIT;
    bool is_ns = false;
    if (nsrv_cmd_encode(&out, &req) == 0 && send_all(fd, out.data, out.len)) {
        char buf[4096];
        ssize_t n;
        size_t frame_len = 0;
        int peek = NSRV_AGAIN;
        while (peek == NSRV_AGAIN && in.len < PROBE_MAX_REPLY &&
               (n = read(fd, buf, sizeof buf)) > 0) {
            nsrv_buf_append(&in, buf, (size_t)n);
            peek = nsrv_frame_peek((const uint8_t *)in.data, in.len, PROBE_MAX_REPLY, &frame_len);
        }
        if (peek == 0) {
            nsrv_arena_t arena;
            nsrv_arena_init(&arena, 4096);
            nsrv_cmd_t resp;
            is_ns = nsrv_cmd_decode((const uint8_t *)in.data, frame_len, &arena, &resp) == 0 &&
                    nsrv_cmd_is_response(&resp) && resp.opaque == 1;
            nsrv_arena_deinit(&arena);
        }
    }
    nsrv_buf_deinit(&out);
    nsrv_buf_deinit(&in);
    close(fd);
    return is_ns;
}

static const char *str_of(const nsrv_json_t *o, const char *key) {
    const char *s = nsrv_json_as_str(nsrv_json_get(o, key), NULL);
    return s ? s : "-";
}

/* A millisecond count of the JSON as a person reads it ("0.4s", "12s", "3m05s"); "-" when
 * absent or null. */
static const char *age_of(const nsrv_json_t *o, const char *key, char *buf, size_t cap) {
    int64_t ms;
    if (!nsrv_json_as_i64(nsrv_json_get(o, key), &ms) || ms < 0)
        return "-"; /* absent, null, not an integer, or negative: nothing to show */
    return nsrv_fmt_duration_ms((uint64_t)ms, buf, cap);
}

/* A node of an earlier version says only "up": true or false. */
static const char *peer_state(const nsrv_json_t *p) {
    const char *st = nsrv_json_as_str(nsrv_json_get(p, "state"), NULL);
    if (st)
        return st;
    return strcmp(str_of(p, "up"), "true") == 0 ? "up" : "silent";
}

static void print_table(FILE *out, const nsrv_json_t *root) {
    char a1[NSRV_DURATION_TEXT_MAX], a2[NSRV_DURATION_TEXT_MAX];
    const nsrv_json_t *node = nsrv_json_get(root, "node");
    fprintf(out, "node      version %s, pid %s, up %s, port %s, %s connection(s)%s\n",
            str_of(node, "version"), str_of(node, "pid"), age_of(node, "uptimeMs", a1, sizeof a1),
            str_of(node, "listenPort"), str_of(node, "connections"),
            strcmp(str_of(node, "shuttingDown"), "true") == 0 ? ", SHUTTING DOWN" : "");
    const nsrv_json_t *gossip = nsrv_json_get(root, "gossip");
    if (gossip && gossip->type == NSRV_JSON_OBJECT) {
        fprintf(out, "gossip    node %s, cluster %s, incarnation %s\n", str_of(gossip, "nodeId"),
                str_of(gossip, "cluster"), str_of(gossip, "incarnation"));
        const nsrv_json_t *peers = nsrv_json_get(gossip, "peers");
        fprintf(out, "%-6s %-10s %-22s %-22s %-14s %-4s %-8s %-10s %s\n", "PEER", "STATE",
                "ADDRESS", "NAMESERVER", "INCARNATION", "KEY", "LAST", "ACCEPTED", "REJECTED");
        for (const nsrv_json_t *p = peers ? peers->child : NULL; p; p = p->next) {
            fprintf(out, "%-6s %-10s %-22s %-22s %-14s %-4s %-8s %-10s ", str_of(p, "id"),
                    peer_state(p), str_of(p, "addr"), str_of(p, "nsAddr"), str_of(p, "incarnation"),
                    str_of(p, "keyId"), age_of(p, "lastValidAgeMs", a1, sizeof a1),
                    str_of(p, "accepted"));
            const nsrv_json_t *rej = nsrv_json_get(p, "rejected");
            bool any = false;
            for (const nsrv_json_t *r = rej ? rej->child : NULL; r; r = r->next) {
                const char *v = nsrv_json_as_str(r, NULL);
                fprintf(out, "%s%.*s=%s", any ? "," : "", (int)r->key_len, r->key, v ? v : "-");
                any = true;
            }
            fprintf(out, "%s\n", any ? "" : "-");
        }
    }
    const nsrv_json_t *brokers = nsrv_json_get(root, "brokers");
    fprintf(out, "%-16s %-20s %-4s %-22s %-10s %-8s %-8s\n", "CLUSTER", "BROKER", "ID", "ADDRESS",
            "SOURCE", "DIRECT", "SEEN");
    for (const nsrv_json_t *b = brokers ? brokers->child : NULL; b; b = b->next) {
        fprintf(out, "%-16s %-20s %-4s %-22s %-10s %-8s %-8s\n", str_of(b, "cluster"),
                str_of(b, "brokerName"), str_of(b, "brokerId"), str_of(b, "brokerAddr"),
                str_of(b, "source"), age_of(b, "lastDirectAgeMs", a1, sizeof a1),
                age_of(b, "lastSeenAgeMs", a2, sizeof a2));
    }
}

void nsrv_status_cli_usage(FILE *f) {
    fputs("usage: nsrvd status [HOST:PORT | -c FILE] [--json]\n"
          "  Asks a running node's status listener (GET /status) and prints its view: the\n"
          "  node, its gossip peers and its brokers with where their liveness comes from.\n"
          "  HOST:PORT   the node's status listener (its statusAddress:statusPort)\n"
          "  -c FILE     read statusAddress and statusPort from the node's configuration\n"
          "  --json      print the /status JSON as it came\n"
          "  With neither, the packaged configuration " NSRV_PACKAGED_CONFIG " is read.\n"
          "  The listener is off until statusPort is set (statusPort=0 by default); the\n"
          "  NameServer port (listenPort) does not answer status requests.\n",
          f);
}

typedef struct {
    char host[256];
    char port[16];
    int status_port; /* from the configuration file, 0 when the address was given */
    const char *file;
} status_target_t;

/* statusAddress:statusPort of a configuration file; 0, or 1 after a message on stderr. */
static int target_from_file(const char *file, status_target_t *t) {
    char err[512] = "";
    nsrv_config_t cfg;
    nsrv_config_init_defaults(&cfg);
    int rc = nsrv_config_load_file(&cfg, file, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "nsrvd status: %s%s\n", err,
                rc == -EACCES ? " (run nsrvd status as root or as a member of the file's group "
                                "(the package's is nsrvd), or give HOST:PORT)"
                              : "");
        nsrv_config_free(&cfg);
        return 1;
    }
    if (cfg.status_port == 0) {
        fprintf(stderr,
                "nsrvd status: %s has no status listener (statusPort=0, the default): set "
                "statusPort (e.g. statusPort=9877; statusAddress is %s) there and restart the "
                "node\n",
                file, cfg.status_address);
        nsrv_config_free(&cfg);
        return 1;
    }
    /* A listener on every address answers on loopback too. */
    const char *a = cfg.status_address;
    if (a[0] == '\0' || strcmp(a, "0.0.0.0") == 0)
        a = "127.0.0.1";
    else if (strcmp(a, "::") == 0 || strcmp(a, "[::]") == 0)
        a = "::1";
    snprintf(t->host, sizeof t->host, "%s", a);
    snprintf(t->port, sizeof t->port, "%d", cfg.status_port);
    t->status_port = cfg.status_port;
    t->file = file;
    nsrv_config_free(&cfg);
    return 0;
}

/* The reply was not HTTP: say what the port is, so that the operator reaches for the right one.
 * A NameServer closes at once on "GET " (a frame length over the limit); only then is the
 * remoting probe worth its wait. */
static void explain_not_http(const status_target_t *t, bool silent) {
    if (!silent && answers_remoting(t->host, t->port)) {
        fprintf(stderr,
                "nsrvd status: %s:%s looks like the NameServer port (it answers RocketMQ "
                "requests, not HTTP); ",
                t->host, t->port);
        if (t->file)
            fprintf(stderr, "the status listener of %s is statusPort=%d\n", t->file,
                    t->status_port);
        else
            fprintf(stderr, "the status listener is the node's statusAddress:statusPort "
                            "(statusPort=0, off, by default)\n");
        return;
    }
    fprintf(stderr,
            "nsrvd status: %s:%s gave no HTTP reply%s; give the node's status listener, its "
            "statusAddress:statusPort\n",
            t->host, t->port, silent ? " within 5 s" : "");
}

int nsrv_status_cli(int argc, char **argv) {
    const char *target = NULL, *file = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            nsrv_status_cli_usage(stdout);
            return 0;
        }
    }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc && !file)
            file = argv[++i];
        else if (argv[i][0] != '-' && !target)
            target = argv[i];
        else {
            nsrv_status_cli_usage(stderr);
            return 1;
        }
    }
    if (target && file) {
        fprintf(stderr, "nsrvd status: give HOST:PORT or -c FILE, not both\n");
        return 1;
    }
    status_target_t t = {.status_port = 0};
    if (target) {
        uint16_t p;
        if (nsrv_hostport_split(target, t.host, sizeof t.host, &p) != 0) {
            fprintf(stderr, "nsrvd status: '%s' is not HOST:PORT\n", target);
            nsrv_status_cli_usage(stderr);
            return 1;
        }
        snprintf(t.port, sizeof t.port, "%u", (unsigned)p);
    } else {
        if (!file && access(NSRV_PACKAGED_CONFIG, F_OK) == 0)
            file = NSRV_PACKAGED_CONFIG;
        if (!file) {
            fprintf(stderr,
                    "nsrvd status: no node given and no " NSRV_PACKAGED_CONFIG ": give the "
                    "node's status listener as HOST:PORT (its statusAddress:statusPort) or its "
                    "configuration as -c FILE; the listener is off until statusPort is set "
                    "(statusPort=0 by default)\n");
            return 1;
        }
        if (target_from_file(file, &t) != 0)
            return 1;
    }
    char err[512] = "";
    nsrv_buf_t reply = NSRV_BUF_INIT;
    bool silent = false;
    if (fetch(t.host, t.port, &reply, &silent, err, sizeof err) != 0) {
        fprintf(stderr, "nsrvd status: %s%s%s%s\n", err, t.file ? " (is the node of " : "",
                t.file ? t.file : "", t.file ? " running?)" : "");
        nsrv_buf_deinit(&reply);
        return 1;
    }
    if (reply.len < 5 || memcmp(reply.data, "HTTP/", 5) != 0) {
        explain_not_http(&t, silent);
        nsrv_buf_deinit(&reply);
        return 1;
    }
    char from[300];
    snprintf(from, sizeof from, "%s:%s", t.host, t.port);
    int rc = nsrv_status_cli_render(reply.data, reply.len, json, stdout, stderr, from);
    nsrv_buf_deinit(&reply);
    return rc;
}

int nsrv_status_cli_render(const char *reply, size_t len, bool json, FILE *out, FILE *errout,
                           const char *from) {
    /* The reply comes from the network: work on a NUL-terminated copy of exactly len bytes. */
    char *text = nsrv_malloc(len + 1);
    if (len)
        memcpy(text, reply, len);
    text[len] = '\0';
    const char *body = strstr(text, "\r\n\r\n");
    if (!body || strncmp(text, "HTTP/1.1 200", 12) != 0) {
        fprintf(errout, "nsrvd status: unexpected reply from %s\n", from);
        nsrv_free(text);
        return 1;
    }
    body += 4;
    int rc = 0;
    if (json) {
        fputs(body, out);
    } else {
        char err[512] = "";
        nsrv_arena_t arena;
        nsrv_arena_init(&arena, 64 * 1024);
        nsrv_json_t *root = NULL;
        if (nsrv_json_parse(&arena, body, strlen(body), &root, err, sizeof err) != 0) {
            fprintf(errout, "nsrvd status: bad JSON from %s: %s\n", from, err);
            rc = 1;
        } else {
            print_table(out, root);
        }
        nsrv_arena_deinit(&arena);
    }
    nsrv_free(text);
    return rc;
}
