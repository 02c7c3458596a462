"""Liveness through gossip, 3 nodes on loopback (docs/design/gossip.md).

Brokers here use heartbeatTimeoutMillis = 6 s (``--timeout-ms``), a 2 s registration period and
nodes a 1 s full-digest interval and a 1 s scan: the 120 s / 30 s / 5 s production ratios
shrunk so that each test takes seconds. What is asserted does not depend on the scale: a
broker heard by one node stays routable on all, gossip never keeps a broker past its timeout
after the last direct heartbeat anywhere, an UNREGISTER travels as a tombstone.

"solo" brokers come from a second simulator that talks to node 1 only (``-n`` lists node 1),
so nodes 2 and 3 can know them through gossip and nothing else.
"""

from __future__ import annotations

import time
from typing import Dict, Iterable, List, Tuple

import pytest

from clusterlib import Cluster, Node, poll_until, served_everywhere_after

TIMEOUT_MS = 6000
PERIOD_MS = 2000
SCAN_MS = 1000
INTERVAL_MS = 1000
SHORT = {"gossipIntervalMs": INTERVAL_MS, "scanNotActiveBrokerInterval": SCAN_MS}
# Above timeout + scan: measurement (one status poll) and the loopback one-way delay, ε of
# proto/gossip.md §9.4, which is well under a millisecond here.
SLACK_S = 0.5
POLL_S = 0.1
SOLO_BASE = 30911


def solo_sim(sim_factory, c: Cluster, brokers: int = 1, **kw):
    kw.setdefault("period_ms", PERIOD_MS)
    kw.setdefault("timeout_ms", TIMEOUT_MS)
    kw.setdefault("topics", 5)
    return sim_factory(c.ns_addrs([1]), brokers=brokers, prefix="solo-", addr_base=SOLO_BASE, **kw)


def all_sim(sim_factory, c: Cluster, brokers: int = 3, **kw):
    kw.setdefault("period_ms", PERIOD_MS)
    kw.setdefault("timeout_ms", TIMEOUT_MS)
    kw.setdefault("topics", 3)
    return sim_factory(c.ns_addrs(), brokers=brokers, **kw)


def addr_of(base: int, index: int) -> str:
    return f"127.0.0.1:{base + index}"


def last_direct(node: Node, addr: str) -> float:
    """time.monotonic() of the node's last direct heartbeat from addr (from lastDirectAgeMs)."""
    t = time.monotonic()
    b = node.brokers()[addr]
    assert b["lastDirectAgeMs"] is not None, f"node {node.id} does not hear {addr} directly: {b}"
    return t - b["lastDirectAgeMs"] / 1000.0


