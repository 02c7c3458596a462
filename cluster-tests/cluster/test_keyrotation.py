"""Key rotation without downtime (proto/gossip.md §10), on a live 3-node cluster.

Node 1 rotates from key 1 to key 2: the new token goes to nodes 2 and 3 (SIGHUP), node 1
switches to the new key file and gossipKeyId=2 (SIGHUP), then the old token is removed from
nodes 2 and 3 (SIGHUP). Two brokers register with node 1 only, so nodes 2 and 3 route them
only while they accept node 1's digests: a watcher checks their routes every 200 ms through
the whole procedure. Afterwards a datagram signed with the retired key is refused as
``key_id``.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List

import pytest

import gossipwire as gw
from clusterlib import Cluster, keygen, poll_until, send_udp

SHORT = {"gossipIntervalMs": 1000, "scanNotActiveBrokerInterval": 1000}
TIMEOUT_MS = 6000


class RouteWatcher(threading.Thread):
    def __init__(self, c: Cluster, ids, routes) -> None:
        super().__init__(daemon=True)
        self.c, self.ids, self.routes = c, ids, routes
        self.stop_evt = threading.Event()
        self.gaps: List[str] = []
        self.checks = 0
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop_evt.is_set():
            for i in self.ids:
                for topic, name in self.routes:
                    try:
                        ok = self.c.node(i).serves(topic, name)
                    except Exception as e:  # a refused connection is a gap too
                        ok = False
                        self.gaps.append(f"t={time.monotonic() - self.t0:.2f}s node {i}: {e!r}")
                    if not ok:
                        self.gaps.append(f"t={time.monotonic() - self.t0:.2f}s node {i} has no route for {topic}")
            self.checks += 1
            self.stop_evt.wait(0.2)


def peer1(c: Cluster, i: int) -> Dict:
    return c.node(i).peer(1)


@pytest.mark.budget(90)
def test_key_rotation_without_downtime(cluster_factory, sim_factory, results):
    c = cluster_factory(config=SHORT)
    n1 = c.node(1)
    solo = sim_factory(c.ns_addrs([1]), brokers=2, topics=3, prefix="solo-", addr_base=30911,
                       period_ms=2000, timeout_ms=TIMEOUT_MS)
    solo.wait_ready()
    routes = [("topic-solo-0000-0", "solo-0000"), ("topic-solo-0001-0", "solo-0001")]
    poll_until(lambda: all(c.node(i).serves(t, n) for i in (2, 3) for t, n in routes), 5)
    w = RouteWatcher(c, (1, 2, 3), routes)
    w.start()
    steps: Dict[str, float] = {}
    t0 = time.monotonic()
    old_token = c.tokens[1]
    new_key = n1.workdir / "node1-key2.key"
    new_token = keygen(c.binary, new_key, 1, 2)
    assert new_token.startswith("1:2:")
    acc0 = {i: peer1(c, i)["accepted"] for i in (2, 3)}

    # 1-2. Every peer learns the new key next to the old one.
    both = ",".join([c.tokens[j] for j in sorted(c.tokens)] + [new_token])
    for i in (2, 3):
        c.node(i).sighup({"gossipPeerKeys": both})
    time.sleep(2.5)
    for i in (2, 3):
        p = peer1(c, i)
        assert p["keyId"] == 1 and not p["rejected"], f"node {i} after adding the key: {p}"
        assert p["accepted"] > acc0[i], f"node {i}: no datagram from node 1 accepted after its reload"
    steps["peers_know_both_keys_s"] = round(time.monotonic() - t0, 2)

    # 3. Node 1 signs with the new key.
    n1.sighup({"gossipSecretKeyFile": str(new_key), "gossipKeyId": 2})
    t_switch = time.monotonic()
    seen_new: Dict[int, float] = {}

    def switched():
        for i in (2, 3):
            if i not in seen_new and peer1(c, i)["keyId"] == 2:
                seen_new[i] = time.monotonic() - t_switch
        return len(seen_new) == 2

    poll_until(switched, 5, 0.05)
    assert n1.gossip()["keyId"] == 2, "node 1's status does not show key id 2"
    acc1 = {i: peer1(c, i)["accepted"] for i in (2, 3)}
    time.sleep(2.5)
    for i in (2, 3):
        p = peer1(c, i)
        assert p["keyId"] == 2 and p["accepted"] > acc1[i] and not p["rejected"], f"node {i} after the switch: {p}"
    steps["peers_see_key2_after_switch_s"] = {f"node{i}": round(v, 3) for i, v in sorted(seen_new.items())}

    # 4. The old key is removed everywhere.
    only_new = ",".join([c.tokens[j] for j in sorted(c.tokens) if j != 1] + [new_token])
    for i in (2, 3):
        c.node(i).sighup({"gossipPeerKeys": only_new})
    time.sleep(2.5)
    acc2 = {i: peer1(c, i)["accepted"] for i in (2, 3)}
    time.sleep(2.0)
    for i in (2, 3):
        p = peer1(c, i)
        assert p["keyId"] == 2 and p["accepted"] > acc2[i] and not p["rejected"], f"node {i} after removal: {p}"
        assert "SIGHUP: keeping" not in c.node(i).log(), f"node {i} refused a reload:\n{c.node(i).log()[-2000:]}"
    assert "SIGHUP: keeping" not in n1.log(), f"node 1 refused its reload:\n{n1.log()[-2000:]}"

    # The retired key no longer works: a correctly formed datagram signed with it is refused.
    old_key = gw.SigningKey.from_file(n1.key_file)
    inc = peer1(c, 2)["incarnation"]
    probe = gw.Envelope(1, gw.SYNC_REQ, c.nodes[0].config["gossipClusterName"], 1, inc, 1 << 40, 1,
                        int(time.time() * 1000), 2, 1, [])
    before = peer1(c, 2)["rejected"].get("key_id", 0)
    send_udp(c.node(2).gossip_port, gw.seal(probe, old_key))
    time.sleep(0.3)
    after = peer1(c, 2)["rejected"].get("key_id", 0)
    w.stop_evt.set()
    w.join(5)
    results.record(
        "key_rotation",
        {**steps, "route_checks": w.checks, "route_gaps": len(w.gaps), "old_key_probe_key_id_rejections": after - before,
         "old_token": old_token.split(":")[1], "new_token": new_token.split(":")[1]},
    )
    assert not w.gaps, "brokers not routable during the rotation:\n" + "\n".join(w.gaps[:20])
    assert after - before == 1, "a datagram signed with the removed key was not refused as key_id"
