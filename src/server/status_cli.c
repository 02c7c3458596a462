/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `nsrvd status [-c FILE | HOST:PORT] [--json]`: asks a node's status
 * endpoint and prints its view (node, brokers and where their liveness comes
 * from, gossip peers) as a table, or the raw JSON.
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
#include "nsrv/text.h"

/* The status JSON of a big node is well under this; a cap keeps a bad peer harmless. */
#define STATUS_MAX_REPLY (64u << 20)

static int fetch(const char *host, const char *port, nsrv_buf_t *reply, char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s:%s: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        snprintf(err, errlen, "cannot connect to %s:%s: %s", host, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    const char req[] = "GET /status HTTP/1.0\r\n\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        snprintf(err, errlen, "write: %s", strerror(errno));
        close(fd);
        return -1;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 && reply->len < STATUS_MAX_REPLY)
        nsrv_buf_append(reply, buf, (size_t)n);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "read: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static const char *str_of(const nsrv_json_t *o, const char *key) {
    const char *s = nsrv_json_as_str(nsrv_json_get(o, key), NULL);
    return s ? s : "-";
}

/* A millisecond count of the JSON as a person reads it ("0.4s", "12s", "3m05s"); "-" when
 * absent or null. */
static const char *age_of(const nsrv_json_t *o, const char *key, char *buf, size_t cap) {
    const char *s = nsrv_json_as_str(nsrv_json_get(o, key), NULL);
    char *end = NULL;
    unsigned long long ms = s ? strtoull(s, &end, 10) : 0;
    if (!s || end == s || *end)
        return "-";
    return nsrv_fmt_duration_ms(ms, buf, cap);
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
    fprintf(f, "usage: nsrvd status [-c FILE | HOST:PORT] [--json]\n"
               "  asks a node's status endpoint (statusAddress:statusPort of FILE, default\n"
               "  127.0.0.1:9877) and prints its view of peers and brokers\n");
}

int nsrv_status_cli(int argc, char **argv) {
    const char *target = NULL, *file = NULL;
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (argv[i][0] != '-' && !target)
            target = argv[i];
        else {
            nsrv_status_cli_usage(stderr);
            return 1;
        }
    }
    char host[256] = "127.0.0.1", port[16] = "9877", err[512] = "";
    if (file) {
        nsrv_config_t cfg;
        nsrv_config_init_defaults(&cfg);
        if (nsrv_config_load_file(&cfg, file, err, sizeof err) != 0) {
            fprintf(stderr, "nsrvd status: %s\n", err);
            nsrv_config_free(&cfg);
            return 1;
        }
        if (cfg.status_port == 0) {
            fprintf(stderr, "nsrvd status: statusPort is 0 (off) in %s\n", file);
            nsrv_config_free(&cfg);
            return 1;
        }
        snprintf(host, sizeof host, "%s", cfg.status_address);
        snprintf(port, sizeof port, "%d", cfg.status_port);
        nsrv_config_free(&cfg);
    } else if (target) {
        uint16_t p;
        if (nsrv_hostport_split(target, host, sizeof host, &p) != 0) {
            nsrv_status_cli_usage(stderr);
            return 1;
        }
        snprintf(port, sizeof port, "%u", (unsigned)p);
    }
    nsrv_buf_t reply = NSRV_BUF_INIT;
    if (fetch(host, port, &reply, err, sizeof err) != 0) {
        fprintf(stderr, "nsrvd status: %s\n", err);
        nsrv_buf_deinit(&reply);
        return 1;
    }
    char from[300];
    snprintf(from, sizeof from, "%s:%s", host, port);
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
