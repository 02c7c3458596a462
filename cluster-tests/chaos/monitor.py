"""What the suite watches, continuously, from the client namespace.

* ``StatusMonitor`` reads every node's /status every ``interval`` s. It keeps, per broker, the
  latest direct heartbeat any node reports (observer time minus ``lastDirectAgeMs``) and flags
  every sighting of a broker on any node later than its ``timeoutMs`` + the expiry scan period
  + ``slack`` after that heartbeat (a broker shown alive after it died). It also records each
  node's broker set over time (for convergence and disagreement figures).
* ``RoutePoller`` asks one node, in a loop, for the route of one topic of every broker it is
  told to expect, and records every answer that is missing (connection failure, timeout,
  TOPIC_NOT_EXIST, or a route without that broker) with its time. Whether an error counts is
  decided later from the scenario's exemption windows. It speaks as a 4.9.7 client (version
  453): those get answers, never GO_AWAY, while a node drains, so every request it sent before
  a SIGTERM must be answered; the ones that were not are counted as ``unanswered``.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from rmq import Connection, RequestCode, ResponseCode  # noqa: E402

V4_9_7 = 453
JUDGE_AFTER_S = 0.5


@dataclass
class Sighting:
    t: float
    node: int
    broker: str
    age_s: float  # since the last direct heartbeat anywhere
    limit_s: float


@dataclass
class Snapshot:
    t: float
    sets: Dict[int, FrozenSet[Tuple[str, int]]]  # node -> {(addr, dataVersion counter)}
    names: Dict[int, FrozenSet[str]] = field(default_factory=dict)  # node -> broker names


class StatusMonitor:
    def __init__(self, nodes, scan_s: float, interval: float = 0.1, slack: float = 0.4) -> None:
        self.nodes = nodes
        self.scan_s = scan_s
        self.interval = interval
        self.slack = slack
        self.lock = threading.Lock()
        self.last_direct: Dict[str, float] = {}
        self.violations: List[Sighting] = []
        self.snapshots: List[Snapshot] = []
        self.latest: Dict[int, Dict] = {}
        self.rejects: Dict[int, Dict[str, int]] = {}
        self.pending: List[Tuple[float, int, str, str, float]] = []  # sightings not judged yet
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []

    def start(self) -> "StatusMonitor":
        for nd in self.nodes:
            t = threading.Thread(target=self._loop, args=(nd,), daemon=True, name=f"status-{nd.id}")
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._snap_loop, daemon=True, name="snapshots")
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(3)

    def _loop(self, nd) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            st = None
            if nd.alive() and not nd.stopped:
                try:
                    st = nd.status(timeout=0.5)
                except (OSError, ValueError):
                    st = None
            t1 = time.monotonic()
            with self.lock:
                if st is None:
                    self.latest.pop(nd.id, None)
                else:
                    self._note(nd.id, st, (t0 + t1) / 2, t1 - t0)
            time.sleep(max(0.0, self.interval - (time.monotonic() - t0)))

    def _note(self, node: int, st: Dict, t: float, rtt: float) -> None:
        self.latest[node] = {"t": t, "status": st}
        for b in st.get("brokers", []):
            addr = b["brokerAddr"]
            if b.get("lastDirectAgeMs") is not None:
                # the heartbeat happened no later than t - age (rtt/2 of uncertainty, in its favour)
                hb = t + rtt / 2 - b["lastDirectAgeMs"] / 1000.0
                if hb > self.last_direct.get(addr, -1e18):
                    self.last_direct[addr] = hb
        # A sighting is judged a little later: a heartbeat that happened before it may be
        # reported by another node's /status only after it (read 100 ms apart), and a
        # heartbeat after it proves the broker was alive then.
        for b in st.get("brokers", []):
            self.pending.append((t - rtt / 2, node, b["brokerName"], b["brokerAddr"],
                                 b["timeoutMs"] / 1000.0 + self.scan_s + self.slack))
        keep = []
        for p in self.pending:
            ts, n, name, addr, limit = p
            if t - ts < JUDGE_AFTER_S:
                keep.append(p)
                continue
            hb = self.last_direct.get(addr)
            if hb is not None and ts - hb > limit:
                self.violations.append(Sighting(ts, n, f"{name}@{addr}", ts - hb, limit))
        self.pending = keep

    def _snap_loop(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                sets = {
                    n: frozenset((b["brokerAddr"], b["dataVersion"]["counter"]) for b in v["status"]["brokers"])
                    for n, v in self.latest.items()
                }
                names = {n: frozenset(b["brokerName"] for b in v["status"]["brokers"])
                         for n, v in self.latest.items()}
                self.snapshots.append(Snapshot(time.monotonic(), sets, names))
            time.sleep(self.interval)

    # ------------------------------------------------------------------ queries

    def broker_addrs(self, node: int) -> Optional[FrozenSet[str]]:
        with self.lock:
            v = self.latest.get(node)
            return frozenset(b["brokerAddr"] for b in v["status"]["brokers"]) if v else None

    def status_of(self, node: int) -> Optional[Dict]:
        with self.lock:
            v = self.latest.get(node)
            return v["status"] if v else None

    def violations_between(self, t0: float, t1: float) -> List[Sighting]:
        with self.lock:
            return [v for v in self.violations if t0 <= v.t <= t1]

    def settled_at(self, since: float, nodes: int, expected) -> Optional[float]:
        """The first snapshot time after ``since`` from which every later snapshot shows
        ``nodes`` nodes with one and the same broker set holding every expected broker; None
        if the last one does not."""
        want = frozenset(expected)
        with self.lock:
            snaps = [s for s in self.snapshots if s.t >= since]
        first = None
        for s in snaps:
            if (len(s.sets) == nodes and len(set(s.sets.values())) == 1
                    and all(want <= ns for ns in s.names.values())):
                if first is None:
                    first = s.t
            else:
                first = None
        return first

    def disagreement(self, t0: float, t1: float) -> float:
        """Seconds in [t0, t1] during which the reachable nodes' broker sets differed."""
        with self.lock:
            snaps = [s for s in self.snapshots if t0 <= s.t <= t1]
        total = 0.0
        for a, b in zip(snaps, snaps[1:]):
            if len(set(a.sets.values())) > 1:
                total += b.t - a.t
        return total


