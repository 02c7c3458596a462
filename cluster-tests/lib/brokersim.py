"""Drive nsrv-brokersim (src/tools/brokersim.c) from Python tests.

The simulator registers N broker groups (with K slaves each) to every nameserver, each member on
its own TCP connection per nameserver, and takes commands on stdin. This wrapper starts it,
reads its stdout on a thread and turns the line protocol into method calls:

* commands ``stop|die|freeze|resume|bump <broker>[/<id>]|all`` and
  ``cut|cut-close|heal <broker>[/<id>]|all <node-index>`` (node index = position in ``-n``,
  0-based) are answered with ``ok <command>`` or ``err <reason>``; ``command()`` waits for it
  and raises ``BrokerSimError`` on ``err``;
* ``ready ok=.. failed=.. elapsed_ms=..`` once every (broker, node) link's first registration
  has an outcome: ``wait_ready()``;
* JSON stats lines (``{"event":"stats"|"exit",...}``): ``stats()``, ``final_stats``.

Typical use::

    with BrokerSim([ns.addr], brokers=50, topics=20) as sim:
        sim.wait_ready()
        sim.die("broker-0003")
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

# Default: build/src/tools/nsrv-brokersim under the repository root (two levels up).
DEFAULT_BIN = str(
    Path(__file__).resolve().parents[2] / "build" / "src" / "tools" / "nsrv-brokersim"
)


class BrokerSimError(RuntimeError):
    """An ``err`` reply, an early exit, or a missing reply."""


def find_binary(nsrvd_bin: Optional[str] = None) -> str:
    """$NSRV_BROKERSIM_BIN, else ``tools/nsrv-brokersim`` next to the nsrvd binary of the same
    build (``<build>/src/nsrvd`` -> ``<build>/src/tools/nsrv-brokersim``), else DEFAULT_BIN."""
    env = os.environ.get("NSRV_BROKERSIM_BIN")
    if env:
        return env
    if nsrvd_bin:
        cand = Path(nsrvd_bin).resolve().parent / "tools" / "nsrv-brokersim"
        if cand.is_file():
            return str(cand)
    return DEFAULT_BIN


def group_name(index: int, prefix: str = "broker-") -> str:
    """The simulator's name for group ``index`` (``broker-0007``)."""
    return f"{prefix}{index:04d}"


