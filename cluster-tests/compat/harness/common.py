"""Shared plumbing of the compatibility suite: paths, processes, ports, results.

Every process the suite starts is registered here and started in its own session, so that
``cleanup()`` can end exactly those processes (by their process-group id, which is their pid)
and nothing else. Every wait is bounded.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
COMPAT = HERE.parent
REPO = COMPAT.parent.parent
sys.path.insert(0, str(REPO / "cluster-tests" / "lib"))

import rmq  # noqa: E402  (cluster-tests/lib/rmq.py, the project's remoting client)

# JDK 17 needs these for RocketMQ's direct-buffer and reflection tricks
# (the --add-opens list of RocketMQ's own start scripts).
J17_OPTS = [
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "-XX:+IgnoreUnrecognizedVMOptions",
]
# Short-lived JVMs (mqadmin, clients): C1 only and the serial collector cost far less CPU.
SHORT_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"]

VERSIONS = ("5.4.0", "5.3.3", "4.9.7")
# The Java NameServer of each version, by its kind name ("java533"); the same key names the Java
# client peer of that version and selects its mqadmin and broker rows.
KIND_OF_VERSION = {v: "java" + v.replace(".", "") for v in VERSIONS}
VERSION_OF_KIND = {k: v for v, k in KIND_OF_VERSION.items()}


def log(msg: str) -> None:
    sys.stdout.write(time.strftime("%H:%M:%S ") + msg + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass
class Config:
    cache: Path
    logdir: Path
    nsrvd: Optional[Path]
    scenarios: List[int]
    peers: List[str]
    targets: List[str]
    workers: int = 3
    keep: bool = False

    def cp(self, version: str, role: str) -> str:
        """Class path of a resolved peer program (role: namesrv, broker, tools, client)."""
        if role == "client":
            d = self.cache / version / "java-client"
            return str(d / "compat-java.jar") + ":" + (d / "classpath.txt").read_text().strip()
        return (self.cache / version / f"{role}.cp").read_text().strip()

    def compat_jar(self, version: str) -> str:
        return str(self.cache / version / "java-client" / "compat-java.jar")

    def go_binary(self, variant: str) -> str:
        return str(self.cache / "go" / f"compat-go-{variant}")

    def node_dir(self) -> str:
        return str(self.cache / "node")

    def has_nsrvd(self) -> bool:
        return self.nsrvd is not None and self.nsrvd.is_file() and os.access(self.nsrvd, os.X_OK)


CFG: Optional[Config] = None


def cfg() -> Config:
    assert CFG is not None
    return CFG


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------

_procs: List["Proc"] = []
_procs_lock = threading.Lock()


class Proc:
    """One started program. Output (stdout+stderr) goes to ``logfile``."""

    def __init__(self, name: str, args: Sequence[str], logfile: Path, *, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[Path] = None, stdin_data: Optional[str] = None) -> None:
        self.name = name
        self.args = list(args)
        self.logfile = Path(logfile)
        self.logfile.parent.mkdir(parents=True, exist_ok=True)
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        self._out = open(self.logfile, "wb")
        self.started = time.time()
        self.popen = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=str(cwd) if cwd else None,
            start_new_session=True,
        )
        if stdin_data is not None:
            assert self.popen.stdin is not None
            self.popen.stdin.write(stdin_data.encode())
            self.popen.stdin.close()
        with _procs_lock:
            _procs.append(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        try:
            return self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def wait(self, timeout: float) -> Optional[int]:
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._out.close()
        return rc

    def wait_for(self, pattern: str, timeout: float) -> Optional[re.Match]:
        """Wait until the output matches ``pattern`` (regex); None on timeout or exit."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = rx.search(self.output())
            if m:
                return m
            if not self.alive():
                m = rx.search(self.output())
                return m
            time.sleep(0.2)
        return None

    def signal(self, sig: int) -> None:
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self, timeout: float = 30.0) -> Optional[int]:
        """SIGTERM (graceful), then SIGKILL of the process group if it does not exit."""
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            self.kill()
            rc = self.wait(10)
        return rc

    def kill(self) -> None:
        """SIGKILL to this process's own group (it was started in a new session)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait(10)


def run(name: str, args: Sequence[str], logfile: Path, timeout: float, **kw) -> "tuple[Optional[int], str]":
    """Run to completion (bounded); returns (exit code or None on timeout, output)."""
    p = Proc(name, args, logfile, **kw)
    rc = p.wait(timeout)
    if rc is None:
        p.kill()
        return None, p.output() + f"\n[harness] TIMEOUT after {timeout:.0f}s\n"
    return rc, p.output()


def cleanup() -> None:
    with _procs_lock:
        procs = list(_procs)
    for p in procs:
        if p.alive():
            p.kill()


class Interrupted(BaseException):
    """Raised in the main thread by SIGINT/SIGTERM/SIGHUP (e.g. the run's overall timeout)."""


def install_signal_handlers() -> None:
    def handler(signum, frame):  # noqa: ARG001
        log(f"signal {signum}: stopping every process the suite started")
        cleanup()
        raise Interrupted(f"signal {signum}")

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


# --------------------------------------------------------------------------------------------
# Ports
# --------------------------------------------------------------------------------------------

_ports_taken: set = set()
_ports_lock = threading.Lock()


def _port_free(port: int) -> bool:
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET, "127.0.0.1")):
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.bind((addr, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def alloc_port(span: Sequence[int] = (0,)) -> int:
    """A port p such that p+d is free for every d in span (brokers use p-2, p and p+1)."""
    with _ports_lock:
        for _ in range(2000):
            # below the kernel's ephemeral range (32768-60999 by default), so that no outgoing
            # connection takes a port between this check and the bind
            p = random.randint(10002, 32000)
            group = [p + d for d in span]
            if any(q in _ports_taken for q in group):
                continue
            if all(_port_free(q) for q in group):
                _ports_taken.update(group)
                return p
    raise RuntimeError("no free port")


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------

PASS, FAIL, XFAIL, XPASS, NA, SKIP = "PASS", "FAIL", "xfail", "XPASS", "n/a", "skip"
# A known failure (xfail) counts as passed; a known failure that passed (XPASS) is a failure:
# the expectation is stale and must be updated, like pytest's xfail_strict.
COUNTED_PASS = (PASS, XFAIL)
COUNTED_FAIL = (FAIL, XPASS)


@dataclass
class Cell:
    status: str
    detail: str = ""
    evidence: Optional[str] = None  # path of the evidence file


@dataclass
class Row:
    scenario: int
    peer: str
    oracle: str  # "5.4.0" / "5.3.3" / "4.9.7": the Java NameServer version of this row
    cells: Dict[str, Cell] = field(default_factory=dict)  # "nsrvd" / "java"


class Results:
    def __init__(self) -> None:
        self.rows: List[Row] = []
        self.lock = threading.Lock()

    def row(self, scenario: int, peer: str, oracle: str) -> Row:
        with self.lock:
            for r in self.rows:
                if r.scenario == scenario and r.peer == peer:
                    return r
            r = Row(scenario, peer, oracle)
            self.rows.append(r)
            return r

    def set(self, scenario: int, peer: str, oracle: str, column: str, status: str, detail: str = "",
            evidence: str = "") -> None:
        # Every cell's evidence is kept (cells/); failures are also copied to evidence/.
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"s{scenario}-{peer}-{column}")
        text = f"scenario {scenario}, peer {peer}, {column}: {status}\n{detail}\n\n{evidence}\n"
        cell = cfg().logdir / "cells" / f"{safe}.txt"
        cell.parent.mkdir(parents=True, exist_ok=True)
        cell.write_text(text, encoding="utf-8")
        ev_path = str(cell)
        if status in (FAIL, XPASS):
            ev = cfg().logdir / "evidence" / f"{safe}.txt"
            ev.parent.mkdir(parents=True, exist_ok=True)
            ev.write_text(text, encoding="utf-8")
            ev_path = str(ev)
        r = self.row(scenario, peer, oracle)
        with self.lock:
            r.cells[column] = Cell(status, detail, ev_path)
        log(f"  [{scenario}] {peer:<40} {column:<6} {status}" + (f"  {detail}" if detail else ""))


RESULTS = Results()


def java_column(oracle: str) -> str:
    return "java"


def wait_until(fn, timeout: float, interval: float = 0.5):
    """Call fn() until it returns a truthy value or the time is up; returns the last value."""
    deadline = time.time() + timeout
    v = None
    while True:
        try:
            v = fn()
        except Exception as e:  # noqa: BLE001 - the caller decides from the value
            v = None
            last_exc = e  # noqa: F841
        if v:
            return v
        if time.time() >= deadline:
            return v
        time.sleep(interval)
