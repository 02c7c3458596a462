#!/usr/bin/env python3
"""Side-by-side NameServer benchmark (cluster-tests/bench/README.md).

Runs every profile against every available server, one server at a time, with the server
pinned to one CPU and the load (nsrv-bench, nsrv-brokersim) to another, and writes
results.md (the table with ratios), results.csv and results.json into --out.

Servers: nsrvd, the ceiling server (nsrv-ceiling: canned replies of the size nsrvd sends),
the Java NameServer 5.3.3 (class path from cluster-tests/compat/prepare-peers.sh) and
rocketmq-rust's NameServer (a binary built by run.sh with cargo). A server that is not
available is listed with the reason instead of figures.

--smoke runs each profile for about a second with small data: it checks the harness (every
server answers, every row is filled, nothing errs), not timings, and writes one
"passed|failed<TAB>bench/<profile>/<server>" line per cell to --tsv.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
import rmq  # noqa: E402
import scale  # noqa: E402  (the fleet profiles: many clients, storm, cost in connections)
import bench_tls  # noqa: E402

SERVER_CPU = "1"
LOAD_CPU = "0"
J17_OPTS = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
            "-XX:+IgnoreUnrecognizedVMOptions"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gc_summary(log: Path) -> dict:
    """Pauses, full collections and pause time in a JVM's -Xlog:gc file: a heap too small
    for the profile shows as many pauses or full GCs (GC thrash)."""
    pauses = full = 0
    ms = 0.0
    text = log.read_text(errors="replace") if log.is_file() else ""
    for line in text.splitlines():
        if " Pause " not in line or not line.rstrip().endswith("ms"):
            continue
        pauses += 1
        full += " Pause Full " in line
        ms += float(line.rsplit(" ", 1)[1][:-2])
    return {"gc_pauses": pauses, "gc_full": full, "gc_pause_ms": round(ms, 1)}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def answers(port: int) -> bool:
    """One GET_ROUTEINFO_BY_TOPIC answered with any code: the server serves."""
    try:
        with rmq.Connection("127.0.0.1", port, timeout=2.0) as c:
            c.request(rmq.RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "bench-probe"})
            return True
    except Exception:  # noqa: BLE001
        return False


# ---- servers ---------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    why_not: str = ""  # not empty: unavailable, and why
    heap: str = ""  # Java only
    proc: Optional[subprocess.Popen] = None
    port: int = 0
    startup_ms: float = 0.0

    def argv(self, workdir: Path, port: int, profile: "Profile") -> List[str]:
        raise NotImplementedError

    def start(self, workdir: Path, profile: "Profile") -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        argv = ["taskset", "-c", SERVER_CPU] + self.argv(workdir, self.port, profile)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=workdir, stdout=open(workdir / "server.log", "ab"),
                                     stderr=subprocess.STDOUT, env={**os.environ, "HOME": str(workdir)},
                                     start_new_session=True)
        deadline = t0 + 120
        while not (bench_tls.answers(self.port) if profile.tls else answers(self.port)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start (see {workdir / 'server.log'})")
            time.sleep(0.005)
        self.startup_ms = (time.monotonic() - t0) * 1000

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def rss_kib(self) -> int:
        # taskset execs the server, so the child is the server itself (for Java: the JVM).
        return rss_kib(self.proc.pid) if self.proc else 0


class Nsrvd(Server):
    def __init__(self, binary: Path, name: str = "nsrvd") -> None:
        super().__init__(name, "" if binary.is_file() else f"{binary} not built")
        self.binary = binary

    def argv(self, workdir: Path, port: int, profile: "Profile") -> List[str]:
        conf = workdir / "nsrvd.properties"
        conf.write_text(f"listenPort={port}\nrocketmqHome={workdir}\nkvConfigPath={workdir}/kv.json\n"
                        f"configStorePath={workdir}/nsrvd.properties\n" + bench_tls.nsrvd_props(profile))
        return [str(self.binary), "-c", str(conf)]


class Ceiling(Server):
    """Replies of the size nsrvd sent in the same profile (profile.reply_bytes)."""

    def __init__(self, binary: Path) -> None:
        super().__init__("ceiling", "" if binary.is_file() else f"{binary} not built")
        self.binary = binary

    def argv(self, workdir: Path, port: int, profile: "Profile") -> List[str]:
        return [str(bench_tls.ceiling_binary(self.binary, profile)), "-p", str(port), "--frame-bytes",
                str(profile.reply_bytes or 512)]


class Java(Server):
    def __init__(self, cp_file: Path) -> None:
        why = "" if cp_file.is_file() else "class path not prepared (run.sh --java)"
        super().__init__("java-5.3.3", why, heap="1g")
        self.cp = cp_file.read_text().strip() if cp_file.is_file() else ""

    def argv(self, workdir: Path, port: int, profile: "Profile") -> List[str]:
        conf = workdir / "namesrv.properties"
        conf.write_text(f"listenPort={port}\nrocketmqHome={workdir}\nkvConfigPath={workdir}/kv.json\n"
                        f"configStorePath={workdir}/namesrv.properties\n")
        heap = profile.java_heap or self.heap
        # The GC log shows whether the heap fits the profile (gc_summary): pauses, full GCs.
        return ["java", "-server", f"-Xms{heap}", f"-Xmx{heap}", f"-Xlog:gc:file={workdir}/gc.log", *J17_OPTS,
                *bench_tls.java_opts(profile),
                f"-Duser.home={workdir}",
                f"-Drocketmq.home.dir={workdir}", "-cp", self.cp, "org.apache.rocketmq.namesrv.NamesrvStartup",
                "-c", str(conf)]


class Rust(Server):
    def __init__(self, binary: Optional[Path], why: str) -> None:
        super().__init__("rocketmq-rust", why if not binary else "")
        self.binary = binary

    def argv(self, workdir: Path, port: int, profile: "Profile") -> List[str]:
        return [str(self.binary), "--listenPort", str(port), "--bindAddress", "127.0.0.1", "--rocketmqHome",
                str(workdir), "--kvConfigPath", str(workdir / "kv.json")]


# ---- profiles --------------------------------------------------------------------------------


@dataclass
class Profile:
    key: str
    title: str
    kind: str  # throughput | latency | register | memory | growth | startup
    sim: List[str] = field(default_factory=list)  # nsrv-brokersim data options
    bench: List[str] = field(default_factory=list)  # nsrv-bench options
    java_heap: str = ""
    reg_topics: int = 0
    reg_compressed: bool = False
    reply_bytes: int = 0  # nsrvd's mean reply size, for the ceiling
    fleet: int = 0  # fleet profiles (scale.py): clients, poll period, seconds polled
    period_ms: int = 0
    window: int = 0
    tls: bool = False  # served over TLS only (bench_tls.py)


def profiles(smoke: bool, fixed_rate: int, fleet_seconds: int = 180) -> List[Profile]:
    s = 10 if smoke else 1  # smoke: a tenth of the data
    ps = [
        Profile("P1", "P1: 10 brokers x 100 topics, 16 conns x 1 in flight", "throughput",
                ["-b", "10", "-t", str(100 // s)], ["-c", "16", "-d", "1", "--brokers", "10", "--topics", str(100 // s)]),
        Profile("P1b", "P1b: same, 16 conns x 8 in flight", "throughput",
                ["-b", "10", "-t", str(100 // s)], ["-c", "16", "-d", "8", "--brokers", "10", "--topics", str(100 // s)]),
        Profile("P2", "P2: 10 brokers x 10,000 shared topics (2.1 KB routes), 256 conns", "throughput",
                ["-b", "10", "-t", "0", "-s", str(10000 // s)], ["-c", "256", "-d", "1", "--shared", str(10000 // s)]),
        Profile("FIXED", f"Fixed rate {fixed_rate}/s (half of Java's P1b maximum), P1 data, 16 conns",
                "latency", ["-b", "10", "-t", str(100 // s)],
                ["-c", "16", "-r", str(fixed_rate), "--brokers", "10", "--topics", str(100 // s)]),
    ]
    for n in ([1000] if smoke else [1000, 10000, 50000]):
        for comp in (False, True):
            ps.append(Profile(f"REG-{n // 1000}k-{'zlib' if comp else 'json'}",
                              f"REGISTER_BROKER {n:,} topics, {'compressed' if comp else 'JSON'}; "
                              "route p99 on other connections", "register",
                              ["-b", "10", "-t", str(100 // s)],
                              ["-c", "4", "-r", "2000", "--brokers", "10", "--topics", str(100 // s)],
                              reg_topics=n, reg_compressed=comp))
    ps += [
        # Brokers start over a ramp, as a fleet does, and wait as long as a slow server needs:
        # what is measured is the memory that holds the data, not how fast it arrived.
        Profile("MEM-1000x100", "Memory: 1,000 brokers x 100 topics", "memory",
                ["-b", str(1000 // s), "-t", "100", "--ramp", str(10000 // s), "--req-timeout-ms", "120000"],
                java_heap="256m"),
        Profile("MEM-100x10000", "Memory: 100 brokers x 10,000 topics", "memory",
                ["-b", str(100 // s), "-t", str(10000 // s), "--ramp", str(30000 // s), "--req-timeout-ms", "120000"],
                java_heap="2g"),
        Profile("START", "Start-up to first answer", "startup"),
    ]
    for n in ([1000] if smoke else [1000, 10000, 100000]):
        ps.append(Profile(f"GROW-{n // 1000}k", f"Cost growth: 10 brokers x {n // 10:,} topics ({n:,}), 16x8",
                          "growth", ["-b", "10", "-t", str(n // 10)],
                          ["-c", "16", "-d", "8", "--brokers", "10", "--topics", str(n // 10)]))
    # The same curve in brokers: 10 (GROW-1k), 100 and 1,000 brokers of 100 topics each, the
    # fleet registering over a ramp of 10 ms a broker as in MEM-1000x100.
    for nb in ([100] if smoke else [100, 1000]):
        ps.append(Profile(f"GROWB-{nb // 10}k", f"Cost growth in brokers: {nb:,} brokers x 100 topics ({nb * 100:,}), "
                          "16x8", "growth",
                          ["-b", str(nb), "-t", "100", "--ramp", str(10 * nb), "--req-timeout-ms", "120000"],
                          ["-c", "16", "-d", "8", "--brokers", str(nb), "--topics", "100"]))
    return ps + scale.profiles(Profile, smoke, fleet_seconds) + bench_tls.profiles(Profile, smoke)


# ---- running ---------------------------------------------------------------------------------


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.tools = Path(args.build) / "src" / "tools"

    def brokersim(self, port: int, opts: List[str], workdir: Path, extra: List[str], name: str) -> subprocess.Popen:
        argv = ["taskset", "-c", LOAD_CPU, str(self.tools / "nsrv-brokersim"), "-n", f"127.0.0.1:{port}",
                "--no-sys-topics", "-d", "3600", "--json-stats", "--quit-on-eof", *opts, *extra]
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=open(workdir / f"{name}.out", "wb"),
                                stderr=open(workdir / f"{name}.log", "wb"))

    @staticmethod
    def wait_ready(sim: subprocess.Popen, workdir: Path, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        out = workdir / f"{name}.out"
        while time.monotonic() < deadline:
            text = out.read_text(errors="replace")
            if "ready ok=" in text:
                if "failed=0" not in text.split("ready ok=", 1)[1].splitlines()[0]:
                    raise RuntimeError(f"registration failed: {text.strip()}")
                return
            if sim.poll() is not None:
                raise RuntimeError(f"brokersim exited: {(workdir / f'{name}.log').read_text()[-500:]}")
            time.sleep(0.05)
        raise RuntimeError("registration did not finish in time")

    @staticmethod
    def sim_stop(sim: subprocess.Popen, workdir: Path, name: str) -> dict:
        try:
            sim.communicate(b"quit\n", timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
        stats = {}
        for line in (workdir / f"{name}.out").read_text(errors="replace").splitlines():
            if line.startswith("{"):
                stats = json.loads(line)
        return stats

    def bench(self, port: int, opts: List[str], seconds: int, warmup: int, server_pid: int = 0,
              tool: str = "nsrv-bench") -> dict:
        argv = ["taskset", "-c", LOAD_CPU, str(self.tools / tool), "-a", f"127.0.0.1:{port}",
                "-s", str(seconds + warmup), "-w", str(warmup), *opts]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The server's CPU time over the measured window (after the warm-up, to the end of
        # the load): CPU per request does not depend on how much of the core the server got,
        # so it compares servers on a machine whose capacity moves, where throughput cannot.
        cpu0 = 0.0
        if server_pid:
            time.sleep(warmup)
            cpu0 = cpu_seconds(server_pid)
        try:
            out, err = proc.communicate(timeout=seconds + warmup + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        cpu1 = cpu_seconds(server_pid) if server_pid else 0.0
        if proc.returncode != 0 or not out.strip():
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {err.strip()[-300:]}")
        res = json.loads(out.strip().splitlines()[-1])
        if server_pid and res.get("requests"):
            res["cpu_us_per_req"] = round((cpu1 - cpu0) * 1e6 / res["requests"], 3)
        return res

    def run_cell(self, srv: Server, p: Profile, workdir: Path) -> dict:
        a = self.a
        warm = a.warmup if srv.name.startswith("java") else min(a.warmup, 2)
        srv.start(workdir, p)
        try:
            res: Dict[str, object] = {"startup_ms": round(srv.startup_ms, 1), "rss_kib_idle": srv.rss_kib()}
            if p.kind == "startup":
                return res
            sim = None
            forwarders: list = []
            if p.sim and srv.name != "ceiling":
                sim = self.brokersim(bench_tls.data_port(srv.port, p, forwarders), p.sim, workdir, [], "data")
                try:
                    self.wait_ready(sim, workdir, "data", self.a.register_timeout)
                except Exception:
                    self.sim_stop(sim, workdir, "data")
                    raise
                res["rss_kib"] = srv.rss_kib()
            if p.kind == "memory":
                # The brokers re-register every 30 s, so one reading may catch a registration
                # (up to 1.9 MB of body and its decode) in flight: the median of readings over
                # 3 s is the memory that holds the data; the highest is shown beside it.
                time.sleep(1)
                rss = []
                for _ in range(7):
                    rss.append(srv.rss_kib())
                    time.sleep(0.5)
                res["rss_kib"] = sorted(rss)[len(rss) // 2]
                res["rss_kib_max"] = max(rss)
            elif p.kind == "tls-memory":
                bench_tls.run_memory(self, srv, p, workdir, res, LOAD_CPU)
            elif p.kind == "register":
                reg = self.brokersim(srv.port, ["-b", "1", "-p", "regbench-", "-t", str(p.reg_topics), "--period",
                                                "1000"] + (["--compressed"] if p.reg_compressed else []),
                                     workdir, [], "reg")
                q = self.bench(srv.port, p.bench, a.seconds, 1)
                st = self.sim_stop(reg, workdir, "reg")
                res.update(q)
                res.update({"reg_count": st.get("lat_count", 0), "reg_p50_us": st.get("lat_p50_us", 0),
                            "reg_p99_us": st.get("lat_p99_us", 0), "reg_failed": st.get("reg_failed", 0)})
            elif p.kind in scale.KINDS:
                res.update(scale.run(self, srv, p, workdir, warm, cpu_seconds))
            else:
                res.update(self.bench(srv.port, p.bench, a.seconds, warm,
                                      srv.proc.pid if p.kind in REPEATED_KINDS else 0, bench_tls.bench_tool(p)))
                res["rss_kib"] = srv.rss_kib()
            if sim:
                self.sim_stop(sim, workdir, "data")
            for fwd in forwarders:
                fwd.close()
            if isinstance(srv, Java):
                res["java_heap"] = p.java_heap or srv.heap
                res.update(gc_summary(workdir / "gc.log"))
            return res
        finally:
            srv.stop()


# Profiles whose cells --repeat interleaves: the ones whose ratio to the ceiling is a target.
REPEATED_KINDS = ("throughput", "growth", *bench_tls.REPEATED_KINDS,
                  # not against the ceiling: P1 beside the fleet against P1 alone, both of nsrvd
                  "clients")


def summarise_runs(rs: List[dict]) -> dict:
    """One server's result from its runs of a profile: the run with the median throughput (so
    its percentiles belong to it), plus every run's throughput ("runs", None for a failed one)
    for the spread and the paired ratios. A single run is returned as it is."""
    if len(rs) == 1:
        return rs[0]
    good = sorted((r for r in rs if "error" not in r and r.get("qps")), key=lambda r: r["qps"])
    if not good:
        return {**rs[-1], "runs": [None] * len(rs)}
    med = dict(good[(len(good) - 1) // 2])  # the lower middle one for an even count: never a mean of two
    med["runs"] = [r.get("qps") if "error" not in r else None for r in rs]
    med["qps_min"], med["qps_max"] = good[0]["qps"], good[-1]["qps"]
    cpus = [r["cpu_us_per_req"] for r in good if r.get("cpu_us_per_req")]
    med["cpu_runs"] = [r.get("cpu_us_per_req") if "error" not in r else None for r in rs]
    if cpus:
        med["cpu_us_per_req"] = median(cpus)
    return med


def paired_ratios(mine: dict, ref: dict) -> List[float]:
    """mine/ref of the runs made in the same round (adjacent in time): the VM's capacity moves
    between rounds more than the effect measured, but less within one round."""
    return [m / r for m, r in zip(mine.get("runs", []), ref.get("runs", [])) if m and r]


def median(xs: List[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


# What the progress line shows of a cell.
SHOWN_KEYS = ("qps", "p99_us", "rss_kib", "startup_ms", "reg_p50_us", "java_heap", "gc_pauses", "gc_full",
              "gc_pause_ms", "error")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (/proc/PID/stat, clock ticks)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def fmt(v: Optional[float], unit: str = "") -> str:
    if v is None:
        return "—"
    if unit == "/s":
        return f"{v / 1000:.1f}k/s" if v >= 1000 else f"{v:.0f}/s"
    if unit == "us":
        return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"
    if unit == "kib":
        return f"{v / 1024:.1f} MB"
    if unit == "ms":
        return f"{v:.0f} ms"
    return f"{v}"


# What each profile's table cell shows, and what it is compared with.
SHOW = {
    "throughput": ("qps", "/s", "ceiling"),
    "growth": ("qps", "/s", "ceiling"),
    "latency": ("p99_us", "us", "java-5.3.3"),
    "register": ("reg_p50_us", "us", "java-5.3.3"),
    "memory": ("rss_kib", "kib", "java-5.3.3"),
    "startup": ("startup_ms", "ms", "java-5.3.3"),
    **scale.SHOW,
    **bench_tls.SHOW,
}


def write_tables(out: Path, servers: List[Server], ps: List[Profile], results: Dict[str, Dict[str, dict]],
                 meta: dict) -> None:
    names = [s.name for s in servers]
    lines = [f"Run {meta['date']} on {meta['machine']}; load average before/after: {meta['load_before']} / "
             f"{meta['load_after']}. Server on CPU {SERVER_CPU}, load generator on CPU {LOAD_CPU}; "
             f"{meta['seconds']} s per cell after a warm-up ({meta['warmup']} s for Java, 2 s for the others). "
             "Java heap: -Xms/-Xmx 1g unless its cell says otherwise. Ratios: throughput vs the ceiling, "
             "the rest vs Java (lower is better)." + (
                 f" Throughput profiles: {meta['repeat']} rounds of {meta['repeat_servers']} one after another, "
                 "each server started afresh per run; a cell shows the median run and the range, the ratio is "
                 "the median of the rounds' ratios (each round's runs adjacent in time)."
                 if meta.get("repeat", 1) > 1 else ""), ""]
    lines.append("| Profile | " + " | ".join(names) + " | nsrvd ratio |")
    lines.append("|---|" + "---|" * (len(names) + 1))
    rows = []
    for p in ps:
        key, unit, ref = SHOW[p.kind]
        cells = []
        for s in servers:
            r = results.get(p.key, {}).get(s.name)
            if s.why_not:
                cells.append("n/a")
            elif r is None and s.name == "ceiling":
                cells.append("—")  # canned replies: only the query profiles
            elif r is None or "error" in r:
                cells.append("failed" + (f": {r['error'][:60]}" if r else ""))
            else:
                extra = ""
                if p.kind in ("throughput", "growth", "latency"):
                    extra = f" (p99 {fmt(r.get('p99_us'), 'us')})" if p.kind != "latency" else ""
                if p.kind == "register":
                    extra = f" (route p99 {fmt(r.get('p99_us'), 'us')})"
                if p.kind == "growth":
                    extra += f", {fmt(r.get('rss_kib'), 'kib')}"
                if r.get("cpu_us_per_req"):
                    extra += f", {r['cpu_us_per_req']:.2f} µs CPU/req"
                if r.get("runs") and len(r["runs"]) > 1:
                    extra += f"; {sum(1 for q in r['runs'] if q)} runs: {fmt(r['qps_min'], '/s')}–" \
                             f"{fmt(r['qps_max'], '/s')}"
                if p.kind == "memory" and r.get("rss_kib_max", 0) > r.get("rss_kib", 0):
                    extra += f" (max {fmt(r['rss_kib_max'], 'kib')})"
                if p.kind == "memory" and r.get("java_heap"):
                    # The heap it was given, and whether it fitted (GC pauses while registering).
                    extra += (f" (-Xmx{r['java_heap']}: {r.get('gc_pauses', 0)} GC pauses, "
                              f"{r.get('gc_full', 0)} full, {r.get('gc_pause_ms', 0):.0f} ms)")
                extra += bench_tls.cell_extra(p, r)
                if p.kind == "register" and not r.get("reg_count"):
                    cells.append(f"failed: all {r['reg_failed']} registrations refused" if r.get("reg_failed")
                                 else "no registration answered in the window")
                    continue
                cells.append(fmt(r.get(key), unit) + extra)
        mine = results.get(p.key, {}).get("nsrvd") or {}
        other = results.get(p.key, {}).get(ref) or {}
        ratio = ""
        pairs = paired_ratios(mine, other) if unit == "/s" else []
        if len(pairs) > 1:
            ratio = f"{100 * median(pairs):.0f} % of {ref} (median of {len(pairs)} pairs: " \
                    f"{100 * min(pairs):.0f}–{100 * max(pairs):.0f} %)"
            cpu_pairs = [o / m for m, o in zip(mine.get("cpu_runs", []), other.get("cpu_runs", [])) if m and o]
            if len(cpu_pairs) > 1:
                ratio += f"; by server CPU per request {100 * median(cpu_pairs):.0f} %"
        elif mine.get(key) and other.get(key):
            ratio = f"{100 * mine[key] / other[key]:.0f} % of {ref}" if unit == "/s" else \
                f"{mine[key] / other[key]:.3g}× {ref}"
        ratio += bench_tls.extra_ratio(p, results)
        lines.append(f"| {p.title} | " + " | ".join(cells) + f" | {ratio} |")
        for s in servers:
            r = results.get(p.key, {}).get(s.name) or {}
            rows.append({"profile": p.key, "server": s.name, **{k: r.get(k, "") for k in
                         ("qps", "p50_us", "p99_us", "p999_us", "reply_bytes", "errors", "rss_kib", "rss_kib_max",
                          "startup_ms", "reg_count", "reg_p50_us", "reg_p99_us", "java_heap", "gc_pauses", "gc_full",
                          "gc_pause_ms", "error", "qps_min", "qps_max", "cpu_us_per_req")},
                         "runs": ";".join("" if q is None else f"{q:.0f}" for q in r.get("runs", [])),
                         "unavailable": s.why_not})
    unavailable = [f"- {s.name}: {s.why_not}" for s in servers if s.why_not]
    if unavailable:
        lines += ["", "Not measured:"] + unavailable
    lines += scale.summary(ps, servers, results)
    (out / "results.md").write_text("\n".join(lines) + "\n")
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build directory with src/nsrvd and src/tools")
    ap.add_argument("--out", required=True)
    ap.add_argument("--java-cp", default="", help="the Java NameServer 5.3.3 class path file")
    ap.add_argument("--rust-bin", default="", help="rocketmq-rust NameServer binary")
    ap.add_argument("--rust-why", default="not built (run.sh --rust)")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=10, help="Java's warm-up; others get at most 2 s")
    ap.add_argument("--fixed-rate", type=int, default=0, help="default: half of Java's P1b rate, else 20000")
    ap.add_argument("--only", default="", help="comma-separated profile keys")
    ap.add_argument("--servers", default="nsrvd,nsrvd-base,ceiling,java-5.3.3,rocketmq-rust")
    ap.add_argument("--register-timeout", type=float, default=240, help="seconds for a profile's data")
    ap.add_argument("--max-minutes", type=float, default=50,
                    help="cells not started by then are skipped (listed as such): the whole run is bounded "
                    "by this plus one cell")
    ap.add_argument("--java-heap", default="", help="KEY=SIZE,...: the Java heap (-Xms/-Xmx) for these profiles "
                    "(default 1g; the memory profiles have their own)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="throughput profiles: N rounds, each running every --repeat-servers server once in turn "
                    "(nsrvd, ceiling, nsrvd, ceiling, ...); the table shows each server's median and the ratio of "
                    "the paired runs")
    ap.add_argument("--repeat-servers", default="nsrvd,nsrvd-base,ceiling",
                    help="the servers measured in every round; the others only in the first")
    ap.add_argument("--nsrvd-base", default="", help="another nsrvd binary, measured as server nsrvd-base in the same "
                    "rounds: before/after comparisons in one run")
    ap.add_argument("--fleet-seconds", type=int, default=180,
                    help="CLIENTS: seconds the 18,000 clients poll after all are connected")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--tsv", default="", help="smoke: one passed/failed line per cell")
    a = ap.parse_args()
    if a.smoke:
        a.seconds, a.warmup = 1, 1
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    build = Path(a.build).resolve()
    a.build = str(build)
    rust_bin = Path(a.rust_bin) if a.rust_bin and Path(a.rust_bin).is_file() else None
    servers: List[Server] = [Nsrvd(build / "src" / "nsrvd"), Ceiling(build / "src" / "tools" / "nsrv-ceiling"),
                             Java(Path(a.java_cp)) if a.java_cp else Java(Path("/nonexistent")),
                             Rust(rust_bin, a.rust_why)]
    if not a.java_cp:
        servers[2].why_not = "not requested (run.sh --java)"
    if a.nsrvd_base:
        # Another nsrvd build (e.g. before a change) measured beside this one: --servers and
        # --repeat-servers name it nsrvd-base.
        servers.insert(1, Nsrvd(Path(a.nsrvd_base).resolve(), "nsrvd-base"))
    servers = [s for s in servers if s.name in a.servers.split(",")]
    for s in servers:
        if s.why_not:
            print(f"{s.name}: not measured: {s.why_not}", flush=True)
    runner = Runner(a)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {cpu_model()}, Linux {platform.release()}",
            "load_before": load_average(), "seconds": a.seconds, "warmup": a.warmup}
    results: Dict[str, Dict[str, dict]] = {}
    ps = profiles(a.smoke, a.fixed_rate or 20000, a.fleet_seconds)
    only = set(a.only.split(",")) - {""}
    ps = [p for p in ps if not only or p.key in only]
    heaps = dict(kv.split("=", 1) for kv in a.java_heap.split(",") if kv)
    for p in ps:
        p.java_heap = heaps.get(p.key, p.java_heap)
    repeat_servers = set(a.repeat_servers.split(","))
    meta["repeat"] = a.repeat
    meta["repeat_servers"] = ", ".join(s.name for s in servers if s.name in repeat_servers)
    tsv = []
    deadline = time.monotonic() + a.max_minutes * 60
    for p in ps:
        if p.key == "FIXED" and not a.fixed_rate:
            java = results.get("P1b", {}).get("java-5.3.3", {})
            rate = int(java["qps"] / 2) if java.get("qps") else 20000
            p.bench[p.bench.index("-r") + 1] = str(rate)
            p.title = p.title.replace("20000/s", f"{rate}/s")
        rounds = a.repeat if p.kind in REPEATED_KINDS else 1
        runs: Dict[str, List[dict]] = {}
        for rnd in range(rounds):
            for s in servers:
                if s.why_not:
                    continue
                if rnd > 0 and s.name not in repeat_servers:
                    continue  # measured once: its ratio is not the one the noise hides
                if a.smoke and s.name in ("java-5.3.3", "rocketmq-rust") and p.key != "P1":
                    continue  # the smoke only checks that they run: it stays short
                if s.name == "ceiling" and p.kind not in ("throughput", "growth", "startup", *bench_tls.CEILING_KINDS):
                    continue  # canned replies say nothing about registrations or memory
                if s.name == "ceiling":
                    p.reply_bytes = int(next((r["reply_bytes"] for r in runs.get("nsrvd", []) if r.get("reply_bytes")),
                                             0))
                workdir = out / "work" / p.key / s.name / (f"run{rnd + 1}" if rounds > 1 else "")
                t0 = time.monotonic()
                if t0 > deadline:
                    r = {"error": f"not run: --max-minutes {a.max_minutes:g} spent"}
                else:
                    try:
                        r = runner.run_cell(s, p, workdir)
                    except Exception as e:  # noqa: BLE001
                        r = {"error": str(e)}
                runs.setdefault(s.name, []).append(r)
                print(f"{p.key:16} {s.name:14} {f'{rnd + 1}/{rounds}' if rounds > 1 else '':5} "
                      f"{time.monotonic() - t0:5.1f}s {json.dumps({k: r[k] for k in r if k in SHOWN_KEYS})}",
                      flush=True)
        for name, rs in runs.items():
            r = scale.summarise_runs(rs) if p.kind == "clients" else summarise_runs(rs)
            ok = "error" not in r and not r.get("errors") and not r.get("reg_failed")
            results.setdefault(p.key, {})[name] = r
            tsv.append(f"{'passed' if ok else 'failed'}\tbench/{p.key}/{name}")
    meta["load_after"] = load_average()
    write_tables(out, servers, ps, results, meta)
    if a.tsv:
        Path(a.tsv).write_text("\n".join(tsv) + "\n")
    print((out / "results.md").read_text())
    return 0 if all(line.startswith("passed") for line in tsv) else 1


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