class BrokerSim:
    """One nsrv-brokersim process. Keyword arguments map to its options (see ``--help``)."""

    def __init__(
        self,
        namesrv: Union[str, Sequence[str]],
        *,
        brokers: int = 1,
        topics: int = 10,
        shared: int = 0,
        queues: int = 8,
        slaves: int = 0,
        prefix: str = "broker-",
        cluster: str = "DefaultCluster",
        period_ms: int = 30000,
        heartbeat_ms: int = 0,
        heartbeat_code: int = 322,
        timeout_ms: int = 0,
        compressed: bool = False,
        sys_topics: bool = True,
        duration_s: int = 300,
        addr_base: Optional[int] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
        log_path: Optional[Union[str, Path]] = None,
        log_level: str = "notice",
    ) -> None:
        if not isinstance(namesrv, str):
            namesrv = ";".join(namesrv)
        self.binary = binary or find_binary()
        self.brokers = brokers
        self.slaves = slaves
        self.prefix = prefix
        self.args: List[str] = [
            self.binary,
            "-n", namesrv,
            "-b", str(brokers),
            "-t", str(topics),
            "-s", str(shared),
            "-q", str(queues),
            "--slaves", str(slaves),
            "-p", prefix,
            "-c", cluster,
            "--period", str(period_ms),
            "--heartbeat", str(heartbeat_ms),
            "--heartbeat-code", str(heartbeat_code),
            "--timeout-ms", str(timeout_ms),
            "--duration", str(duration_s),
            "--log-level", log_level,
            "--json-stats",
            # An orphaned simulator (the test process died) stops with its stdin.
            "--quit-on-eof",
        ]
        if compressed:
            self.args.append("--compressed")
        if not sys_topics:
            self.args.append("--no-sys-topics")
        if addr_base is not None:
            self.args += ["--addr-base", str(addr_base)]
        self.args += list(extra_args)
        self.log_path = Path(log_path) if log_path else None
        self.proc: Optional[subprocess.Popen] = None
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._reader: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self.ready: Optional[Dict[str, float]] = None
        self.final_stats: Optional[Dict[str, Any]] = None
        self.output: List[str] = []  # every stdout line, for diagnostics
        self._err_file = None

    # ---------------------------------------------------------------- process

    def start(self) -> "BrokerSim":
        if self.log_path:
            self._err_file = open(self.log_path, "wb")
            stderr = self._err_file
        else:
            stderr = subprocess.DEVNULL
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read_stdout, name="brokersim-stdout", daemon=True)
        self._reader.start()
        return self

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                self.output.append(line)
            self._lines.put(line)
        self._lines.put(None)  # EOF

    def __enter__(self) -> "BrokerSim":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self, timeout: float = 10.0) -> Optional[int]:
        """``quit`` (or SIGTERM), wait, and kill as a last resort. Returns the exit code."""
        if self.proc is None:
            return None
        if self.alive():
            try:
                self._send("quit")
                self.proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
        if self._reader is not None:
            self._reader.join(5)
        self._drain()
        if self._err_file is not None:
            self._err_file.close()
            self._err_file = None
        return self.proc.returncode

    # ---------------------------------------------------------------- line protocol

    def _send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def _note(self, line: str) -> None:
        """Record asynchronous lines (ready, exit stats) wherever they are read."""
        if line.startswith("ready "):
            self.ready = {k: float(v) for k, v in (kv.split("=", 1) for kv in line.split()[1:])}
        elif line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                return
            if obj.get("event") == "exit":
                self.final_stats = obj

    def _next_line(self, deadline: float) -> str:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BrokerSimError("timed out waiting for nsrv-brokersim")
        try:
            line = self._lines.get(timeout=left)
        except queue.Empty:
            raise BrokerSimError("timed out waiting for nsrv-brokersim") from None
        if line is None:
            self._lines.put(None)  # keep EOF visible to later readers
            raise BrokerSimError(f"nsrv-brokersim exited (code {self.proc.poll()})")
        self._note(line)
        return line

    def _drain(self) -> None:
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._lines.put(None)
                return
            self._note(line)

    def command(self, cmd: str, timeout: float = 10.0) -> List[str]:
        """Send one command and wait for its ``ok``/``err`` reply. Returns the lines printed
        before the reply (``list`` output, the stats JSON of ``stats``)."""
        self._send(cmd)
        deadline = time.monotonic() + timeout
        out = []
        while True:
            line = self._next_line(deadline)
            if line.startswith("ok "):
                return out
            if line.startswith("err "):
                raise BrokerSimError(f"{cmd!r}: {line[4:]}")
            if line.startswith("ready "):
                continue
            out.append(line)

    def wait_ready(self, timeout: float = 30.0) -> Dict[str, float]:
        """Wait for the end of the first registration round; returns {ok, failed, elapsed_ms}."""
        deadline = time.monotonic() + timeout
        while self.ready is None:
            self._next_line(deadline)
        return self.ready

    # ---------------------------------------------------------------- commands

    @staticmethod
    def _target(broker: Union[str, int], member: Optional[int]) -> str:
        return broker if member is None else f"{broker}/{member}"

    def name(self, index: int) -> str:
        return group_name(index, self.prefix)

    def names(self) -> List[str]:
        return [self.name(i) for i in range(self.brokers)]

    def stop(self, broker: str, member: Optional[int] = None, timeout: float = 10.0) -> None:
        """Graceful: UNREGISTER_BROKER to every node, then close (the reply waits for it)."""
        self.command(f"stop {self._target(broker, member)}", timeout)

    def die(self, broker: str, member: Optional[int] = None) -> None:
        """Close its connections without unregistering (kill -9)."""
        self.command(f"die {self._target(broker, member)}")

    def freeze(self, broker: str, member: Optional[int] = None) -> None:
        """Send nothing more but keep the connections open (a hung broker)."""
        self.command(f"freeze {self._target(broker, member)}")

    def resume(self, broker: str, member: Optional[int] = None) -> None:
        """Undo freeze, or restart a stopped/dead broker (reconnect and register)."""
        self.command(f"resume {self._target(broker, member)}")

    def cut(self, broker: str, node: int, member: Optional[int] = None) -> None:
        self.command(f"cut {self._target(broker, member)} {node}")

    def cut_close(self, broker: str, node: int, member: Optional[int] = None) -> None:
        self.command(f"cut-close {self._target(broker, member)} {node}")

    def heal(self, broker: str, node: int, member: Optional[int] = None) -> None:
        self.command(f"heal {self._target(broker, member)} {node}")

    def bump(self, broker: str) -> None:
        """Add a topic ``topic-<broker>-bump<k>``, bump the DataVersion, re-register."""
        self.command(f"bump {broker}")

    def stats(self) -> Dict[str, Any]:
        for line in self.command("stats"):
            if line.startswith("{"):
                return json.loads(line)
        raise BrokerSimError("no stats line before 'ok stats'")

    def list(self) -> List[Dict[str, Any]]:
        """One dict per member: name, id, addr, state, links (per node: idle/connecting/up/
        closing, with +cut / +cut-close)."""
        out = []
        for line in self.command("list"):
            if not line.startswith("list "):
                continue
            parts = line.split()
            name, mid = parts[1].rsplit("/", 1)
            out.append({"name": name, "id": int(mid), "addr": parts[2], "state": parts[3], "links": parts[4:]})
        return out

    def quit(self, timeout: float = 10.0) -> Optional[Dict[str, Any]]:
        """Exit and return the final stats (the ``exit`` JSON line)."""
        self.close(timeout)
        return self.final_stats


def own_topics(broker: str, count: int) -> Iterable[str]:
    """The simulator's own topic names of one group."""
    return (f"topic-{broker}-{i}" for i in range(count))
