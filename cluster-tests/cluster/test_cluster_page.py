"""The cluster page (GET / on the status port) in a real browser.

Debian's headless Chromium loads node 1's page against a running 3-node cluster and the test
reads the rendered DOM as a person reads the page: the title names the node, the peers table
lists nodes 2 and 3 with their incarnations and no refused packets, and the brokers x nodes
matrix shows a broker heard by every node as ``direct`` in every column and a broker heard by
node 1 only as ``direct`` there and ``peer:1`` on nodes 2 and 3, both with ``?nodes=`` and
without it (then the page reads the status endpoints the peers announced).

With NSRV_PAGE_SCREENSHOT=FILE.png the test also writes a screenshot (docker/cluster-page.png
in docs/design/observability.md comes from it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from typing import Dict, List

from clusterlib import http_get, poll_until
from nsrvd_proc import scaled
from rmq import Broker, TopicConfig

TOPICS = [TopicConfig("PageTopicA", 4, 4, 6), TopicConfig("PageTopicB", 4, 4, 6)]


class Tables(HTMLParser):
    """Text of every cell, by table id: {id: [[cell, ...], ...]} (header rows included)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: Dict[str, List[List[str]]] = {}
        self.texts: Dict[str, str] = {}
        self._table = None
        self._row = None
        self._cell = None
        self._id_stack: List[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
            self.tables[self._table].append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""
        if a.get("id"):
            self._id_stack.append(a["id"])
            self.texts[a["id"]] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join(self._cell.split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        for i in self._id_stack:
            self.texts[i] += data


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("chromium not found: install the Debian package 'chromium' (conf/test-deps.txt)")


def browser_args(profile: str) -> List[str]:
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={profile}", "--virtual-time-budget=6000"]


def render(url: str) -> Tables:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(browser_args(profile) + ["--dump-dom", url], capture_output=True,
                             timeout=scaled(60))
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    t = Tables()
    t.feed(out.stdout.decode())
    return t


def test_cluster_page_in_headless_chromium(cluster_factory):
    c = cluster_factory(n=3, config={"gossipIntervalMs": 1000})
    n1 = c.node(1)
    everywhere = Broker(name="broker-all", addr="127.0.0.1:41911")
    solo = Broker(name="broker-solo", addr="127.0.0.1:41912")
    for nd in c.nodes:
        assert nd.client().register_broker(everywhere, TOPICS, None).code == 0
    assert n1.client().register_broker(solo, TOPICS, None).code == 0
    for nd in c.nodes[1:]:
        poll_until(lambda: nd.brokers().get(solo.addr, {}).get("source") == "peer:1", scaled(10))

    code, body = http_get(n1.status_port, "/")
    assert code == 200 and body.startswith(b"<!DOCTYPE html>")
    assert b"src=" not in body and b"href=" not in body, "the page must not load anything else"

    nodes = ",".join(f"127.0.0.1:{nd.status_port}" for nd in c.nodes)
    url = f"http://127.0.0.1:{n1.status_port}/?nodes={nodes}"

    def rendered():
        t = render(url)
        return t if len(t.tables.get("matrix", [])) == 3 and t.texts.get("updated") != "never" else None

    t, _ = poll_until(rendered, scaled(60), interval=0.5)
    assert t.texts["title"].startswith("nsrvd node 1 of ")
    assert "NameServer port %d" % n1.port in t.texts["node"]

    header, *peers = t.tables["peers"]
    assert header[:4] == ["Peer", "Gossip address", "Last heard", "Incarnation"]
    assert [p[0] for p in peers] == ["node 2", "node 3"]
    for p, nd in zip(peers, c.nodes[1:]):
        assert p[1] == f"127.0.0.1:{nd.gossip_port}"
        assert p[2].endswith(" ms") or p[2].endswith(" s"), p
        assert p[3] == str(n1.peer(nd.id)["incarnation"])
        assert p[6] == "none"

    header, *rows = t.tables["matrix"]
    assert header == ["Broker", "Address", "node 1", "node 2", "node 3"]
    by_addr = {r[1]: r for r in rows}
    assert set(by_addr) == {everywhere.addr, solo.addr}
    assert [cell.split(" · ")[0] for cell in by_addr[everywhere.addr][2:]] == ["direct"] * 3
    assert [cell.split(" · ")[0] for cell in by_addr[solo.addr][2:]] == ["direct", "peer:1", "peer:1"]
    assert by_addr[solo.addr][0] == "DefaultCluster / broker-solo #0"

    # With no ?nodes=, the page reads the status endpoint each peer announced over gossip:
    # every column is that node's own view (on one host, not node 1's three times).
    plain = f"http://127.0.0.1:{n1.status_port}/"
    t2, _ = poll_until(lambda: (lambda r: r if len(r.tables.get("matrix", [])) == 3 and
                                r.texts.get("updated") != "never" else None)(render(plain)),
                       scaled(60), interval=0.5)
    header2, *rows2 = t2.tables["matrix"]
    assert header2 == ["Broker", "Address", "node 1", "node 2", "node 3"], header2
    by_addr2 = {r[1]: r for r in rows2}
    assert [cell.split(" · ")[0] for cell in by_addr2[solo.addr][2:]] == ["direct", "peer:1", "peer:1"]

    shot = os.environ.get("NSRV_PAGE_SCREENSHOT")
    if shot:
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run(browser_args(profile) + ["--window-size=1100,520", f"--screenshot={shot}", url],
                           capture_output=True, timeout=scaled(60), check=True)
