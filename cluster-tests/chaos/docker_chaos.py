"""The chaos scenarios against the compose cluster (docker/docker-compose.yml): run.sh --docker.

The scenarios, the runner and the checks are the namespace mode's own (scenarios.py,
chaos.run_one, monitor.py, javaload.py's message accounting); only what they act on differs:

* a node is a container: kill -9 is ``<engine> kill -s KILL``, a restart ``<engine> start``
  (exec time = when it returned), SIGTERM ``<engine> stop``, SIGSTOP/SIGCONT
  ``<engine> pause``/``unpause``;
* a cut is an nft table in the node container's network namespace (``nsenter -n``) dropping
  every packet to and from its peers' and/or the brokers' container addresses; the host, which
  observes, is not cut;
* the brokers are the compose file's real 5.3.3 broker-a master and slave (registration period
  10 s), the clients its producer and consumer (their ``ACK i`` / ``RECV s-i`` lines are read
  from ``<engine> logs -f``), and the observer (status monitor, one route poller per node asking
  for broker-a's topic every 100 ms) runs on the host and reaches the containers' addresses on
  the compose network.

Scenarios: kill9-one, kill9-two, kill9-all, restart (SIGTERM, node by node), pause, cut-peers,
cut-brokers, cut-both. Loss, delay, skew and the gossip flood need the namespace mode's tools on
the node's side and stay there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenarios as sc  # noqa: E402
from chaos import run_one, start_run, table  # noqa: E402
from cluster import http_get  # noqa: E402
from javaload import Consumer, JavaLoad, Producer  # noqa: E402
from monitor import RoutePoller, StatusMonitor  # noqa: E402
from suite import Result, Suite  # noqa: E402

STATUS_PORT = 9877
TOPIC = "DemoTopic"  # the compose producer's topic (docker/rocketmq/client-entrypoint.sh)
SCAN_S = 5.0  # nsrvd's default scanNotActiveBrokerInterval (the compose nodes run defaults)
BROKERS = ["broker-a", "broker-a-s"]
BOOT_DEADLINE_S = 420  # compose up to both brokers direct everywhere: 160-270 s measured here


class Engine:
    """`docker compose` when a Docker engine answers, else podman + podman-compose."""

    def __init__(self, engine: str, compose_file: Path, project: str) -> None:
        self.engine = engine
        self.file = compose_file
        self.project = project

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        r = subprocess.run([self.engine, *args], capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{self.engine} {' '.join(args)}: {r.stderr.strip()[-400:]}")
        return r.stdout.strip()

    def compose(self, *args: str, timeout: float = 1800) -> None:
        argv = (["docker", "compose"] if self.engine == "docker" else ["podman-compose"]) + \
            ["-p", self.project, "-f", str(self.file), *args]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {(r.stdout + r.stderr).strip()[-800:]}")

    def container(self, service: str) -> str:
        out = self.run("ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                       "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}")
        names = out.split()
        if not names:
            raise RuntimeError(f"no container of service {service} in project {self.project}")
        return names[0]

    def ip(self, name: str) -> str:
        return self.run("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                        name).split()[0]

    def state(self, name: str, field: str) -> str:
        return self.run("inspect", "-f", "{{.State." + field + "}}", name)


class DockerNet:
    """The part of netns.Net the scenarios use: host names, addresses, cut and heal."""

    def __init__(self, eng: Engine, hosts: Dict[str, List[str]]) -> None:
        self.eng = eng
        self.hosts = hosts  # host name as in scenarios.py (n1.., bjava) -> containers

    def ip(self, host: str) -> str:
        return self.eng.ip(self.hosts[host][0])

    def _nft(self, container: str, script: str) -> subprocess.CompletedProcess:
        pid = self.eng.state(container, "Pid")
        return subprocess.run(["nsenter", "-t", pid, "-n", "nft", "-f", "-"], input=script, text=True,
                              capture_output=True, timeout=20)

    def cut(self, host: str, others: List[str]) -> None:
        ips = sorted({self.eng.ip(c) for h in others for c in self.hosts[h]})
        rules = "".join(f"    ip saddr {a} drop\n" for a in ips) + \
            "".join(f"    ip daddr {a} drop\n" for a in ips)
        script = ("table inet chaos {\n  chain in {\n    type filter hook input priority -10; policy accept;\n"
                  + rules + "  }\n  chain out {\n    type filter hook output priority -10; policy accept;\n"
                  + rules + "  }\n}\n")
        r = self._nft(self.hosts[host][0], script)
        if r.returncode != 0:
            raise RuntimeError(f"nft in {host}: {r.stderr.strip()}")
        # running flows (the broker's registration connection) must meet the rules too: the
        # drop rules are stateless, so nothing to flush

    def heal(self, host: str) -> None:
        c = self.hosts[host][0]
        if self.eng.state(c, "Running") != "true":
            return
        self._nft(c, "delete table inet chaos\n")  # absent table: nothing to heal


class DockerNode:
    """The part of cluster.Node the scenarios and the monitor use, for one nsrvd container."""

    def __init__(self, eng: Engine, node_id: int, container: str,
                 others: Callable[[], List["DockerNode"]]) -> None:
        self.eng = eng
        self.others = others
        self.id = node_id
        self.host = f"n{node_id}"
        self.container = container
        self.ip = eng.ip(container)
        self.exec_time = 0.0
        self.stopped = False
        self.faketime: Optional[str] = None
        self._running = True

    @property
    def addr(self) -> str:
        return f"{self.ip}:9876"

    def start(self, faketime: Optional[str] = None) -> None:
        if faketime:
            raise RuntimeError("a fake clock needs the namespace mode")
        self.eng.run("start", self.container)
        started = time.monotonic()
        # podman gives a restarted container a new address: the running peers follow it by
        # themselves (they name it by service name and re-resolve it when its gossip comes
        # from elsewhere, proto/gossip.md §8.2). The observers learn it here, before the node
        # counts as up again: a route poller must not meet the old address after the restart.
        self.ip = self.eng.ip(self.container)
        self._running = True
        self.stopped = False
        self.exec_time = started  # the completeness clock starts when the container started

    def alive(self) -> bool:
        return self._running

    def wait_up(self, timeout: float = 30.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if http_get(self.ip, STATUS_PORT, "/health", 0.5)[0] == 200:
                    return time.monotonic() - self.exec_time
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"node {self.id}: /health not answering")

    def signal(self, sig: int) -> None:
        if sig == signal.SIGSTOP:
            self.eng.run("pause", self.container)
            self.stopped = True
        elif sig == signal.SIGCONT:
            if self.stopped:
                self.eng.run("unpause", self.container)
            self.stopped = False
        else:
            self.eng.run("kill", "-s", str(int(sig)), self.container)

    def kill9(self) -> None:
        self._running = False
        self.eng.run("kill", "-s", "KILL", self.container)
        self.eng.run("wait", self.container, check=False)

    def terminate(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM (``stop``) and wait; the exit code (None: the engine had to kill it)."""
        self.signal(signal.SIGCONT)
        self._running = False
        self.eng.run("stop", "-t", str(int(timeout)), self.container, timeout=timeout + 30)
        code = int(self.eng.state(self.container, "ExitCode") or -1)
        return None if code == 137 else code

    def status(self, timeout: float = 1.0) -> Dict[str, Any]:
        code, body = http_get(self.ip, STATUS_PORT, "/status", timeout)
        if code != 200:
            raise OSError(f"/status answered {code}")
        return json.loads(body)


