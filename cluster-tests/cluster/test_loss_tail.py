"""No slow tail for one-sided brokers under datagram loss after restarts (proto/gossip.md §5.3).

The three nodes run on loopback inside a private network namespace whose nftables input chain
drops a share of every UDP datagram (``numgen random mod 100 < N drop``; TCP pulls untouched),
as on a lossy network. One node (3, or 2) is killed with -9 and restarted twice under the
loss, then BROKERS brokers register with node 1 only, one every SPACING_S, and each is timed
from its REGISTER_BROKER reply until nodes 2 and 3 both route it. Asserted: every one within
MAX_S, p99 at most P99_S. Production gossip timing (5 s full digests), so a broker that waits
for the next full round shows as a 2-10 s outlier.

A full run of the three cases takes about 2 minutes. ``NSRV_TAIL_BROKERS`` changes the number of
brokers per case (300 by default); ``NSRV_TAIL_LOG_LEVEL=debug`` keeps the engine's gossip trace
(every datagram sent and accepted, every digest entry not applied and why) in the node logs.
Needs root (``ip netns``, ``nft``); skipped otherwise.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from typing import Dict, Iterator, List

import pytest

from clusterlib import percentile
from rmq import Broker, Connection, DataVersion, NamesrvClient, ResponseCode, TopicConfig

BROKERS = int(os.environ.get("NSRV_TAIL_BROKERS", "300"))
SPACING_S = 0.04
MAX_S = 2.0
P99_S = 1.0
GIVE_UP_S = 12.0  # longer than two full rounds: an outlier is measured, not cut off
CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


def _sh(*args: str, stdin: str = "") -> None:
    r = subprocess.run(list(args), input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")


@contextmanager
def lossy_loopback(percent: int) -> Iterator[None]:
    """Moves this thread (and every process it starts) into a fresh network namespace whose
    loopback drops `percent` % of UDP datagrams on input; back out and deleted on exit."""
    if os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("ip"):
        pytest.skip("needs root, ip and nft (a private network namespace with nftables loss)")
    name = f"nsrvtail{os.getpid()}"
    _sh("ip", "netns", "add", name)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        _sh("ip", "-n", name, "link", "set", "lo", "up")
        _sh("ip", "netns", "exec", name, "nft", "-f", "-", stdin=f"""
table inet tail {{
  chain input {{ type filter hook input priority -10; meta l4proto udp numgen random mod 100 < {percent} drop; }}
}}
""")
        fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
        try:
            _setns(fd)
        finally:
            os.close(fd)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def restart_twice(c, victim: int) -> None:
    """kill -9 and restart under the loss, twice, 2 s apart; the brokers register right after
    (the restarted node is still catching up, as in a rolling restart)."""
    nd = c.node(victim)
    for pause in (0.5, 1.5):
        nd.kill9()
        time.sleep(pause)
        nd.start()
        time.sleep(2.0)


def register_and_time(c, tag: str) -> List[float]:
    """Registers BROKERS brokers with node 1 only, SPACING_S apart, on one connection kept open
    (a closed connection would unregister them); returns each one's seconds from its reply until
    nodes 2 and 3 both route it (GIVE_UP_S for one that never arrived)."""
    conn = Connection("127.0.0.1", c.node(1).port, timeout=5)
    ns = NamesrvClient(conn)
    pending: Dict[int, tuple] = {}  # k -> (topic, name, t_registered, {node ids seen})
    lags: List[float] = []
    nxt = 0
    next_at = time.monotonic()
    try:
        while nxt < BROKERS or pending:
            now = time.monotonic()
            if nxt < BROKERS and now >= next_at:
                name = f"{tag}-{nxt:04d}"
                topic = f"topic-{name}"
                b = Broker(cluster="DefaultCluster", name=name, addr=f"127.0.0.1:{20000 + nxt}")
                # one topic alone is refused before a first full registration (proto/route.md §3 step 7)
                r = ns.register_broker(b, [TopicConfig(topic), TopicConfig(topic + "-b")],
                                       DataVersion(1, 1700000000000 + nxt, 0))
                assert r.code == ResponseCode.SUCCESS, r
                pending[nxt] = (topic, name, time.monotonic(), set())
                nxt += 1
                next_at += SPACING_S
            for k in list(pending):
                topic, name, t0, seen = pending[k]
                for nd in (c.node(2), c.node(3)):
                    if nd.id not in seen and nd.serves(topic, name):
                        seen.add(nd.id)
                if len(seen) == 2 or time.monotonic() - t0 > GIVE_UP_S:
                    lags.append(time.monotonic() - t0 if len(seen) == 2 else GIVE_UP_S)
                    del pending[k]
            time.sleep(0.002)
    finally:
        conn.close()
    return lags


@pytest.mark.budget(240)
@pytest.mark.parametrize("victim,percent", [(3, 30), (2, 30), (3, 10)],
                         ids=["node3-30pct", "node2-30pct", "node3-10pct"])
def test_no_slow_tail_after_restarts(cluster_factory, results, victim, percent):
    with lossy_loopback(percent):
        c = cluster_factory(start=False)
        if os.environ.get("NSRV_TAIL_LOG_LEVEL"):
            for nd in c.nodes:
                nd.config["logLevel"] = os.environ["NSRV_TAIL_LOG_LEVEL"]
        c.start()
        restart_twice(c, victim)
        lags = register_and_time(c, f"v{victim}l{percent}")
        entries: Dict[int, Dict[str, float]] = {}  # per node: digest entries by result (proto/gossip.md §8.3)
        for nd in c.nodes:
            for k, v in nd.metrics().items():
                if k.startswith("nsrvd_gossip_peer_entries_total{") and v:
                    result = k.split('result="', 1)[1].split('"', 1)[0]
                    entries.setdefault(nd.id, {})
                    entries[nd.id][result] = entries[nd.id].get(result, 0) + v
        fig = {
            "victim": victim,
            "loss_pct": percent,
            "brokers": len(lags),
            "p50_s": round(percentile(lags, 50), 3),
            "p99_s": round(percentile(lags, 99), 3),
            "max_s": round(max(lags), 3),
            "over_2s": sum(1 for x in lags if x > MAX_S),
            "slowest_s": [round(x, 3) for x in sorted(lags)[-5:]],
            "entries_by_result": entries,
        }
        results.record(f"loss_tail_node{victim}_{percent}pct", fig)
        assert fig["max_s"] <= MAX_S and fig["p99_s"] <= P99_S, fig
