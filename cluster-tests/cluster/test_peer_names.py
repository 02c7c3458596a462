"""Gossip peers configured by host name (gossipPeers "id@name:port", proto/gossip.md).

nsrvd resolves peer names itself, off the event loop, and uses each answer as the peer's
address for sending and for the source checks. Here: node 1 knows its peers only as
"localhost" and converges like a node configured with literals; a name that does not resolve
is reported (/status, /metrics, log) and retried while the other peer works; a SIGHUP that
fixes the name brings that peer in without a restart. (A name that changes its answer, a
restarted container on a new address, is the docker-mode chaos suite's kill -9 scenario,
cluster-tests/chaos/README.md.)
"""

from clusterlib import poll_until
from test_liveness import SHORT, addr_of


def named(c, ids, host="localhost"):
    return ",".join(f"{i}@{host}:{c.node(i).gossip_port}" for i in ids)


def test_peers_by_name_converge(cluster_factory, sim_factory):
    c = cluster_factory(config=SHORT, start=False)
    c.node(1).config["gossipPeers"] = named(c, (2, 3))
    c.start()
    sim = sim_factory([c.node(2).addr], brokers=1, topics=1, prefix="named-", addr_base=40931)
    sim.wait_ready()
    want = addr_of(40931, 0)
    ok, _ = poll_until(lambda: all(want in nd.brokers() for nd in c.nodes), 10)
    assert ok, {nd.id: sorted(nd.brokers()) for nd in c.nodes}
    assert c.node(1).brokers()[want]["source"] == "peer:2"
    for pid in (2, 3):
        p = c.node(1).peer(pid)
        assert p["host"] == "localhost" and p["resolveError"] is None, p
        assert p["addr"] == f"127.0.0.1:{c.node(pid).gossip_port}", p
        assert p["incarnation"] is not None, p
    m = c.node(1).metrics()
    assert m['nsrvd_gossip_peer_resolved{peer="2"}'] == 1, m
    assert m['nsrvd_gossip_peer_resolve_failures_total{peer="3"}'] == 0, m
    assert "moved" not in c.node(1).log()


def test_unresolvable_name_reported_retried_and_fixed_by_sighup(cluster_factory):
    c = cluster_factory(config=SHORT, start=False)
    c.node(1).config["gossipPeers"] = (f"2@127.0.0.1:{c.node(2).gossip_port},"
                                       f"3@no-such-peer.invalid:{c.node(3).gossip_port}")
    c.start(settle=False)
    n1 = c.node(1)
    ok, _ = poll_until(lambda: n1.metrics().get('nsrvd_gossip_peer_resolve_failures_total{peer="3"}', 0) >= 2, 10)
    assert ok, "an unresolvable name is not retried"
    p3 = n1.peer(3)
    assert p3["host"] == "no-such-peer.invalid" and p3["resolveError"], p3
    assert p3["addr"] == "" and p3["incarnation"] is None, p3
    assert n1.metrics()['nsrvd_gossip_peer_resolved{peer="3"}'] == 0
    assert "cannot resolve 'no-such-peer.invalid'" in n1.log()
    # the peer that does resolve works meanwhile
    ok, _ = poll_until(lambda: n1.peer(2)["incarnation"] is not None, 10)
    assert ok, n1.peer(2)

    n1.sighup({"gossipPeers": named(c, (2, 3))})
    ok, _ = poll_until(lambda: n1.peer(3)["incarnation"] is not None, 10)
    assert ok, n1.peer(3)
    assert n1.peer(3)["resolveError"] is None
    assert n1.metrics()['nsrvd_gossip_peer_resolved{peer="3"}'] == 1