class DockerSuite(Suite):
    """Suite's views, exemptions and measurements over the containers (no netns Cluster)."""

    def __init__(self, eng: Engine, work: Path, log: Callable[[str], None]) -> None:
        self.eng = eng
        self.work = work
        self.log = log
        self._nodes = [DockerNode(eng, i, eng.container(f"nsrvd{i}"), lambda: self._nodes) for i in (1, 2, 3)]
        hosts = {nd.host: [nd.container] for nd in self._nodes}
        hosts["bjava"] = [eng.container(b) for b in BROKERS]
        self.net = DockerNet(eng, hosts)
        self.sims: Dict[str, Any] = {}
        self.expect: Dict[str, str] = {"broker-a": TOPIC}
        self.expect_lock = threading.Lock()
        self.monitor: Optional[StatusMonitor] = None
        self.pollers: Dict[int, RoutePoller] = {}
        self.exempt: List[Tuple[int, str, float, float]] = []
        self.extra_procs: List[subprocess.Popen] = []
        self.java: Optional[DockerJava] = None

    def node(self, i: int) -> DockerNode:
        return self._nodes[i - 1]

    @property
    def nodes(self) -> List[DockerNode]:
        return self._nodes

    def start(self) -> None:
        # The real brokers boot in minutes on a loaded 2-core host: wait (deadline) until
        # every node hears both directly before anything is measured.
        deadline = time.monotonic() + BOOT_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                if all(sum(b["source"] == "direct" for b in nd.status(1.0)["brokers"]) >= len(BROKERS)
                       for nd in self.nodes):
                    break
            except (OSError, ValueError):
                pass
            time.sleep(1)
        else:
            raise RuntimeError(f"broker-a master and slave not direct on every node within {BOOT_DEADLINE_S}s")
        self.monitor = StatusMonitor(self.nodes, SCAN_S).start()
        for nd in self.nodes:
            self.pollers[nd.id] = RoutePoller(nd, self.expect, self.expect_lock).start()
        if self.wait_converged(60) is None:
            raise RuntimeError("the compose cluster does not agree on broker-a within 60 s")

    def measure_complete(self, nd, exclude=(), timeout: float = 5.0):
        """As Suite's, timed from the last node (re)start: a scenario restarts every node it
        killed before it measures the first, and a container start takes a good part of a
        second, which would otherwise count against the nodes started before it."""
        nd.exec_time = max(o.exec_time for o in self.nodes)
        return super().measure_complete(nd, exclude, timeout)

    def wait_routed(self, topic: str, broker: str, timeout: float) -> None:
        conns: Dict[int, Any] = {}
        pending = {nd.id for nd in self.nodes}
        deadline = time.monotonic() + timeout
        try:
            while pending and time.monotonic() < deadline:
                pending = {i for i in pending if not self._routes(i, topic, broker, conns)}
                time.sleep(0.2)
        finally:
            for c in conns.values():
                c.close()
        if pending:
            raise RuntimeError(f"{topic} of {broker} not routed by nodes {sorted(pending)} within {timeout}s")

    def close(self) -> List[str]:
        for p in self.pollers.values():
            p.stop()
        if self.monitor:
            self.monitor.stop()
        if self.java:
            self.java.finish([], self.log)
        return []


