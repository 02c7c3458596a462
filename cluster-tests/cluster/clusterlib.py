"""A cluster of nsrvd nodes with gossip on loopback, for the multi-process tests.

* ``Cluster``: keys (``nsrvd keygen``), free ports, one work dir and config per node, start,
  kill -9, restart, SIGHUP, and a close() that leaves no process behind;
* ``Node``: one node's view through its status endpoint (/status, /metrics) and its remoting
  port (GET_ROUTEINFO_BY_TOPIC);
* ``Relay``: a UDP + TCP relay that one node's gossip to one peer can be pointed at, which
  records (and can hold back) what passes;
* small helpers: ``poll_until``, ``percentile``.

Processes come from cluster-tests/lib (NsrvdProcess, BrokerSim); nothing here edits them.
"""

from __future__ import annotations

import http.client
import json
import random
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import sys

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

import nsrvd_proc  # noqa: E402
from nsrvd_proc import NsrvdProcess, keygen, run_cli, scaled, write_properties  # noqa: E402
from rmq import Connection, NamesrvClient, ResponseCode  # noqa: E402

CLUSTER_NAME = "nsrv-cluster-test"


# ------------------------------------------------------------------------------ helpers


# Ports handed out by this process: bind(0) may return a port that was handed out but is not
# bound yet (a node not started yet), so never hand one out twice.
_handed_out: set = set()
_handed_lock = threading.Lock()


def _claim(port: int) -> bool:
    with _handed_lock:
        if port in _handed_out:
            return False
        _handed_out.add(port)
        return True


def free_port_pair() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (gossip uses the same number for both),
    never one this process handed out before."""
    for _ in range(200):
        port = nsrvd_proc.free_port_pair()
        if _claim(port):
            return port
    raise RuntimeError("no free TCP+UDP port")


def free_tcp_port() -> int:
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if _claim(port):
            return port
    raise RuntimeError("no free TCP port")


def poll_until(pred: Callable[[], Any], timeout: float, interval: float = 0.05) -> Tuple[Any, float]:
    """Calls pred until it returns something true; returns (value, seconds waited).
    Raises TimeoutError with the last value after ``timeout`` seconds."""
    t0 = time.monotonic()
    last = None
    while True:
        last = pred()
        if last:
            return last, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"condition not met within {timeout:.1f}s (last: {str(last)[:300]})")
        time.sleep(interval)


def served_everywhere_after(nodes: Sequence[Any], topic: str, broker_name: str, t0: float,
                            timeout: float, interval: float) -> Dict[int, float]:
    """Polls every node until each serves broker_name in topic's route; returns the seconds from
    t0 (a time.monotonic() value) at which each node id was first seen serving it."""
    seen: Dict[int, float] = {}

    def everywhere() -> bool:
        for nd in nodes:
            if nd.id not in seen and nd.serves(topic, broker_name):
                seen[nd.id] = time.monotonic() - t0
        return len(seen) == len(nodes)

    poll_until(everywhere, timeout, interval)
    return seen


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100): the smallest value with at least p% at or below."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def http_get(port: int, path: str, timeout: float = 5.0) -> Tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=scaled(timeout))
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def parse_metrics(text: str) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


def normalize_route(body: Mapping[str, Any]) -> Dict[str, Any]:
    """A TopicRouteData with every list sorted, so two nodes' answers compare equal."""
    bds = []
    for bd in body.get("brokerDatas") or []:
        bds.append(
            (bd.get("cluster"), bd.get("brokerName"),
             tuple(sorted((str(k), v) for k, v in (bd.get("brokerAddrs") or {}).items())))
        )
    qds = []
    for q in body.get("queueDatas") or []:
        qds.append((q.get("brokerName"), q.get("readQueueNums"), q.get("writeQueueNums"), q.get("perm"),
                    q.get("topicSysFlag")))
    return {"brokerDatas": sorted(bds), "queueDatas": sorted(qds)}


# ------------------------------------------------------------------------------ node


