"""With every peer down, a gossip-enabled node behaves as a standalone (Java) NameServer: it
serves what brokers register with it, drops a broker whose connection closes at once and a silent
one at its timeout, and keeps trying its peers without disturbing any of that (the
design's rule: "with every peer down, a node behaves exactly as the Java NameServer")."""

import time

from clusterlib import poll_until
from test_liveness import PERIOD_MS, SCAN_MS, SHORT, SLACK_S, TIMEOUT_MS, addr_of, last_direct


def test_every_peer_down_behaves_standalone(cluster_factory, sim_factory, results):
    c = cluster_factory(config=SHORT, start=False)
    node = c.node(1).start()  # nodes 2 and 3 never start
    sim = sim_factory([node.addr], brokers=3, period_ms=PERIOD_MS, timeout_ms=TIMEOUT_MS, topics=3,
                      prefix="alone-", addr_base=40911)
    sim.wait_ready()
    addrs = [addr_of(40911, i) for i in range(3)]
    _, took = poll_until(lambda: set(addrs) <= set(node.brokers()), 5)
    assert set(addrs) <= set(node.brokers()), node.brokers()
    assert all(node.brokers()[a]["source"] == "direct" for a in addrs)
    assert node.serves("topic-alone-0000-0", "alone-0000")

    g = node.gossip()
    assert all(p["incarnation"] is None for p in g["peers"]), g["peers"]  # nobody answered
    assert g["brokersImported"] == 0

    sim.die("alone-0001")  # connection closed: gone at once
    gone, t_die = poll_until(lambda: addrs[1] not in node.brokers(), 2)
    assert gone, "a closed broker connection did not unregister it"

    t_last = last_direct(node, addrs[2])
    sim.freeze("alone-0002")  # silent: gone at its timeout, as on a Java NameServer
    gone, _ = poll_until(lambda: addrs[2] not in node.brokers(), TIMEOUT_MS / 1000.0 + 4)
    dropped_after = time.monotonic() - t_last
    assert gone, "a silent broker outlived its timeout"
    assert dropped_after <= TIMEOUT_MS / 1000.0 + SCAN_MS / 1000.0 + SLACK_S, dropped_after
    assert addrs[0] in node.brokers()  # the healthy one stays
    g = node.gossip()
    results.record("peers_down", {
        "registered_visible_s": round(took, 3),
        "closed_dropped_s": round(t_die, 3),
        "silent_dropped_after_last_hb_s": round(dropped_after, 3),
        "pulls_failed": g["pullsFailed"],
    })