class DockerJava(JavaLoad):
    """javaload's per-scenario message accounting over the compose producer's and consumer's
    logs (the broker and clients are the compose services, already running)."""

    def __init__(self, suite: DockerSuite, log) -> None:
        super().__init__(suite, suite.work, log)
        self.register_period_s = 10.0  # broker-entrypoint.sh: registerNameServerPeriod=10000
        eng = suite.eng
        follow = lambda svc: [eng.engine, "logs", "-f", "--tail", "0", eng.container(svc)]  # noqa: E731
        self.consumer = Consumer(follow("consumer"), self.work / "consumer.err", self.work)
        self.producer = Producer(follow("producer"), self.work / "producer.err", self.work)
        end = time.monotonic() + 300  # the clients start once both brokers are direct everywhere
        while time.monotonic() < end and not (self.producer.acked and self.consumer.received):
            time.sleep(0.2)
        if not (self.producer.acked and self.consumer.received):
            raise RuntimeError("the compose producer/consumer move no message (see their logs)")

    def recount(self) -> None:
        """The consumer's whole log, read again. `podman logs -f` (4.3.1) can drop a line
        that follows a partial one (mawk writes a line and its newline apart, and conmon
        records them as a partial and a final entry): a full run saw RECV s-828 in the
        container's log but never in the follower. The log itself is the consumer's word."""
        out = subprocess.run([self.s.eng.engine, "logs", self.s.eng.container("consumer")],
                             capture_output=True, timeout=60).stdout.decode("utf-8", "replace")
        counts: Dict[int, int] = {}
        for m in re.finditer(r"RECV s-(\d+)", out):
            i = int(m.group(1))
            counts[i] = counts.get(i, 0) + 1
        for i, n in counts.items():
            if n > self.consumer.received.get(i, 0):
                self.consumer.received[i] = n


