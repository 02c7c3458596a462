"""Presence on a cluster: where each node serves (ANNOUNCE), leaving (LEAVE), silence and return.

Three nodes on one host with none of the address keys (advertisedAddress,
gossipPeerAdvertisedAddresses) set: each node's address service lists the three distinct
NameServer addresses, each peer's /status entry names the status endpoint it announced (what
the cluster page reads by default), a node stopped with SIGTERM leaves every list at once, a
frozen node is logged silent and back exactly once each, and `nsrvd status` shows the state.
Nodes use a 0.5 s interval, so the alive window is 1.5 s.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from clusterlib import Cluster, http_get, poll_until
from nsrvd_proc import run_cli, scaled

INTERVAL_MS = 500
WINDOW_S = 3 * INTERVAL_MS / 1000.0


def nsaddr(node) -> str:
    code, body = http_get(node.status_port, "/rocketmq/nsaddr")
    assert code == 200, (code, body)
    return body.decode().strip()


def listing(c: Cluster, ids) -> str:
    return ";".join(c.node(i).addr for i in sorted(ids))


@pytest.mark.budget(90)
@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_nsaddr_lists_every_node_with_no_address_keys(cluster_factory, bind):
    # 0.0.0.0: a node cannot know which of its addresses a peer reaches, so it announces only
    # its port and the peer uses the address its datagrams come from (127.0.0.1 here).
    c = cluster_factory(n=3, config={"gossipIntervalMs": INTERVAL_MS, "bindAddress": bind,
                                     "statusAddress": bind})
    for i in (1, 2, 3):
        nd = c.node(i)
        assert "advertisedAddress" not in nd.config and "gossipPeerAdvertisedAddresses" not in nd.config
        want_peers = [c.node(j).addr for j in (1, 2, 3) if j != i]

        def peers_listed():
            got = nsaddr(nd).split(";")
            return len(got) == 3 and len(set(got)) == 3 and [a for k, a in enumerate(got) if k != i - 1] == want_peers

        poll_until(peers_listed, scaled(10))
        if bind == "127.0.0.1":
            assert nsaddr(nd) == listing(c, (1, 2, 3))
        # The page's data: every peer's announced endpoints, each answering for itself.
        for p in nd.gossip()["peers"]:
            other = c.node(p["id"])
            assert p["nsAddr"] == other.addr, p
            assert p["statusAddr"] == f"127.0.0.1:{other.status_port}", p
            assert p["state"] == "up", p
            code, body = http_get(other.status_port, "/status")
            assert code == 200 and f'"nodeId":{p["id"]},' in body.decode()


@pytest.mark.budget(90)
def test_sigterm_leaves_every_list_at_once_and_a_restart_comes_back(cluster_factory):
    c = cluster_factory(n=3, config={"gossipIntervalMs": INTERVAL_MS})
    everyone = listing(c, (1, 2, 3))
    for i in (1, 2, 3):
        poll_until(lambda: nsaddr(c.node(i)) == everyone, scaled(10))
    c.node(2).proc.signal(signal.SIGTERM)
    t0 = time.monotonic()
    without2 = listing(c, (1, 3))
    for i in (1, 3):
        poll_until(lambda: nsaddr(c.node(i)) == without2, scaled(5), interval=0.02)
    gone_after = time.monotonic() - t0
    # Well inside the alive window: the LEAVE did it, not the silence.
    assert gone_after < 1.0, f"dropped after {gone_after:.2f} s"
    assert c.node(2).proc.wait(scaled(10)) == 0
    c.node(2).proc._stopped_by_test = True
    assert "told 2 peer(s) that this node is leaving" in c.node(2).log()
    for i in (1, 3):
        poll_until(lambda: "node 2 left: it is shutting down" in c.node(i).log(), scaled(2))
        assert c.node(i).peer(2)["state"] == "left"
    time.sleep(WINDOW_S + INTERVAL_MS / 1000.0)
    for i in (1, 3):
        # Gone by LEAVE is not "silent" too.
        assert "node 2 is silent" not in c.node(i).log()
    c.node(2).start()
    for i in (1, 2, 3):
        poll_until(lambda: nsaddr(c.node(i)) == everyone, scaled(10))
    for i in (1, 3):
        poll_until(lambda: "node 2 is back after" in c.node(i).log(), scaled(2))
        assert c.node(i).log().count("node 2 is back after") == 1
        assert c.node(i).peer(2)["state"] == "up"


@pytest.mark.budget(90)
def test_silent_and_back_are_logged_once_each_and_status_shows_the_state(cluster_factory, nsrvd_bin):
    c = cluster_factory(n=3, config={"gossipIntervalMs": INTERVAL_MS})
    n1 = c.node(1)
    poll_until(lambda: nsaddr(n1) == listing(c, (1, 2, 3)), scaled(10))
    c.node(3).proc.signal(signal.SIGSTOP)
    try:
        poll_until(lambda: "node 3 is silent" in n1.log(), scaled(10))
        assert n1.peer(3)["state"] == "silent"
        out = run_cli(nsrvd_bin, ["status", f"127.0.0.1:{n1.status_port}"], workdir=n1.workdir)
        assert out.returncode == 0, out.stderr
        rows = {ln.split()[0]: ln.split() for ln in out.stdout.decode().splitlines() if ln.split()}
        assert rows["PEER"][:4] == ["PEER", "STATE", "ADDRESS", "NAMESERVER"], rows["PEER"]
        assert rows["2"][1] == "up" and rows["3"][1] == "silent", out.stdout.decode()
        assert rows["2"][3] == c.node(2).addr
        # Ages for people: "0.3s", "2.1s", "12s", "3m05s", never raw milliseconds.
        assert rows["2"][6].endswith("s") and rows["3"][6].endswith("s"), rows
        time.sleep(2 * WINDOW_S)
    finally:
        c.node(3).proc.signal(signal.SIGCONT)
    poll_until(lambda: "node 3 is back after" in n1.log(), scaled(10))
    poll_until(lambda: nsaddr(n1) == listing(c, (1, 2, 3)), scaled(10))
    time.sleep(WINDOW_S)
    log = n1.log()
    assert log.count("node 3 is silent") == 1, log
    assert log.count("node 3 is back after") == 1, log
    # Away about as long as it was frozen (2 windows plus the time to notice), in seconds.
    line = next(ln for ln in log.splitlines() if "node 3 is back after" in ln)
    assert "(restarted)" not in line
    away = re.search(r"node 3 is back after (\d+(?:\.\d+)?)s", line)
    assert away and float(away.group(1)) >= 2 * WINDOW_S, line
    assert n1.peer(3)["state"] == "up"


@pytest.mark.budget(60)
def test_ready_after_the_first_pull(cluster_factory):
    c = cluster_factory(n=3, config={"gossipIntervalMs": INTERVAL_MS})
    for i in (1, 2, 3):
        poll_until(lambda: http_get(c.node(i).status_port, "/ready")[0] == 200, scaled(10))
        assert http_get(c.node(i).status_port, "/ready") == (200, b"ready: synced with a peer\n")
