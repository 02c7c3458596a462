"""The benchmark's TLS profiles (cluster-tests/bench/README.md "TLS"), hooked into bench.py.

Every server of a TLS profile serves TLS only (tls.server.mode=enforcing; the Java NameServer
with -Dtls.server.mode=enforcing, its test mode's self-signed certificate, as nsrvd's), and the
"ceiling" column is nsrv-tls-ceiling: nsrv-ceiling's canned replies through OpenSSL with
nsrvd's own SSL context. The load is nsrv-tls-bench (TLS 1.3, OpenSSL client).

* TLS-P1b, TLS-P2: P1b's and P2's data and load over TLS (throughput; rounds and ratios as
  for P1b and P2).
* TLS-HS-full, TLS-HS-resumed: handshakes per second, C slots each looping connect,
  handshake, one route query, close; "resumed" offers the ticket of the slot's previous
  connection. The server's CPU per handshake is beside it.
* TLS-IDLE: the server's RSS over N idle TLS connections (each after its handshake and one
  answered query), per connection.

The data reaches an enforcing server through TlsForwarder: nsrv-brokersim speaks plaintext
to it, and it to the server over TLS.
"""
from __future__ import annotations

import asyncio
import json
import signal
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List

import rmq

# Kinds the ceiling serves besides bench.py's; kinds whose ratio to the ceiling is a target.
CEILING_KINDS = ("tls-handshake",)
REPEATED_KINDS = ("tls-handshake",)
# bench.py's SHOW: the cell's figure, its unit, what the ratio compares it with.
SHOW = {
    "tls-handshake": ("qps", "/s", "ceiling"),
    "tls-memory": ("rss_per_conn_b", "", "java-5.3.3"),
}
KEYS = ("P1b", "P2", "HS-full", "HS-resumed", "IDLE")