def plan(short: bool) -> List[Tuple[str, Callable]]:
    cut_s = 5 if short else 10
    pause_s = 10 if short else 60
    return [
        ("kill9-one", lambda s, r: sc.kill9(s, r, [1], 3)),
        ("kill9-two", lambda s, r: sc.kill9(s, r, [1, 2], 3)),
        ("kill9-all", lambda s, r: sc.kill9(s, r, [1, 2, 3], 3)),
        ("restart-sigterm", lambda s, r: sc._rolling(s, r, 2 if short else 5)),
        (f"pause-{pause_s}s", lambda s, r: sc.pause(s, r, 2, pause_s)),
        ("cut-peers", lambda s, r: sc.cut(s, r, 3, "peers", cut_s)),
        ("cut-brokers", lambda s, r: sc.cut(s, r, 3, "brokers", cut_s)),
        ("cut-both", lambda s, r: sc.cut(s, r, 3, "both", cut_s)),
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, choices=["docker", "podman"])
    ap.add_argument("--compose-file", required=True)
    ap.add_argument("--project", default=os.environ.get("COMPOSE_PROJECT_NAME", "nsrvd-chaos"))
    ap.add_argument("--work", required=True)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-java", action="store_true", help="ignored: the compose cluster has its real broker")
    ap.add_argument("--keep", action="store_true", help="leave the compose cluster running")
    a = ap.parse_args()
    work = Path(a.work)
    log = start_run(work)
    eng = Engine(a.engine, Path(a.compose_file), a.project)
    s = None
    results: List[Result] = []
    try:
        log(f"{a.engine}: building and starting {a.compose_file} as project {a.project}")
        eng.compose("down", "-v", timeout=300)
        eng.compose("up", "-d", "--build")
        s = DockerSuite(eng, work, log)
        s.start()
        log("cluster up: nodes " + ", ".join(f"n{nd.id}={nd.ip}" for nd in s.nodes)
            + "; broker-a routed by all three")
        s.java = DockerJava(s, log)
        log("producer and consumer moving messages through broker-a")
        # the producer created DemoTopic; the brokers register it with their next heartbeat
        s.wait_routed(TOPIC, "broker-a", 60)
        only = [x for x in a.only.split(",") if x]
        for name, fn in plan(a.short):
            if only and not any(name.startswith(o) for o in only):
                continue
            results.append(run_one(s, name, fn, log))
    except (KeyboardInterrupt, RuntimeError) as e:
        log(f"stopped: {e}")
        results.append(Result("set-up", failures=[str(e)])) if not results else None
    finally:
        if s is not None:
            s.close()
        if not a.keep:
            try:
                eng.compose("down", "-v", timeout=300)
            except Exception as e:  # noqa: BLE001 - teardown keeps going
                log(f"teardown: {e}")
    print()
    print(table(results))
    passed = sum(1 for r in results if r.passed)
    failed = len(results) - passed
    for r in results:
        for f in r.failures:
            print(f"  {r.name}: {f}")
    print(f"{passed} passed, {failed} failed")
    with open(work / "table.txt", "w") as f:
        f.write(table(results) + f"\n{passed} passed, {failed} failed\n")
    return 0 if failed == 0 and results else 1


if __name__ == "__main__":
    sys.exit(main())
