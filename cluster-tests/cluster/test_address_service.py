"""The RocketMQ address service and gossip metrics on a cluster.

Every node answers GET /rocketmq/nsaddr on its status port with the NameServer addresses of
itself and of the peers it heard within 3 full-digest intervals, in node id order. Nodes here
use a 0.5 s interval, so a silent peer drops out after 1.5 s (plus one interval of slack for
the last datagram's timing and a loaded machine; assertions poll with deadlines).

A fourth node joins with no restart: it starts with the three others as peers, and each of
the three gets it in gossipPeers/gossipPeerAdvertisedAddresses through SIGHUP.
"""

from __future__ import annotations

import time

import pytest

from clusterlib import Cluster, http_get, poll_until
from nsrvd_proc import scaled
from promtext import scrape
from rmq import Broker, TopicConfig

INTERVAL_MS = 500
WINDOW_S = 3 * INTERVAL_MS / 1000.0


def nsaddr(node) -> str:
    code, body = http_get(node.status_port, "/rocketmq/nsaddr")
    assert code == 200, (code, body)
    text = body.decode()
    assert text.endswith("\n") and text.count("\n") == 1, repr(text)
    return text.strip()


def advertised(c: Cluster, ids) -> str:
    return ",".join(f"{i}@{c.node(i).addr}" for i in ids)


def expected(c: Cluster, ids) -> str:
    return ";".join(c.node(i).addr for i in sorted(ids))


def configure(c: Cluster, node_id: int, members) -> dict:
    others = [i for i in members if i != node_id]
    return {
        "gossipPeers": ",".join(f"{i}@127.0.0.1:{c.node(i).gossip_port}" for i in others),
        "gossipPeerKeys": ",".join(c.tokens[i] for i in sorted(members)),
        "gossipPeerAdvertisedAddresses": advertised(c, others),
    }


@pytest.mark.budget(120)
def test_nsaddr_lists_live_nodes_and_a_node_added_by_sighup(cluster_factory):
    c = cluster_factory(n=4, start=False, config={"gossipIntervalMs": INTERVAL_MS})
    for i in (1, 2, 3):
        c.node(i).config.update(configure(c, i, (1, 2, 3)))
        c.node(i).start(wait=False)
    for i in (1, 2, 3):
        c.node(i).wait_up()
    want = expected(c, (1, 2, 3))
    for i in (1, 2, 3):
        poll_until(lambda: nsaddr(c.node(i)) == want, scaled(10))
    assert http_get(c.node(1).status_port, "/rocketmq/other")[0] == 404

    # Node 4 starts knowing all three; they do not know it yet, so nobody lists it but itself.
    c.node(4).config.update(configure(c, 4, (1, 2, 3, 4)))
    c.node(4).start()
    time.sleep(WINDOW_S)
    assert all(nsaddr(c.node(i)) == want for i in (1, 2, 3))
    # SIGHUP with node 4 added: listed everywhere, with no restart.
    for i in (1, 2, 3):
        c.node(i).sighup(configure(c, i, (1, 2, 3, 4)))
    want4 = expected(c, (1, 2, 3, 4))
    for i in (1, 2, 3, 4):
        poll_until(lambda: nsaddr(c.node(i)) == want4, scaled(10))
    assert "SIGHUP: reloaded" in c.node(1).log()
    assert all(c.node(i).starts == 1 for i in (1, 2, 3, 4))

    # A node killed drops out of every list once silent for 3 intervals; back when it returns.
    c.node(2).kill9()
    t0 = time.monotonic()
    without2 = expected(c, (1, 3, 4))
    for i in (1, 3, 4):
        poll_until(lambda: nsaddr(c.node(i)) == without2, scaled(10))
    gone_after = time.monotonic() - t0
    assert gone_after >= WINDOW_S - INTERVAL_MS / 1000.0, f"dropped after {gone_after:.2f} s"
    c.node(2).start()
    for i in (1, 2, 3, 4):
        poll_until(lambda: nsaddr(c.node(i)) == want4, scaled(10))


def test_bad_advertised_address_refused_at_start_and_on_sighup(cluster_factory):
    c = cluster_factory(n=1, start=False)
    nd = c.node(1)
    nd.config["advertisedAddress"] = "a;b:9876"
    nd.start(wait=False)
    assert nd.proc.wait(scaled(10)) != 0
    nd.proc._stopped_by_test = True  # the exit is the point
    assert "advertisedAddress 'a;b:9876' is not host:port" in nd.log()
    nd.config["advertisedAddress"] = "ns1.example:9876"
    nd.start()
    assert nsaddr(nd) == "ns1.example:9876"
    nd.sighup({"advertisedAddress": "bad host:1"})
    poll_until(lambda: "keeping the running address service" in nd.log(), scaled(5))
    assert nsaddr(nd) == "ns1.example:9876"
    nd.sighup({"advertisedAddress": "ns1.example:19876", "addressServiceSubgroup": "nsaddr-unit1"})
    poll_until(lambda: http_get(nd.status_port, "/rocketmq/nsaddr-unit1") == (200, b"ns1.example:19876\n"),
               scaled(5))


@pytest.mark.budget(120)
def test_gossip_metrics_peer_age_up_and_convergence_lag(cluster_factory):
    c = cluster_factory(n=3, config={"gossipIntervalMs": INTERVAL_MS})
    n1, n2 = c.node(1), c.node(2)
    broker = Broker(name="lag-broker", addr="127.0.0.1:31911")
    # Two topics: a one-topic first registration is refused (proto/route.md §3).
    resp = n1.client().register_broker(broker, [TopicConfig("LagTopic", 4, 4, 6), TopicConfig("LagB", 4, 4, 6)],
                                       None)
    assert resp.code == 0
    poll_until(lambda: n2.serves("LagTopic", "lag-broker"), scaled(10))
    m = scrape(n2.status_port)  # promtool-checked, with every gossip family
    assert m.get("nsrvd_gossip_convergence_lag_seconds_count") == 1
    assert 0 <= m.get("nsrvd_gossip_convergence_lag_seconds_sum") < scaled(5)
    assert m.get("nsrvd_gossip_convergence_lag_seconds_bucket", le="+Inf") == 1
    for peer in ("1", "3"):
        assert m.get("nsrvd_gossip_peer_up", peer=peer) == 1
        assert 0 <= m.get("nsrvd_gossip_peer_last_heard_seconds", peer=peer) <= WINDOW_S
        assert m.get("nsrvd_gossip_peer_incarnation", peer=peer) > 0
    assert m.get("nsrvd_gossip_datagrams_received_total") > 0
    assert m.get("nsrvd_gossip_packets_total", result="accepted") > 0
    assert m.get("nsrvd_gossip_pulls_total", result="ok") >= 1
    # Node 1 learned nothing from peers: its histogram is empty.
    assert scrape(n1.status_port).get("nsrvd_gossip_convergence_lag_seconds_count") == 0
    c.node(3).kill9()
    poll_until(lambda: scrape(n2.status_port).get("nsrvd_gossip_peer_up", peer="3") == 0, scaled(10))
    assert scrape(n2.status_port).get("nsrvd_gossip_peer_last_heard_seconds", peer="3") > WINDOW_S