@dataclass
class RouteError:
    t: float
    node: int
    broker: str
    kind: str
    why: str = ""


class RoutePoller:
    """One thread per node; ``expect`` maps broker name -> a topic it serves (shared, mutable)."""

    def __init__(self, node, expect: Dict[str, str], lock: threading.Lock, period: float = 0.1) -> None:
        self.node = node
        self.expect = expect
        self.expect_lock = lock
        self.period = period
        self.errors: List[RouteError] = []
        self.requests = 0
        self.answered = 0
        self.unanswered: List[Tuple[float, str]] = []  # (send time, why) of requests without a reply
        self._conn: Optional[Connection] = None
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True, name=f"route-{node.id}")

    def start(self) -> "RoutePoller":
        self._t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._t.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            with self.expect_lock:
                items = sorted(self.expect.items())
            for broker, topic in items:
                if self._stop.is_set():
                    return
                self._ask(broker, topic)
            time.sleep(max(0.0, self.period - (time.monotonic() - t0)))

    def _ask(self, broker: str, topic: str) -> None:
        nd = self.node
        t = time.monotonic()
        if nd.stopped or not nd.alive():
            self.errors.append(RouteError(t, nd.id, broker, "down"))
            self._drop()
            return
        sent = False
        if self._conn is not None and self._peer_closed():
            # A real client learns of a closed channel when it closes (netty's channelInactive)
            # and opens a new one for its next request; this blocking poller only learns it
            # when it uses the connection. Without this, a node restarted between two polls
            # (exit and exec within 100 ms) costs a "conn" error on the dead process's
            # connection, seen after the restart window has ended.
            self._drop()
        try:
            if self._conn is None:
                self._conn = Connection(nd.ip, 9876, timeout=1.0, version=V4_9_7)
            self.requests += 1
            cmd = self._conn.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
            self._conn.send(cmd)
            sent = True
            r = self._conn.recv_for(cmd.opaque, 1.0)
            self.answered += 1
        except (OSError, ConnectionError) as e:
            kind = "timeout" if isinstance(e, socket.timeout) else "conn"
            if sent:
                self.unanswered.append((t, f"{type(e).__name__}: {e}"))
            # timed when it is seen: a request sent just before a kill fails just after it
            self.errors.append(RouteError(time.monotonic(), nd.id, broker, kind,
                                          f"{'after send' if sent else 'before send'}: {type(e).__name__}: {e}"))
            self._drop()
            return
        if r.code != ResponseCode.SUCCESS:
            self.errors.append(RouteError(t, nd.id, broker, f"code{r.code}"))
            return
        try:
            body = r.body_json()
            names = {bd.get("brokerName") for bd in body.get("brokerDatas") or []}
        except ValueError:
            names = set()
        if broker not in names:
            self.errors.append(RouteError(t, nd.id, broker, "missing"))

    def _peer_closed(self) -> bool:
        """True when the node has closed (FIN or RST) the idle connection."""
        try:
            return self._conn.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