class Node:
    """One gossip node: fixed ports, work dir and key across restarts; a fresh NsrvdProcess
    (own stdout/stderr files: node<i>[-r<k>].stdout) per start."""

    def __init__(self, binary: str, workdir: Path, node_id: int) -> None:
        self.binary = binary
        self.id = node_id
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_tcp_port()
        self.status_port = free_tcp_port()
        self.gossip_port = free_port_pair()
        self.key_file = workdir / f"node{node_id}.key"
        self.config: Dict[str, Any] = {}
        self.proc: Optional[NsrvdProcess] = None
        self.past_procs: List[NsrvdProcess] = []  # earlier starts, checked at close()
        self.starts = 0
        self.exec_time = 0.0  # time.monotonic() when the current process was started
        self._conn: Optional[Connection] = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    # ---- process

    def start(self, wait: bool = True, overrides: Optional[Mapping[str, Any]] = None,
              env: Optional[Mapping[str, str]] = None) -> "Node":
        name = f"node{self.id}" if self.starts == 0 else f"node{self.id}-r{self.starts}"
        self.starts += 1
        cfg = dict(self.config)
        if overrides:
            cfg.update(overrides)
        self.close_conn()
        if self.proc is not None:
            self.past_procs.append(self.proc)
        self.proc = NsrvdProcess(self.binary, self.workdir, cfg, port=self.port, name=name, env=env)
        self.exec_time = time.monotonic()
        self.proc.start(wait_boot=False)
        if wait:
            self.wait_up()
        return self

    def wait_up(self, timeout: float = 10.0) -> float:
        """Waits for the boot line and a /health answer; returns seconds since exec."""
        assert self.proc is not None
        self.proc.wait_boot(timeout)
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            try:
                if http_get(self.status_port, "/health", 1.0)[0] == 200:
                    return time.monotonic() - self.exec_time
            except OSError:
                pass
            time.sleep(0.01)
        raise AssertionError(f"node {self.id}: /health not answering\n{self.proc.tail()}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def kill9(self) -> None:
        self.close_conn()
        if self.proc is not None:
            self.proc.signal(signal.SIGKILL)
            self.proc.wait(10)
            self.proc.kill()  # closes its files

    def stop(self) -> Optional[int]:
        """SIGTERM, then SIGKILL if it does not exit in time. Returns the exit code."""
        self.close_conn()
        if self.proc is None:
            return None
        rc = self.proc.terminate(timeout=10)
        return rc

    def sighup(self, changes: Mapping[str, Any]) -> None:
        """Rewrites this process's config file with ``changes`` and sends SIGHUP."""
        assert self.proc is not None
        self.config.update(changes)
        self.proc.config.update(changes)
        write_properties(self.proc.config_path, self.proc.config)
        self.proc.signal(signal.SIGHUP)

    def log(self) -> str:
        return self.proc.output() if self.proc else ""

    # ---- views

    def status(self) -> Dict[str, Any]:
        code, body = http_get(self.status_port, "/status")
        if code != 200:
            raise AssertionError(f"node {self.id}: /status answered {code}")
        return json.loads(body)

    def brokers(self, st: Optional[Dict[str, Any]] = None) -> Dict[str, Dict[str, Any]]:
        """Live brokers by address."""
        st = st if st is not None else self.status()
        return {b["brokerAddr"]: b for b in st["brokers"]}

    def broker_set(self, st: Optional[Dict[str, Any]] = None) -> frozenset:
        """(cluster, name, id, addr, dataVersion) of every live broker."""
        st = st if st is not None else self.status()
        return frozenset(
            (b["cluster"], b["brokerName"], b["brokerId"], b["brokerAddr"],
             b["dataVersion"]["counter"], b["dataVersion"]["timestamp"], b["dataVersion"]["stateVersion"])
            for b in st["brokers"]
        )

    def gossip(self, st: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        st = st if st is not None else self.status()
        return st["gossip"]

    def peer(self, peer_id: int, st: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        for p in self.gossip(st)["peers"]:
            if p["id"] == peer_id:
                return p
        raise KeyError(f"node {self.id} has no peer {peer_id}")

    def metrics(self) -> Dict[str, float]:
        code, body = http_get(self.status_port, "/metrics")
        assert code == 200
        return parse_metrics(body.decode())

    def client(self) -> NamesrvClient:
        if self._conn is None:
            self._conn = Connection("127.0.0.1", self.port, timeout=scaled(5))
        return NamesrvClient(self._conn)

    def close_conn(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    def route(self, topic: str) -> Optional[Dict[str, Any]]:
        """Normalized route of topic, or None when the node has none (TOPIC_NOT_EXIST)."""
        try:
            r = self.client().get_route(topic)
        except (OSError, ConnectionError):
            self.close_conn()
            raise
        if r.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if r.code != ResponseCode.SUCCESS:
            raise AssertionError(f"node {self.id}: GET_ROUTEINFO_BY_TOPIC {topic}: code {r.code} {r.remark}")
        return normalize_route(r.body_json())

    def serves(self, topic: str, broker_name: str) -> bool:
        r = self.route(topic)
        return bool(r) and any(bd[1] == broker_name for bd in r["brokerDatas"])


# ------------------------------------------------------------------------------ cluster


class Cluster:
    """``n`` nodes with ids 1..n. ``config``: properties for every node; ``per_node``: extra
    properties by node id; ``peer_port``: {(from_id, to_id): port} to send node from_id's gossip
    for to_id somewhere else (a Relay)."""

    def __init__(
        self,
        binary: str,
        root: Path,
        n: int = 3,
        config: Optional[Mapping[str, Any]] = None,
        per_node: Optional[Mapping[int, Mapping[str, Any]]] = None,
        peer_port: Optional[Mapping[Tuple[int, int], int]] = None,
    ) -> None:
        self.binary = binary
        self.root = Path(root)
        self.nodes: List[Node] = [Node(binary, self.root / f"node{i}", i) for i in range(1, n + 1)]
        self.tokens: Dict[int, str] = {}
        for nd in self.nodes:
            self.tokens[nd.id] = keygen(binary, nd.key_file, nd.id)
        self.peer_port = dict(peer_port or {})
        base = {
            "bindAddress": "127.0.0.1",
            "statusAddress": "127.0.0.1",
            "shutdownWaitTimeSeconds": 1,
            "gossipEnable": True,
            "gossipClusterName": CLUSTER_NAME,
            "gossipListenAddress": "127.0.0.1",
        }
        base.update(config or {})
        for nd in self.nodes:
            c = dict(base)
            c.update(
                {
                    "statusPort": nd.status_port,
                    "gossipNodeId": nd.id,
                    "gossipPort": nd.gossip_port,
                    "gossipSecretKeyFile": str(nd.key_file),
                    "gossipStatePath": str(nd.workdir / "gossip.state"),
                    "gossipPeers": self.peers_value(nd.id),
                    "gossipPeerKeys": ",".join(self.tokens[j] for j in sorted(self.tokens)),
                }
            )
            c.update((per_node or {}).get(nd.id, {}))
            nd.config = c

    def peers_value(self, node_id: int) -> str:
        parts = []
        for other in self.nodes:
            if other.id == node_id:
                continue
            port = self.peer_port.get((node_id, other.id), other.gossip_port)
            parts.append(f"{other.id}@127.0.0.1:{port}")
        return ",".join(parts)

    def redirect(self, from_id: int, to_id: int, port: int) -> None:
        """Before start: node from_id sends its gossip for to_id to 127.0.0.1:port."""
        self.peer_port[(from_id, to_id)] = port
        self.node(from_id).config["gossipPeers"] = self.peers_value(from_id)

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - 1]

    def ns_addrs(self, ids: Optional[Iterable[int]] = None) -> List[str]:
        ids = list(ids) if ids is not None else [nd.id for nd in self.nodes]
        return [self.node(i).addr for i in ids]

    def start(self, settle: bool = True) -> "Cluster":
        for nd in self.nodes:
            nd.start(wait=False)
        for nd in self.nodes:
            nd.wait_up()
        if settle:
            self.wait_settled()
        return self

    def wait_settled(self, timeout: float = 10.0) -> None:
        """Waits until every node has accepted a datagram from every peer and holds a clock
        anchor for it (a successful pull, proto/gossip.md §7.6), so that tests do not measure
        start-up effects (a boot-time pull to a peer that was not listening yet is retried
        only after a second). Binaries without anchors: datagrams only."""

        def settled():
            anchors_known = False
            ok = True
            for nd in self.nodes:
                if not nd.alive() or not nd.config.get("gossipEnable"):
                    continue
                for p in nd.gossip()["peers"]:
                    anchors_known |= "anchorOffsetMs" in p
                    ok &= p.get("incarnation") is not None and "anchorOffsetMs" in p
            return ok or (not anchors_known and time.monotonic() - t0 > 3.0 and self._datagrams_everywhere())

        t0 = time.monotonic()
        poll_until(settled, scaled(timeout), 0.05)

    def _datagrams_everywhere(self) -> bool:
        return all(
            p.get("incarnation") is not None
            for nd in self.nodes
            if nd.alive() and nd.config.get("gossipEnable")
            for p in nd.gossip()["peers"]
        )

    def close(self) -> List[str]:
        """Stops every node (SIGTERM, SIGKILL if needed); returns problems found."""
        problems = []
        for nd in self.nodes:
            # A process that exited on its own (crash, abort, sanitizer) is a failure, and
            # every earlier start of the node is checked for sanitizer reports too.
            for p in nd.past_procs + ([nd.proc] if nd.proc else []):
                if p.died_unexpectedly():
                    problems.append(f"node {nd.id}: {p.name} died during the test (exit code "
                                    f"{p.proc.poll()})\n{p.tail()}")
                elif p is not nd.proc:
                    errs = p.sanitizer_errors()
                    if errs:
                        problems.append(f"node {nd.id}: {p.name}: sanitizer report {errs}\n{p.tail(20000)}")
            if nd.proc is None:
                continue
            if not nd.alive():
                errs = nd.proc.sanitizer_errors()
                if errs:
                    problems.append(f"node {nd.id}: sanitizer report {errs}\n{nd.proc.tail(20000)}")
                continue
            rc = nd.stop()
            if rc is None:
                problems.append(f"node {nd.id}: no exit within 10 s of SIGTERM (killed)")
            elif rc != 0:
                problems.append(f"node {nd.id}: exit code {rc} after SIGTERM\n{nd.proc.tail()}")
            errs = nd.proc.sanitizer_errors()
            if errs:
                problems.append(f"node {nd.id}: sanitizer report {errs}\n{nd.proc.tail(20000)}")
        return problems

    def statuses(self) -> Dict[int, Dict[str, Any]]:
        return {nd.id: nd.status() for nd in self.nodes if nd.alive()}


# ------------------------------------------------------------------------------ relay


@dataclass
class Captured:
    t: float  # time.monotonic() when received
    data: bytes
    delivered: bool


class Relay:
    """Listens on one port (UDP and TCP) on 127.0.0.1 and forwards to ``target_port``.
    UDP: every datagram is recorded; ``hold()`` keeps them instead of forwarding, ``release()``
    sends the held ones (late, in order). TCP: each connection is relayed both ways; the
    client's bytes and the count of bytes answered are recorded in ``tcp_sessions``. ``drop``:
    the share of datagrams silently lost (seeded; TCP is never dropped, as TCP retransmits)."""

    def __init__(self, target_port: int, drop: float = 0.0, seed: int = 1) -> None:
        self.drop = drop
        self.rng = random.Random(seed)
        self.dropped = 0
        self.target = ("127.0.0.1", target_port)
        self.port = free_port_pair()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.udp.settimeout(0.2)
        self.out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(16)
        self.tcp.settimeout(0.2)
        self.lock = threading.Lock()
        self.captured: List[Captured] = []
        self.held: List[Captured] = []
        self.holding = False
        self.tcp_sessions: List[Dict[str, Any]] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._udp_loop, name="relay-udp", daemon=True),
            threading.Thread(target=self._tcp_loop, name="relay-tcp", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _udp_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data, _ = self.udp.recvfrom(70000)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                if self.drop and self.rng.random() < self.drop:
                    self.dropped += 1
                    continue
                c = Captured(time.monotonic(), data, not self.holding)
                self.captured.append(c)
                if self.holding:
                    self.held.append(c)
                    continue
            self.out.sendto(data, self.target)

    def _tcp_loop(self) -> None:
        while not self._stop.is_set():
            try:
                cli, _ = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._tcp_session, args=(cli,), daemon=True).start()

    def _tcp_session(self, cli: socket.socket) -> None:
        sess = {"t": time.monotonic(), "request": b"", "reply_bytes": 0}
        with self.lock:
            self.tcp_sessions.append(sess)
        try:
            up = socket.create_connection(self.target, timeout=5)
        except OSError:
            cli.close()
            return
        cli.settimeout(10)
        up.settimeout(10)

        def pump(src: socket.socket, dst: socket.socket, key: str) -> None:
            try:
                while True:
                    b = src.recv(65536)
                    if not b:
                        break
                    with self.lock:
                        if key == "request":
                            sess["request"] += b
                        else:
                            sess["reply_bytes"] += len(b)
                    dst.sendall(b)
            except OSError:
                pass
            finally:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        t = threading.Thread(target=pump, args=(up, cli, "reply"), daemon=True)
        t.start()
        pump(cli, up, "request")
        t.join(12)
        cli.close()
        up.close()

    def hold(self) -> None:
        with self.lock:
            self.holding = True

    def release(self) -> List[Captured]:
        """Stops holding and forwards what was held; returns it."""
        with self.lock:
            self.holding = False
            held, self.held = self.held, []
        for c in held:
            self.out.sendto(c.data, self.target)
            c.delivered = True
        return held

    def snapshot(self) -> List[Captured]:
        with self.lock:
            return list(self.captured)

    def close(self) -> None:
        self._stop.set()
        for s in (self.udp, self.tcp, self.out):
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(2)


def send_udp(port: int, data: bytes, src_ip: str = "127.0.0.1") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src_ip, 0))
        s.sendto(data, ("127.0.0.1", port))


def tcp_exchange(port: int, data: bytes, timeout: float = 3.0) -> Tuple[bytes, bool]:
    """Sends data on a fresh TCP connection and reads until the peer closes or ``timeout``.
    Returns (reply bytes, closed_by_peer)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""
    closed = False
    try:
        s.sendall(data)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not b:
                closed = True
                break
            got += b
    finally:
        s.close()
    return got, closed
