"""Start, watch and stop nsrvd processes for black-box tests (127.0.0.1 only)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from testenv import knob

BOOT_RE = re.compile(r"The Name Server boot success\. serializeType=JSON, address (?:127\.0\.0\.1|0\.0\.0\.0):(\d+)")
# "WARNING: ThreadSanitizer" is how every TSan report opens (a data race, a lock-order
# inversion, a signal-unsafe call in a handler): TSan calls them warnings, not errors.
SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "runtime error:",
    "ERROR: LeakSanitizer",
    "WARNING: ThreadSanitizer",
    "ERROR: ThreadSanitizer",
)


SANITIZER_BUILD_MULT = 4.0
_binary_mult = 1.0


def use_binary(binary: str) -> None:
    """Sets the default wait scale from the binary under test: x4 for a sanitizer build."""
    global _binary_mult
    _binary_mult = SANITIZER_BUILD_MULT if binary_has_sanitizer(binary) else 1.0


def timeout_mult() -> float:
    """Scale factor for every wait: x4 for a sanitizer binary (see use_binary), or env
    NSRV_TEST_TIMEOUT_MULT if larger (refused under CI=true, see testenv.py)."""
    try:
        env = float(knob("NSRV_TEST_TIMEOUT_MULT", "1"))
    except ValueError:
        env = 1.0
    return max(1.0, _binary_mult, env)


def scaled(seconds: float) -> float:
    return seconds * timeout_mult()


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 a moment ago (gossip uses the number for
    both)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                try:
                    u.bind(("127.0.0.1", port))
                except OSError:
                    continue
        return port
    raise RuntimeError("no free TCP+UDP port")


def write_properties(path: Path, props: Mapping[str, object]) -> None:
    lines = []
    for k, v in props.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"{k}={v}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _binary_contains(binary: str, marker: bytes) -> bool:
    try:
        with open(binary, "rb") as f:
            return marker in f.read()
    except OSError:
        return False


def binary_has_asan(binary: str) -> bool:
    return _binary_contains(binary, b"AddressSanitizer")


def binary_has_tsan(binary: str) -> bool:
    return _binary_contains(binary, b"ThreadSanitizer")


def binary_has_sanitizer(binary: str) -> bool:
    """ASan or TSan: both slow every request several times over (TSan 5-15x)."""
    return binary_has_asan(binary) or binary_has_tsan(binary)


class NsrvdProcess:
    """One nsrvd process with its own temp dir, config file and captured output files."""

    def __init__(
        self,
        binary: str,
        workdir: Path,
        config: Optional[Mapping[str, object]] = None,
        *,
        port: Optional[int] = None,
        extra_args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        raw_config: Optional[str] = None,
        name: str = "nsrvd",
    ) -> None:
        self.binary = binary
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = port if port is not None else free_port()
        self.kv_path = self.workdir / "namesrv" / "kvConfig.json"
        self.config_path = self.workdir / f"{name}.properties"
        self.config: Dict[str, object] = self.default_config()
        if config:
            self.config.update(config)
        if raw_config is not None:
            self.config_path.write_text(raw_config, encoding="utf-8")
        else:
            write_properties(self.config_path, self.config)
        self.extra_args = list(extra_args)
        self.env = dict(os.environ)
        self.env["HOME"] = str(self.workdir)
        if env:
            self.env.update(env)
        self.stdout_path = self.workdir / f"{name}.stdout"
        self.stderr_path = self.workdir / f"{name}.stderr"
        self.proc: Optional[subprocess.Popen] = None
        self.returncode: Optional[int] = None
        self._stopped_by_test = False
        self._signalled_to_stop = False  # the test sent SIGTERM/SIGINT/SIGKILL itself

    def default_config(self) -> Dict[str, object]:
        return {
            "listenPort": self.port,
            "bindAddress": "127.0.0.1",
            "kvConfigPath": str(self.kv_path),
            "configStorePath": str(self.config_path),
        }

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, wait_boot: bool = True, boot_timeout: float = 10.0) -> "NsrvdProcess":
        args = [self.binary, "-c", str(self.config_path), *self.extra_args]
        self._out = open(self.stdout_path, "wb")
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            env=self.env,
            cwd=str(self.workdir),
            start_new_session=True,
        )
        if wait_boot:
            self.wait_boot(boot_timeout)
        return self

    def output(self) -> str:
        return self.stdout() + self.stderr()

    def stdout(self) -> str:
        try:
            return self.stdout_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def wait_boot(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            m = BOOT_RE.search(self.output())
            if m:
                if int(m.group(1)) != self.port:
                    raise AssertionError(f"boot line names port {m.group(1)}, expected {self.port}")
                return
            if self.proc is not None and self.proc.poll() is not None:
                self.returncode = self.proc.returncode
                raise AssertionError(
                    f"nsrvd exited with {self.proc.returncode} before booting:\n{self.tail()}"
                )
            time.sleep(0.02)
        raise AssertionError(f"no boot line within {scaled(timeout):.1f}s:\n{self.tail()}")

    def tail(self, n: int = 4000) -> str:
        return f"--- stdout ---\n{self.stdout()[-n:]}\n--- stderr ---\n{self.stderr()[-n:]}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int = signal.SIGTERM) -> None:
        if self.alive():
            if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
                self._signalled_to_stop = True
            self.proc.send_signal(sig)

    def died_unexpectedly(self) -> bool:
        """It exited although the test neither stopped nor signalled it (a crash, an abort,
        a sanitizer report, or an exit nobody asked for)."""
        return (
            self.proc is not None
            and self.proc.poll() is not None
            and not self._stopped_by_test
            and not self._signalled_to_stop
        )

    def wait(self, timeout: float) -> Optional[int]:
        """Exit code, or None if still running after ``timeout`` (scaled)."""
        assert self.proc is not None
        try:
            self.returncode = self.proc.wait(scaled(timeout))
        except subprocess.TimeoutExpired:
            return None
        self._close_files()
        return self.returncode

    def terminate(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM and wait; returns the exit code or None on timeout (then the process is
        killed so nothing leaks)."""
        self._stopped_by_test = True
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc is None:
            self.kill()
        return rc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self._close_files()

    def _close_files(self) -> None:
        for f in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if f is not None and not f.closed:
                f.close()

    def sanitizer_errors(self) -> List[str]:
        text = self.output()
        return [m for m in SANITIZER_MARKERS if m in text]

    def rss_kb(self) -> int:
        """Resident set size from /proc/<pid>/status (kB)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return -1


def run_cli(binary: str, args: Sequence[str], *, workdir: Path, timeout: float = 10.0) -> subprocess.CompletedProcess:
    """Run nsrvd to completion (for -p, -h, --version, keygen, status and bad configs). Any
    sanitizer report in its output is an AssertionError, whatever the exit code."""
    env = dict(os.environ)
    env["HOME"] = str(workdir)
    cp = subprocess.run(
        [binary, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        cwd=str(workdir),
        timeout=scaled(timeout),
    )
    text = cp.stdout.decode(errors="replace") + cp.stderr.decode(errors="replace")
    found = [m for m in SANITIZER_MARKERS if m in text]
    if found:
        raise AssertionError(f"sanitizer report {found} from nsrvd {' '.join(args)}:\n{text[-20000:]}")
    return cp


def keygen(binary: str, path: Path, node_id: int, key_id: int = 1) -> str:
    """Runs `nsrvd keygen`; returns the peer-key token ``id:keyId:base64``."""
    r = run_cli(binary, ["keygen", "-o", str(path), "-n", str(node_id), "-k", str(key_id)], workdir=Path(path).parent)
    out = r.stdout.decode()
    if r.returncode != 0:
        raise RuntimeError(f"nsrvd keygen failed ({r.returncode}): {out} {r.stderr.decode()}")
    item = out.strip()
    if out.count("\n") != 1 or item.split(":")[:2] != [str(node_id), str(key_id)]:
        raise RuntimeError(f"keygen's stdout is not one {node_id}:{key_id}:PUBLIC item: {out!r}")
    return item
