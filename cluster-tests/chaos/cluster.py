"""nsrvd nodes and simulated brokers, each in its own network namespace (see netns.py).

A node keeps its address, ports, key and work dir across restarts; every start is a fresh
process (``ip netns exec <ns> nsrvd -c ...``, optionally under ``faketime``) in its own
session, with its output in <workdir>/node<i>-<k>.log.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
sys.path.insert(0, str(HERE.parent / "cluster"))

from brokersim import BrokerSim  # noqa: E402
from nsrvd_proc import write_properties  # noqa: E402

from netns import Net  # noqa: E402

NS_PORT = 9876
STATUS_PORT = 8080
GOSSIP_PORT = 7800
CLUSTER_NAME = "nsrv-chaos"


def libfaketime() -> str:
    """The libfaketime library of the Debian package (the same multiarch dir as libc)."""
    out = subprocess.run(["dpkg", "-L", "libfaketime"], capture_output=True, text=True).stdout.split()
    libs = [p for p in out if p.endswith("/libfaketime.so.1")]
    if not libs:
        raise RuntimeError("libfaketime not installed (Debian package faketime)")
    return libs[0]


def keygen(binary: str, path: Path, node_id: int) -> str:
    r = subprocess.run([binary, "keygen", "-o", str(path), "-n", str(node_id), "-k", "1"],
                       capture_output=True, text=True, cwd=str(path.parent), timeout=20)
    if r.returncode == 0 and r.stdout.count("\n") == 1:
        return r.stdout.strip()  # the ID:KEYID:PUBLIC item
    raise RuntimeError(f"nsrvd keygen failed: {r.stdout} {r.stderr}")


def http_get(host: str, port: int, path: str, timeout: float) -> Any:
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return r.status, body
    finally:
        c.close()


class Node:
    def __init__(self, net: Net, binary: str, node_id: int, workdir: Path, config: Mapping[str, Any]) -> None:
        self.net = net
        self.binary = binary
        self.id = node_id
        self.host = f"n{node_id}"
        self.ip = net.ip(self.host)
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.key_file = workdir / "gossip.key"
        self.config: Dict[str, Any] = dict(config)
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0
        self.exec_time = 0.0
        self.stopped = False  # SIGSTOP'd
        self.faketime: Optional[str] = None

    @property
    def addr(self) -> str:
        return f"{self.ip}:{NS_PORT}"

    def start(self, faketime: Optional[str] = None) -> None:
        self.starts += 1
        self.faketime = faketime
        cfg_path = self.workdir / "nsrvd.properties"
        write_properties(cfg_path, self.config)
        log = open(self.workdir / f"node{self.id}-{self.starts}.log", "wb")
        env = dict(os.environ, HOME=str(self.workdir))
        argv = self.net.exec_prefix(self.host)
        if faketime:
            # libfaketime preloaded into nsrvd itself (the faketime(1) wrapper would stay the
            # parent, and our signals would reach it instead of nsrvd). Only the wall clock
            # moves: liveness uses CLOCK_MONOTONIC.
            env["LD_PRELOAD"] = libfaketime()
            env["FAKETIME"] = faketime
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        argv += [self.binary, "-c", str(cfg_path)]
        self.exec_time = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     env=env, cwd=str(self.workdir), start_new_session=True)
        log.close()
        self.stopped = False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_up(self, timeout: float = 10.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"node {self.id} exited: {self.log_tail()}")
            try:
                if http_get(self.ip, STATUS_PORT, "/health", 0.5)[0] == 200:
                    return time.monotonic() - self.exec_time
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError(f"node {self.id}: /health not answering: {self.log_tail()}")

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def kill9(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def terminate(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM and wait; the exit code (None: had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return None

    def status(self, timeout: float = 1.0) -> Dict[str, Any]:
        code, body = http_get(self.ip, STATUS_PORT, "/status", timeout)
        if code != 200:
            raise OSError(f"/status answered {code}")
        return json.loads(body)

    def log_tail(self, n: int = 3000) -> str:
        p = self.workdir / f"node{self.id}-{self.starts}.log"
        try:
            return p.read_text(errors="replace")[-n:]
        except OSError:
            return ""


class Cluster:
    def __init__(self, net: Net, binary: str, root: Path, n: int, config: Mapping[str, Any]) -> None:
        self.net = net
        self.nodes: List[Node] = []
        tokens = {}
        for i in range(1, n + 1):
            wd = root / f"node{i}"
            wd.mkdir(parents=True, exist_ok=True)
            tokens[i] = keygen(binary, wd / "gossip.key", i)
        for i in range(1, n + 1):
            wd = root / f"node{i}"
            ip = net.ip(f"n{i}")
            cfg = {
                "listenPort": NS_PORT,
                "bindAddress": ip,
                "statusAddress": ip,
                "statusPort": STATUS_PORT,
                "kvConfigPath": str(wd / "kvConfig.json"),
                "shutdownWaitTimeSeconds": 5,
                "gossipEnable": True,
                "gossipClusterName": CLUSTER_NAME,
                "gossipListenAddress": ip,
                "gossipPort": GOSSIP_PORT,
                "gossipNodeId": i,
                "gossipSecretKeyFile": str(wd / "gossip.key"),
                "gossipStatePath": str(wd / "gossip.state"),
                "gossipPeers": ",".join(f"{j}@{net.ip(f'n{j}')}:{GOSSIP_PORT}" for j in range(1, n + 1) if j != i),
                "gossipPeerKeys": ",".join(tokens[j] for j in sorted(tokens)),
            }
            cfg.update(config)
            self.nodes.append(Node(net, binary, i, wd, cfg))

    def node(self, i: int) -> Node:
        return self.nodes[i - 1]

    def addrs(self) -> str:
        return ";".join(nd.addr for nd in self.nodes)

    def start(self) -> None:
        for nd in self.nodes:
            nd.start()
        for nd in self.nodes:
            nd.wait_up()

    def close(self) -> List[str]:
        problems = []
        for nd in self.nodes:
            if nd.alive():
                rc = nd.terminate(10)
                if rc != 0:
                    problems.append(f"node {nd.id}: exit code {rc} after SIGTERM")
        return problems


class NetBrokerSim(BrokerSim):
    """nsrv-brokersim run inside a namespace; its fake broker addresses use that namespace's IP."""

    def __init__(self, net: Net, host: str, namesrv: List[str], log_path: Path, **kw: Any) -> None:
        extra = list(kw.pop("extra_args", ())) + ["--addr-host", net.ip(host), "--reconnect-max-ms", "300"]
        super().__init__(namesrv, extra_args=extra, log_path=log_path, **kw)
        self.host = host
        self.args = net.exec_prefix(host) + self.args