class Presence:
    """Polls every node's /status and records, per (node, broker address), the last time it
    was seen and the first time it was missing after that."""

    def __init__(self, c: Cluster, addrs: Iterable[str]) -> None:
        self.c = c
        self.addrs = list(addrs)
        self.last_present: Dict[Tuple[int, str], float] = {}
        self.first_absent: Dict[Tuple[int, str], float] = {}

    def poll(self) -> None:
        for nd in self.c.nodes:
            t_before = time.monotonic()
            live = nd.brokers()
            t_after = time.monotonic()
            for a in self.addrs:
                key = (nd.id, a)
                if key in self.first_absent:
                    continue
                if a in live:
                    self.last_present[key] = t_before
                else:
                    self.first_absent[key] = t_after

    def done(self) -> bool:
        return len(self.first_absent) == len(self.c.nodes) * len(self.addrs)

    def run(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.done() and time.monotonic() < deadline:
            self.poll()
            time.sleep(POLL_S)


# ------------------------------------------------------------------------------ test 2


@pytest.mark.budget(90)
def test_one_node_broker_stays_routable_everywhere(cluster_factory, sim_factory, results):
    """A broker that registers with node 1 only is served by nodes 2 and 3 within about a
    second, and stays routable on every node for 3x its timeout while it heartbeats node 1:
    nodes 2 and 3 do not expire it (a Java NameServer would never have it, or drop it after
    the timeout, apache/rocketmq#4807)."""
    c = cluster_factory(config=SHORT)
    bg = all_sim(sim_factory, c)
    bg.wait_ready()
    t0 = time.monotonic()
    solo = solo_sim(sim_factory, c)
    topic, name, addr = "topic-solo-0000-0", "solo-0000", addr_of(SOLO_BASE, 0)
    seen = served_everywhere_after(c.nodes, topic, name, t0, 10, 0.02)
    solo.wait_ready()
    routable_after = {f"node{i}": round(seen[i], 3) for i in sorted(seen)}
    lag_2_3 = max(seen[2], seen[3]) - seen[1]
    assert lag_2_3 <= 1.5, f"nodes 2/3 serve the broker {lag_2_3:.2f}s after node 1 (want ~1 s)"

    observe = 3 * TIMEOUT_MS / 1000.0
    gaps: List[str] = []
    max_age = {2: 0, 3: 0}
    sources = set()
    checks = 0
    t_end = time.monotonic() + observe
    while time.monotonic() < t_end:
        for nd in c.nodes:
            if not nd.serves(topic, name):
                gaps.append(f"t={time.monotonic() - t0:.2f}s node {nd.id} has no route for {topic}")
        for i in (2, 3):
            b = c.node(i).brokers().get(addr)
            if b is None:
                gaps.append(f"t={time.monotonic() - t0:.2f}s node {i} /status lacks {addr}")
                continue
            sources.add((i, b["source"]))
            max_age[i] = max(max_age[i], b["lastSeenAgeMs"])
        checks += 1
        time.sleep(0.2)
    results.record(
        "one_node_broker_routable",
        {
            "routable_after_s": routable_after,
            "nodes23_lag_behind_node1_s": round(lag_2_3, 3),
            "observed_s": observe,
            "checks": checks,
            "gaps": len(gaps),
            "max_lastSeenAgeMs_on_node2": max_age[2],
            "max_lastSeenAgeMs_on_node3": max_age[3],
            "timeout_ms": TIMEOUT_MS,
            "period_ms": PERIOD_MS,
            "gossipIntervalMs": INTERVAL_MS,
        },
    )
    assert not gaps, "broker not routable everywhere:\n" + "\n".join(gaps[:20])
    assert sources == {(2, "peer:1"), (3, "peer:1")}, f"liveness source on nodes 2/3: {sources}"
    for i in (2, 3):
        assert max_age[i] < TIMEOUT_MS, f"node {i}: lastSeenAgeMs reached {max_age[i]}"


# ------------------------------------------------------------------------------ test 3


@pytest.mark.budget(90)
def test_dying_broker_disappears_everywhere(cluster_factory, sim_factory, results):
    """Freeze (hung broker): every node drops it within timeout + scan of its last heartbeat,
    and the nodes disagree briefly. Die (connection closed): a node with the connection drops
    it at once; nodes that heard it only through gossip drop it by its timeout (not at once:
    gossip never tells a node to drop a broker)."""
    c = cluster_factory(config=SHORT)
    sim = all_sim(sim_factory, c, brokers=4)
    solo = solo_sim(sim_factory, c)
    sim.wait_ready()
    solo.wait_ready()
    frozen, died, solo_addr = addr_of(20911, 0), addr_of(20911, 1), addr_of(SOLO_BASE, 0)
    poll_until(lambda: all(solo_addr in nd.brokers() for nd in c.nodes), 5)
    time.sleep(1.5)  # steady state: a few digest rounds

    sim.freeze("broker-0000")
    sim.freeze("broker-0001")
    solo.freeze("solo-0000")
    last: Dict[Tuple[int, str], float] = {}
    for nd in c.nodes:
        last[(nd.id, frozen)] = last_direct(nd, frozen)
        last[(nd.id, died)] = last_direct(nd, died)
    last[(1, solo_addr)] = last_direct(c.node(1), solo_addr)
    sim.die("broker-0001")
    solo.die("solo-0000")
    t_die = time.monotonic()

    pres = Presence(c, [frozen, died, solo_addr])
    pres.run(TIMEOUT_MS / 1000.0 + 6)
    assert pres.done(), f"not every node dropped every broker: {sorted(pres.first_absent)}"

    timeout = TIMEOUT_MS / 1000.0
    bound = timeout + SCAN_MS / 1000.0 + SLACK_S
    fig: Dict[str, object] = {"timeout_ms": TIMEOUT_MS, "scan_ms": SCAN_MS, "poll_s": POLL_S}
    problems = []

    # Frozen, heard directly by every node.
    last_any = max(last[(i, frozen)] for i in (1, 2, 3))
    drops = {i: pres.first_absent[(i, frozen)] for i in (1, 2, 3)}
    fig["freeze_drop_after_last_hb_s"] = {f"node{i}": round(drops[i] - last_any, 3) for i in drops}
    fig["freeze_disagreement_s"] = round(max(drops.values()) - min(drops.values()), 3)
    for i, d in drops.items():
        if d - last_any > bound + POLL_S:
            problems.append(f"frozen broker: node {i} dropped it {d - last_any:.2f}s after the last heartbeat")
        # Like a Java NameServer, a node keeps a broker for its whole timeout after its own
        # last direct heartbeat (last[] is an under-estimate of it, d an over-estimate of the drop).
        if d - last[(i, frozen)] < timeout - 0.3:
            problems.append(f"frozen broker: node {i} dropped it early ({d - last[(i, frozen)]:.2f}s)")
    if fig["freeze_disagreement_s"] > 2.0:
        problems.append(f"nodes disagree for {fig['freeze_disagreement_s']}s after a freeze")

    # Died, heard directly by every node: the closed connection drops it at once.
    fig["die_direct_drop_after_close_s"] = {
        f"node{i}": round(pres.first_absent[(i, died)] - t_die, 3) for i in (1, 2, 3)
    }
    for i in (1, 2, 3):
        if pres.first_absent[(i, died)] - t_die > 0.5 + POLL_S:
            problems.append(f"died broker: node {i} kept it {pres.first_absent[(i, died)] - t_die:.2f}s")

    # Died, heard directly by node 1 only.
    s_last = last[(1, solo_addr)]
    fig["die_solo_node1_drop_after_close_s"] = round(pres.first_absent[(1, solo_addr)] - t_die, 3)
    fig["die_solo_drop_after_last_hb_s"] = {
        f"node{i}": round(pres.first_absent[(i, solo_addr)] - s_last, 3) for i in (1, 2, 3)
    }
    if pres.first_absent[(1, solo_addr)] - t_die > 0.5 + POLL_S:
        problems.append("solo broker: node 1 did not drop it at the connection close")
    for i in (2, 3):
        d = pres.first_absent[(i, solo_addr)]
        if d - s_last > bound + POLL_S:
            problems.append(f"solo broker: node {i} kept it {d - s_last:.2f}s after its last heartbeat")
        if d - t_die < 1.0:
            problems.append(
                f"solo broker: node {i} dropped it {d - t_die:.2f}s after node 1 lost it: gossip made it drop"
            )
    results.record("dying_broker", fig)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ test 4


@pytest.mark.budget(90)
def test_gossip_never_extends_liveness(cluster_factory, sim_factory, results):
    """Brokers heard by node 1 only, then frozen: nodes 2 and 3 drop each of them no later than
    its timeout (+ one scan + slack) after its last heartbeat at node 1."""
    c = cluster_factory(config=SHORT)
    bg = all_sim(sim_factory, c, brokers=2)
    # Three brokers whose registrations are spread over the period: different last heartbeats.
    solo = solo_sim(sim_factory, c, brokers=3, extra_args=["--ramp", str(PERIOD_MS)])
    bg.wait_ready()
    solo.wait_ready()
    addrs = [addr_of(SOLO_BASE, i) for i in range(3)]
    poll_until(lambda: all(a in c.node(i).brokers() for a in addrs for i in (2, 3)), 5)
    time.sleep(2.5)
    solo.freeze("all")
    last = {a: last_direct(c.node(1), a) for a in addrs}
    pres = Presence(c, addrs)
    pres.run(TIMEOUT_MS / 1000.0 + 6)
    assert pres.done(), f"not dropped everywhere: {sorted(pres.first_absent)}"
    bound = TIMEOUT_MS / 1000.0 + SCAN_MS / 1000.0 + SLACK_S
    excess = {}
    problems = []
    for a in addrs:
        for i in (1, 2, 3):
            d = pres.first_absent[(i, a)] - last[a]
            excess[f"{a}@node{i}"] = round(d - TIMEOUT_MS / 1000.0, 3)
            if d > bound + POLL_S:
                problems.append(f"node {i} kept {a} {d:.2f}s after its last heartbeat at node 1")
    results.record(
        "gossip_never_extends_liveness",
        {"drop_minus_timeout_after_last_hb_s": excess, "bound_s": bound, "poll_s": POLL_S},
    )
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ test 7

# Full digests every 20 s: the first round goes out ~4 s after start, the next one ~20 s
# later. Between the two only deltas and tombstones travel, so whatever reaches nodes 2/3
# within a second in that window was carried by them.
SLOW_FULL = {"gossipIntervalMs": 20000, "scanNotActiveBrokerInterval": SCAN_MS}


def after_first_full_round(c: Cluster) -> None:
    """Waits until every node's first full digest round (interval / 5 after start) is over."""
    first = SLOW_FULL["gossipIntervalMs"] / 5000.0 * 1.1 + 0.3
    for nd in c.nodes:
        left = first - (time.monotonic() - nd.exec_time)
        if left > 0:
            time.sleep(left)


def wait_routable(c: Cluster, ids, topic: str, name: str, want: bool, timeout: float) -> Dict[int, float]:
    """Seconds until each node in ids serves (want=True) or stops serving topic/name."""
    t0 = time.monotonic()
    got: Dict[int, float] = {}

    def check():
        for i in ids:
            if i not in got and c.node(i).serves(topic, name) == want:
                got[i] = time.monotonic() - t0
        return len(got) == len(ids)

    try:
        poll_until(check, timeout, 0.02)
    except TimeoutError:
        pass
    return got


@pytest.mark.budget(60)
def test_unregister_travels_as_tombstone(cluster_factory, sim_factory, results):
    """A broker that sends UNREGISTER_BROKER to node 1 only (it talks to node 1 only) is dropped
    by nodes 2 and 3 within about a second, though its timeout is the default 120 s."""
    c = cluster_factory(config=SLOW_FULL)
    after_first_full_round(c)
    topic, name = "topic-solo-0000-0", "solo-0000"
    solo = sim_factory(c.ns_addrs([1]), brokers=1, topics=5, prefix="solo-", addr_base=SOLO_BASE, period_ms=30000)
    solo.wait_ready()
    up = wait_routable(c, (2, 3), topic, name, True, 5)
    assert set(up) == {2, 3}, "the new broker never reached nodes 2/3"
    before = {i: c.node(i).gossip()["tombstonesApplied"] for i in (2, 3)}
    solo.stop(name)
    gone = wait_routable(c, (1, 2, 3), topic, name, False, 5)
    after = {i: c.node(i).gossip()["tombstonesApplied"] for i in (2, 3)}
    results.record(
        "tombstone",
        {
            "new_broker_routable_on_nodes23_s": {f"node{i}": round(v, 3) for i, v in sorted(up.items())},
            "dropped_after_unregister_s": {f"node{i}": round(v, 3) for i, v in sorted(gone.items())},
            "tombstones_applied": {f"node{i}": after[i] - before[i] for i in (2, 3)},
            "gossipIntervalMs": SLOW_FULL["gossipIntervalMs"],
        },
    )
    for i in (2, 3):
        assert up[i] <= 1.5, f"node {i} served the new broker after {up[i]:.2f}s (a delta should carry it)"
    assert set(gone) == {1, 2, 3}, f"still routable 5 s after the unregister on nodes {set((1, 2, 3)) - set(gone)}"
    for i in (2, 3):
        assert gone[i] <= 1.5, f"node {i} dropped the unregistered broker after {gone[i]:.2f}s (want ~1 s)"
        assert after[i] - before[i] >= 1, f"node {i}: tombstonesApplied did not rise"


@pytest.mark.budget(60)
@pytest.mark.parametrize("how", ["unregister", "eviction"])
def test_returning_broker_is_announced_at_once(cluster_factory, sim_factory, results, how):
    """A broker heard by node 1 only goes away (UNREGISTER, or frozen until node 1 evicts it)
    and comes back with the same DataVersion (a restart without topic changes). Node 1 must
    announce it with a delta (proto/gossip.md §5.3: "a broker seen again after its eviction"),
    so nodes 2/3 route it again within about a second, not at the next full digest; and the
    tombstone of the earlier unregister must not hide it."""
    c = cluster_factory(config=SLOW_FULL)
    after_first_full_round(c)
    topic, name = "topic-solo-0000-0", "solo-0000"
    solo = sim_factory(c.ns_addrs([1]), brokers=1, topics=5, prefix="solo-", addr_base=SOLO_BASE,
                       period_ms=PERIOD_MS, timeout_ms=TIMEOUT_MS)
    solo.wait_ready()
    assert set(wait_routable(c, (2, 3), topic, name, True, 5)) == {2, 3}
    if how == "unregister":
        solo.stop(name)
    else:
        solo.freeze(name)
    gone = wait_routable(c, (1, 2, 3), topic, name, False, TIMEOUT_MS / 1000.0 + 3)
    assert set(gone) == {1, 2, 3}, f"not dropped on {set((1, 2, 3)) - set(gone)}"
    solo.resume(name)
    back = wait_routable(c, (1, 2, 3), topic, name, True, 25)
    results.record(
        f"returning_broker_{how}",
        {"routable_again_s": {f"node{i}": round(v, 3) for i, v in sorted(back.items())},
         "gossipIntervalMs": SLOW_FULL["gossipIntervalMs"]},
    )
    assert set(back) == {1, 2, 3}, f"not routable again within 25 s on {set((1, 2, 3)) - set(back)}"
    for i in (2, 3):
        assert back[i] <= 1.5, (
            f"node {i} routes the returning broker only after {back[i]:.2f}s: no delta announced it, "
            f"it waited for the next full digest"
        )
