"""The README's "Three nodes on one host" recipe, run exactly as written.

The section's fenced ``sh`` blocks are taken from README.md (found by the heading) and run in
order by one bash process, as an operator pasting them into one shell would, from a copy of
the repository root's layout in which ``build/src/nsrvd`` is the binary under test (the
recipe's only reference to the build). Only TMPDIR is set, so the recipe's work directory is
the test's. The last block stops the nodes; it runs after the checks, in the same directory.

Checks, for the finished behaviour the guide describes:
* every block succeeds under ``bash -e`` (keygen, the properties, the starts, the status);
* the address service of each node lists all three NameServer addresses, learned through
  gossip (the recipe sets no gossipPeerAdvertisedAddresses);
* a broker registered with node 1 only is routed by all three;
* the stop block ends the three nodes (SIGTERM, graceful).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

from brokersim import own_topics
from clusterlib import http_get, poll_until
from nsrvd_proc import SANITIZER_MARKERS, scaled
from rmq import Connection, NamesrvClient, ResponseCode

REPO = Path(__file__).resolve().parents[2]
HEADING = "Three nodes on one host"
FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def recipe_blocks(readme: Path) -> List[str]:
    """The ``sh`` blocks of the section titled HEADING (up to the next heading of its level
    or above), in order."""
    text = readme.read_text()
    m = re.search(r"^(#{1,6})[ \t]+" + re.escape(HEADING) + r"[ \t]*$", text, re.M)
    assert m, f"README.md has no heading {HEADING!r}"
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d}[ \t]+\S" % level, re.M)
    # Headings inside fenced blocks are shell comments, not headings: skip over fences.
    pos, stop = m.end(), len(text)
    while True:
        nxt_fence = FENCE.search(text, pos)
        nxt_head = end.search(text, pos)
        if nxt_head is None:
            break
        if nxt_fence is not None and nxt_fence.start() < nxt_head.start():
            pos = nxt_fence.end()
            continue
        stop = nxt_head.start()
        break
    section = text[m.end():stop]
    blocks = [b for lang, b in FENCE.findall(section) if lang in ("sh", "bash", "shell")]
    assert len(blocks) >= 3, f"the {HEADING!r} section has {len(blocks)} shell blocks"
    return blocks


def properties(path: Path) -> Dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def route_has(port: int, topic: str, broker: str) -> bool:
    try:
        conn = Connection("127.0.0.1", port, timeout=scaled(5))
    except OSError:
        return False
    try:
        r = NamesrvClient(conn).get_route(topic)
    finally:
        conn.close()
    if r.code != ResponseCode.SUCCESS:
        return False
    return any(bd.get("brokerName") == broker for bd in r.body_json().get("brokerDatas", []))


def nsaddr(status_port: int) -> str:
    try:
        code, body = http_get(status_port, "/rocketmq/nsaddr")
    except OSError:
        return ""
    return body.decode().strip() if code == 200 else ""


@pytest.mark.budget(120)
def test_three_nodes_on_one_host_as_written(tmp_path, nsrvd_bin, sim_factory):
    blocks = recipe_blocks(REPO / "README.md")
    *start, stop = blocks
    assert "kill" in stop, "the recipe's last block should stop the nodes"

    # A repository root whose build/src/nsrvd is the binary under test: the recipe refers to
    # the build only through that path, relative to the directory it is started in.
    root = tmp_path / "repo"
    (root / "build" / "src").mkdir(parents=True)
    (root / "build" / "src" / "nsrvd").symlink_to(os.path.abspath(nsrvd_bin))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    cwd_file = tmp_path / "recipe-cwd"
    # The recipe as pasted, then (the test's own line) where it left the shell.
    script = "\n".join(start) + f'\npwd > "{cwd_file}"\n'
    demo = None
    try:
        r = subprocess.run(["bash", "-e", "-c", script], cwd=root, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=scaled(60))
        out = r.stdout.decode(errors="replace") + node_logs(tmp)
        assert cwd_file.exists(), f"the recipe stopped early (exit {r.returncode}):\n{out}"
        demo = Path(cwd_file.read_text().strip())
        assert r.returncode == 0, f"the recipe failed (exit {r.returncode}):\n{out}"
        assert tmp in demo.parents, f"the recipe's work dir {demo} is not under TMPDIR"

        nodes = sorted(demo.glob("node*.properties"))
        assert len(nodes) == 3, nodes
        conf = [properties(p) for p in nodes]
        addrs = [f"127.0.0.1:{c['listenPort']}" for c in conf]
        want = ";".join(addrs)

        # The address service: all three, on every node, learned through gossip.
        for c in conf:
            port = int(c["statusPort"])
            assert eventually(lambda: nsaddr(port) == want, scaled(20)), (
                f"node {c['gossipNodeId']}: /rocketmq/nsaddr is {nsaddr(port)!r}, want {want!r}")

        # A broker heard by node 1 only is routed by all three.
        sim = sim_factory([addrs[0]], brokers=1, topics=3, period_ms=5000)
        sim.wait_ready()
        broker = sim.name(0)
        topic = next(iter(own_topics(broker, 3)))
        for c in conf:
            port = int(c["listenPort"])
            assert eventually(lambda: route_has(port, topic, broker), scaled(10)), (
                f"node {c['gossipNodeId']} does not route {topic} of {broker}, registered with node 1")
        sim.close()

        pids = [int((demo / f"node{i}.pid").read_text()) for i in (1, 2, 3)]
        r = subprocess.run(["bash", "-e", "-c", stop], cwd=demo, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=scaled(30))
        assert r.returncode == 0, r.stdout.decode(errors="replace")
        for pid in pids:
            assert eventually(lambda: not _alive(pid), scaled(35)), (
                f"node pid {pid} still running after the stop block")
        for log in sorted(demo.glob("node*.log")):
            text = log.read_text(errors="replace")
            assert not [m for m in SANITIZER_MARKERS if m in text], f"{log.name}:\n{text[-4000:]}"
            assert "shutdown complete" in text, f"{log.name} did not stop gracefully:\n{text[-2000:]}"
    finally:
        # Wherever the recipe got to: every node it started wrote its pid file under TMPDIR.
        for pid_file in tmp.rglob("node*.pid"):
            try:
                pid = int(pid_file.read_text())
            except ValueError:
                continue
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def node_logs(tmp: Path) -> str:
    """The end of every node log the recipe wrote, for a failure's message."""
    parts = []
    for log in sorted(tmp.rglob("node*.log")):
        lines = log.read_text(errors="replace").splitlines()[-8:]
        parts.append(f"--- {log.name}:\n" + "\n".join(lines))
    return "\n" + "\n".join(parts)


def eventually(pred, timeout: float) -> bool:
    try:
        poll_until(pred, timeout, 0.1)
        return True
    except TimeoutError:
        return False


def _alive(pid: int) -> bool:
    """True while pid runs and is not a zombie (the recipe's bash, its parent, has exited,
    so the nodes are reaped by init)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
