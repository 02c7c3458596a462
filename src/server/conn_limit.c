/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How many client connections the process can hold: the descriptor limit
 * (RLIMIT_NOFILE) decides it as much as maxConnections does. A connection past
 * the descriptor limit would not be refused by nsrvd but fail inside accept
 * (libuv then closes such clients silently) and, worse, leave no descriptor for
 * a KV snapshot, a gossip peer or a status probe. So the soft limit is raised
 * to the hard one at start (as the JVM does), a reserve is kept for everything
 * but clients, and the connection limit is the smaller of maxConnections (0:
 * no limit of its own) and what the descriptors allow after the reserve; a
 * client past it gets the clean close and the rate-limited log line of
 * maxConnections (conn_hygiene.c).
 */
#include <inttypes.h>
#include <stdint.h>
#include <sys/resource.h>
#include "nsrv/config.h"
#include "nsrv/log.h"
#include "server_int.h"

/* Descriptors kept for all but client connections: the listeners, status probes
 * (at most 32), gossip peers, data files and their locks, libuv's own, the log.
 * An eighth of the limit, at least 64 and at most 1024: a small limit still
 * leaves room for clients, a large one does not keep more than it needs. */
#define RESERVE_MIN 64
#define RESERVE_MAX 1024

uint64_t nsrv__fd_reserve(uint64_t fd_limit) {
    uint64_t r = fd_limit / 8;
    return r < RESERVE_MIN ? RESERVE_MIN : r > RESERVE_MAX ? RESERVE_MAX : r;
}

uint64_t nsrv__conns_for_fds(uint64_t fd_limit) {
    uint64_t reserve = nsrv__fd_reserve(fd_limit);
    return fd_limit > reserve ? fd_limit - reserve : 1;
}

void nsrv__conn_limit_init(nsrv_server_t *srv) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        srv->fd_limit = 0;
        srv->fd_conn_cap = SIZE_MAX;
        return;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            nsrv_log_notice("SERVER", "descriptor limit raised from %" PRIu64 " to %" PRIu64,
                            (uint64_t)was, (uint64_t)rl.rlim_cur);
        else
            rl.rlim_cur = was;
    }
    if (rl.rlim_cur == RLIM_INFINITY) {
        srv->fd_limit = 0;
        srv->fd_conn_cap = SIZE_MAX;
        return;
    }
    srv->fd_limit = (uint64_t)rl.rlim_cur;
    srv->fd_conn_cap = (size_t)nsrv__conns_for_fds(srv->fd_limit);
    int max = srv->cfg->max_connections;
    if (max > 0 && (uint64_t)max > srv->fd_conn_cap)
        nsrv_log_warn("SERVER",
                      "maxConnections=%d is more than the descriptor limit allows: at most %zu "
                      "connections (RLIMIT_NOFILE %" PRIu64 " less %" PRIu64
                      " reserved); raise LimitNOFILE or ulimit -n",
                      max, srv->fd_conn_cap, srv->fd_limit, nsrv__fd_reserve(srv->fd_limit));
    else if (max > 0)
        nsrv_log_notice("SERVER",
                        "connections: at most %d (maxConnections; RLIMIT_NOFILE %" PRIu64 ")", max,
                        srv->fd_limit);
    else
        nsrv_log_notice("SERVER",
                        "connections: at most %zu (RLIMIT_NOFILE %" PRIu64 " less %" PRIu64
                        " reserved; maxConnections=0)",
                        srv->fd_conn_cap, srv->fd_limit, nsrv__fd_reserve(srv->fd_limit));
}

size_t nsrv__conn_limit(const nsrv_server_t *srv) {
    int max = srv->cfg->max_connections; /* a runtime key: read at every accept */
    if (max > 0 && (size_t)max < srv->fd_conn_cap)
        return (size_t)max;
    return srv->fd_conn_cap;
}