def profiles(profile_cls, smoke: bool) -> list:
    s = 10 if smoke else 1
    idle = 200 if smoke else 2000
    return [
        profile_cls("TLS-P1b", "TLS-P1b: P1b over TLS 1.3 (16 conns x 8)", "throughput",
                    ["-b", "10", "-t", str(100 // s)], ["-c", "16", "-d", "8", "--brokers", "10", "--topics",
                                                       str(100 // s)], tls=True),
        profile_cls("TLS-P2", "TLS-P2: P2 over TLS 1.3 (256 conns x 1)", "throughput",
                    ["-b", "10", "-t", "0", "-s", str(10000 // s)], ["-c", "256", "-d", "1", "--shared",
                                                                      str(10000 // s)], tls=True),
        profile_cls("TLS-HS-full", "TLS-HS-full: full TLS 1.3 handshakes/s (8 slots: connect, handshake, "
                    "1 query, close)", "tls-handshake", [], ["-c", "8", "--handshakes", "full"], tls=True),
        profile_cls("TLS-HS-resumed", "TLS-HS-resumed: resumed (ticket) handshakes/s, same loop",
                    "tls-handshake", [], ["-c", "8", "--handshakes", "resumed"], tls=True),
        profile_cls("TLS-IDLE", f"TLS-IDLE: RSS per idle TLS connection ({idle:,} held)", "tls-memory", [],
                    ["--hold", str(idle)], tls=True),
    ]


def nsrvd_props(profile) -> str:
    return "tls.server.mode=enforcing\ntls.config.file=\n" if getattr(profile, "tls", False) else ""


def java_opts(profile) -> List[str]:
    # Java's TlsSystemConfig: test mode (its default) serves a self-signed certificate.
    return ["-Dtls.server.mode=enforcing", "-Dtls.test.mode.enable=true",
            "-Dtls.config.file=/nonexistent"] if getattr(profile, "tls", False) else []


def ceiling_binary(binary: Path, profile) -> Path:
    return binary.with_name("nsrv-tls-ceiling") if getattr(profile, "tls", False) else binary


def bench_tool(profile) -> str:
    return "nsrv-tls-bench" if getattr(profile, "tls", False) else "nsrv-bench"


def client_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def answers(port: int) -> bool:
    """One route query answered over TLS with any code: the server serves TLS."""
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        sock = client_context().wrap_socket(raw)
        with rmq.Connection("127.0.0.1", port, timeout=2.0, sock=sock) as c:
            c.request(rmq.RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "bench-probe"})
            return True
    except Exception:  # noqa: BLE001
        return False


class TlsForwarder:
    """A plaintext port on 127.0.0.1 whose connections are carried to `target` over TLS: how
    nsrv-brokersim registers a profile's data with a server that refuses plaintext."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self._carry, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    async def _carry(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target, ssl=client_context())
        except OSError:
            w.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, ssl.SSLError, ConnectionError):
                pass
            finally:
                dst.close()

        try:
            await asyncio.gather(pipe(r, uw), pipe(ur, w))
        except asyncio.CancelledError:
            pass  # close(): the cell is over; a cancelled handler would be logged by asyncio

    def close(self) -> None:
        async def shutdown() -> None:
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()


def data_port(port: int, profile, keep: list) -> int:
    """The port nsrv-brokersim registers with: a forwarder's for a TLS profile (kept in
    `keep` until the cell ends)."""
    if not getattr(profile, "tls", False):
        return port
    fwd = TlsForwarder(port)
    keep.append(fwd)
    return fwd.port


def run_memory(runner, srv, profile, workdir: Path, res: Dict[str, object], load_cpu: str) -> None:
    """TLS-IDLE: the server's RSS before and with N idle TLS connections held open."""
    n = int(profile.bench[profile.bench.index("--hold") + 1])
    time.sleep(0.5)
    before = median_rss(srv)
    argv = ["taskset", "-c", load_cpu, str(runner.tools / "nsrv-tls-bench"), "-a", f"127.0.0.1:{srv.port}",
            "-s", "600", "--shared", "1", *profile.bench]
    holder = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(workdir / "holder.log", "wb"), text=True)
    try:
        line = holder.stdout.readline()  # {"held":N,...} once all are up, or EOF if it failed
        if not line.startswith('{"held"'):
            holder.wait(10)
            raise RuntimeError(f"nsrv-tls-bench --hold failed: {(workdir / 'holder.log').read_text()[-300:]}")
        held = json.loads(line)
        time.sleep(1)
        with_conns = median_rss(srv)
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGTERM)
        try:
            holder.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.communicate()
    res.update({"rss_kib_before": before, "rss_kib": with_conns, "held": n, "connect_s": held.get("connect_s"),
                "rss_per_conn_b": round((with_conns - before) * 1024 / n)})


def median_rss(srv) -> int:
    rss = []
    for _ in range(5):
        rss.append(srv.rss_kib())
        time.sleep(0.2)
    return sorted(rss)[len(rss) // 2]


def cell_extra(profile, r: dict) -> str:
    """What a TLS cell shows beside its figure."""
    if profile.kind == "tls-handshake":
        return f" ({r.get('resumed', 0)} of {r.get('handshakes', 0)} resumed, p99 {r.get('p99_us', 0) / 1000:.1f} ms)"
    if profile.kind == "tls-memory":
        return f" B/conn ({(r.get('rss_kib', 0) - r.get('rss_kib_before', 0)) / 1024:.1f} MB over " \
               f"{r.get('held', 0):,}, up in {r.get('connect_s', 0)} s)"
    return ""


def extra_ratio(profile, results: Dict[str, Dict[str, dict]]) -> str:
    """Handshakes: nsrvd against Java too (the target is both the ceiling's and Java's)."""
    if profile.kind != "tls-handshake":
        return ""
    mine = results.get(profile.key, {}).get("nsrvd") or {}
    java = results.get(profile.key, {}).get("java-5.3.3") or {}
    if mine.get("qps") and java.get("qps"):
        return f"; {mine['qps'] / java['qps']:.1f}× java-5.3.3"
    return ""

