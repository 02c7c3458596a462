"""The connection limit follows the descriptor limit: nsrvd raises its soft RLIMIT_NOFILE to the
hard one, keeps a reserve for files, peers and probes, and refuses (accepts and closes) a client
past what is left, counted, with a rate-limited log line, while the open connections are served
as before. maxConnections=0 (the default) takes the limit from the descriptors alone; a larger
maxConnections is capped with a warning at start.

Each test starts nsrvd under a small descriptor limit (a shell wrapper's ulimit), so it fits
any host's fd cap and runs in a few seconds."""

import socket
import time
import urllib.request

import pytest

from nsrv_check import assert_code, wait_until
from nsrvd_proc import NsrvdProcess, free_port, scaled
from rmq import Connection, RequestCode

SOFT, HARD = 64, 200
RESERVE = 64  # an eighth of the limit, at least 64: src/server/conn_limit.c
LIMIT = HARD - RESERVE


def metrics(node) -> dict:
    url = f"http://127.0.0.1:{node.status_port}/metrics"
    with urllib.request.urlopen(url, timeout=scaled(5)) as r:
        text = r.read().decode()
    return {k: int(v) for k, v in (line.split(" ", 1) for line in text.splitlines() if line and line[0] != "#")
            if v.strip().isdigit()}


@pytest.fixture
def limited(nsrvd_bin, tmp_path):
    """start(config, soft, hard) -> a node whose descriptor limit is soft:hard at exec."""
    procs = []

    def start(config, soft=SOFT, hard=HARD):
        wrapper = tmp_path / f"limited{len(procs)}.sh"
        wrapper.write_text(f'#!/bin/sh\nulimit -n {hard} && ulimit -Sn {soft} && exec "{nsrvd_bin}" "$@"\n')
        wrapper.chmod(0o755)
        cfg = {"shutdownWaitTimeSeconds": 3, "statusPort": free_port(), "statusAddress": "127.0.0.1", **config}
        p = NsrvdProcess(str(wrapper), tmp_path / f"node{len(procs)}", cfg)
        p.status_port = cfg["statusPort"]
        procs.append(p)
        return p.start()

    yield start
    for p in procs:
        rc = p.terminate(timeout=10)
        assert rc == 0, f"exit code {rc} after SIGTERM\n{p.tail()}"
        assert not p.sanitizer_errors(), p.tail(20000)


def closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def flood(node, first: Connection, n: int) -> list:
    """n more connections, the first connection asked between them: it must never wait."""
    socks, slowest = [], 0.0
    for i in range(n):
        socks.append(socket.create_connection(("127.0.0.1", node.port), timeout=scaled(5)))
        if i % 10 == 0:
            t = time.monotonic()
            assert_code(first.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
            slowest = max(slowest, time.monotonic() - t)
    assert slowest < scaled(1.0), f"an open connection waited {slowest:.3f} s"
    return socks


def test_default_limit_follows_descriptors(limited):
    node = limited({})
    out = node.output()
    assert f"descriptor limit raised from {SOFT} to {HARD}" in out, out
    assert f"connections: at most {LIMIT} (RLIMIT_NOFILE {HARD} less {RESERVE} reserved; maxConnections=0)" in out
    first = Connection("127.0.0.1", node.port, timeout=scaled(5))
    try:
        extra = 40
        socks = flood(node, first, LIMIT - 1 + extra)
        wait_until(lambda: sum(closed_by_server(s) for s in socks) == extra, scaled(5),
                   msg="the connections past the limit were not closed")
        m = metrics(node)
        assert m["nsrvd_connections_limit"] == LIMIT, m
        assert m["nsrvd_connections"] == LIMIT, m
        assert m["nsrvd_connections_refused_total"] == extra, m
        assert m["nsrvd_accept_failures_total"] == 0, m
        # One line for the burst (at most one every 10 s), with the count and the reason.
        lines = [ln for ln in node.output().splitlines() if "reached" in ln]
        assert len(lines) == 1, lines
        assert f"connection limit {LIMIT} reached (RLIMIT_NOFILE {HARD} less {RESERVE} reserved)" in lines[0]
        # A slot freed is usable again, and the open ones are served.
        for s in socks[:5]:
            s.close()
        wait_until(lambda: metrics(node)["nsrvd_connections"] == LIMIT - 5, scaled(3), msg="closes not seen")
        late = Connection("127.0.0.1", node.port, timeout=scaled(5))
        assert_code(late.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
        late.close()
        for s in socks:
            s.close()
    finally:
        first.close()


def test_max_connections_above_descriptors_is_capped(limited):
    node = limited({"maxConnections": 100000}, soft=HARD, hard=HARD)
    assert (f"maxConnections=100000 is more than the descriptor limit allows: at most {LIMIT} connections "
            f"(RLIMIT_NOFILE {HARD} less {RESERVE} reserved)") in node.output()
    assert metrics(node)["nsrvd_connections_limit"] == LIMIT
    first = Connection("127.0.0.1", node.port, timeout=scaled(5))
    try:
        socks = flood(node, first, LIMIT + 9)
        wait_until(lambda: sum(closed_by_server(s) for s in socks) == 10, scaled(5),
                   msg="the connections past the limit were not closed")
        assert metrics(node)["nsrvd_accept_failures_total"] == 0
        for s in socks:
            s.close()
    finally:
        first.close()


def test_max_connections_below_descriptors_rules(limited):
    node = limited({"maxConnections": 20})
    assert f"connections: at most 20 (maxConnections; RLIMIT_NOFILE {HARD})" in node.output()
    assert metrics(node)["nsrvd_connections_limit"] == 20


def test_idle_sweep_visits_only_connections_that_need_it(limited):
    """Many connections cost the once-a-second sweep nothing while they are read within the
    idle time and have nothing queued: its work follows the connections that may be idle or
    are draining replies, not all of them (100,000 mostly idle clients must not stall the
    loop every second). A connection left silent past the idle time is visited and closed."""
    node = limited({"serverChannelMaxIdleTimeSeconds": 3}, soft=HARD, hard=HARD)
    conns = [Connection("127.0.0.1", node.port, timeout=scaled(5)) for _ in range(100)]
    try:
        before = metrics(node)["nsrvd_idle_sweep_visits_total"]
        deadline = time.monotonic() + 2.5  # under the idle time: each is read every half second
        while time.monotonic() < deadline:
            for c in conns:
                assert_code(c.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
            time.sleep(0.5)
        visits = metrics(node)["nsrvd_idle_sweep_visits_total"] - before
        assert visits < 10, f"the sweep visited {visits} connections read within the idle time"
        # Silent from now on: each is visited once it was not read for the idle time, and closed.
        wait_until(lambda: metrics(node)["nsrvd_connections"] == 0, scaled(8), msg="idle connections stayed")
        assert metrics(node)["nsrvd_idle_sweep_visits_total"] - before >= 100
    finally:
        for c in conns:
            c.close()
