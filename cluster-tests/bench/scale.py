"""The fleet profiles of the side-by-side benchmark (cluster-tests/bench/README.md, "Many
clients"): many client connections polling routes while P1 runs beside them, a reconnect storm,
and the cost curve in connections. bench.py starts the server and registers the data (10
brokers x 100 topics, as P1); this module drives nsrv-fleet (src/tools/fleet.c) and nsrv-bench,
each in its own process on the load CPU, and summarises.
"""
from __future__ import annotations

import functools
import json
import subprocess
from statistics import median
import time
from pathlib import Path
from typing import Dict, List

KINDS = ("clients", "storm", "conncost")
# What a cell of the main table shows (bench.py's SHOW): the fleet's route p99, or the
# storm's time until every client had its first answer; ratios against Java.
SHOW = {
    "clients": ("p99_us", "us", "java-5.3.3"),
    "storm": ("all_answered_ms", "ms", "java-5.3.3"),
    "conncost": ("rss_kib", "kib", "java-5.3.3"),
}
DATA = ["-b", "10", "-t", "100"]
TOPICS = ["--brokers", "10", "--topics", "100"]
P1 = ["-c", "16", "-d", "1", *TOPICS]
CURVE = (1000, 6000, 18000)
# nsrv-fleet's CPU on the load CPU above which a cell is refused: it sleeps until a round is due
# or an answer arrives (about 4 % at 18,000 clients polling every 30 s, 6 % in the smoke's
# 900 every second); a fleet that spins takes P1's generator's CPU and delays its own queries.
FLEET_CPU_MAX_PCT = 25


def profiles(profile_cls, smoke: bool, fleet_seconds: int) -> list:
    """CLIENTS (18,000 polling, P1 beside), STORM (18,000 within a second), CONNS-N (the cost
    curve). Smoke: a twentieth of the clients, polling every second, for a few seconds."""
    d = 20 if smoke else 1
    period = 1000 if smoke else 30000
    window = 4 if smoke else fleet_seconds
    ps = [profile_cls("CLIENTS", f"Many clients: {18000 // d:,} connections polling 3 routes every {period // 1000} s "
                      f"for {window} s, P1 beside", "clients", DATA, P1),
          profile_cls("STORM", f"Reconnect storm: {18000 // d:,} clients connect within 1 s, each asking a route",
                      "storm", DATA)]
    for n in CURVE[:1] if smoke else CURVE:
        ps.append(profile_cls(f"CONNS-{n // 1000}k", f"Cost in connections: {n // d:,} polling, P1 beside", "conncost",
                              DATA, P1))
    for p in ps:
        p.fleet = {"CLIENTS": 18000, "STORM": 18000}.get(p.key, 0) or int(p.key[6:-1]) * 1000
        p.fleet //= d
        p.period_ms = period
        p.window = window
    return ps


@functools.lru_cache(maxsize=None)
def realtime() -> bool:
    """Whether this user may run the fleet at a real-time priority (chrt -f 1: root or
    CAP_SYS_NICE). The fleet stands for thousands of client machines; sharing the load CPU
    with P1's generator, which is never idle, it would otherwise wait up to a scheduler slice
    (milliseconds) to send a due query or read an answer, and that wait would be charged to
    the server. It uses a few per cent of the CPU and never spins, so P1 loses no more."""
    try:
        return subprocess.run(["chrt", "-f", "1", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def fleet(runner, port: int, workdir: Path, args: List[str]) -> subprocess.Popen:
    from bench import LOAD_CPU  # noqa: PLC0415 (bench imports this module)
    prio = ["chrt", "-f", "1"] if realtime() else []
    argv = ["taskset", "-c", LOAD_CPU, *prio, str(runner.tools / "nsrv-fleet"), "-a", f"127.0.0.1:{port}",
            *TOPICS, *args]
    return subprocess.Popen(argv, stdout=open(workdir / "fleet.out", "wb"), stderr=open(workdir / "fleet.log", "wb"))


def fleet_lines(workdir: Path) -> List[dict]:
    text = (workdir / "fleet.out").read_text(errors="replace")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def wait_connected(proc: subprocess.Popen, workdir: Path, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for ev in fleet_lines(workdir):
            if ev.get("event") == "connected":
                return ev
        if proc.poll() is not None:
            raise RuntimeError(f"nsrv-fleet exited: {(workdir / 'fleet.log').read_text()[-300:]}")
        time.sleep(0.05)
    raise RuntimeError("nsrv-fleet did not connect in time")


def fleet_result(proc: subprocess.Popen, workdir: Path, timeout: float) -> dict:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait(30)
    res = [ev for ev in fleet_lines(workdir) if "mode" in ev]
    if not res:
        raise RuntimeError(f"nsrv-fleet gave no result: {(workdir / 'fleet.log').read_text()[-300:]}")
    return res[-1]


def run(runner, srv, p, workdir: Path, warm: int, cpu_seconds) -> Dict[str, object]:
    """One cell of a fleet profile against a started server holding the data."""
    a = runner.a
    res: Dict[str, object] = {"clients": p.fleet, "rss_kib_data": srv.rss_kib()}
    if p.kind == "storm":
        cpu0 = cpu_seconds(srv.proc.pid)
        proc = fleet(runner, srv.port, workdir, ["--mode", "storm", "-n", str(p.fleet), "--storm-ms", "1000",
                                                 "-s", "60"])
        f = fleet_result(proc, workdir, 90)
        res.update({k: f[k] for k in ("all_answered_ms", "p50_us", "p99_us", "p999_us", "max_us", "answered",
                                      "unanswered", "connect_failed", "dropped")})
        res["errors"] = f["errors"] + f["connect_failed"]
        res["server_cpu_s"] = round(cpu_seconds(srv.proc.pid) - cpu0, 2)
        res["rss_kib"] = srv.rss_kib()
        return res
    if p.kind == "clients":
        before = runner.bench(srv.port, p.bench, a.seconds, warm, srv.proc.pid)
        p1_seconds, window = p.window - 3, p.window
    else:
        p1_seconds, window = a.seconds, a.seconds + 4
    rss_before = srv.rss_kib()
    proc = fleet(runner, srv.port, workdir, ["--mode", "poll", "-n", str(p.fleet), "-s", str(window),
                                             "--period-ms", str(p.period_ms)])
    try:
        ev = wait_connected(proc, workdir, 120)
        res["connect_ms"] = ev["connect_ms"]
        cpu0, t0, fleet_cpu0 = cpu_seconds(srv.proc.pid), time.monotonic(), cpu_seconds(proc.pid)
        time.sleep(1)
        rss_idle = srv.rss_kib()
        beside = runner.bench(srv.port, p.bench, max(p1_seconds, 2), 1, srv.proc.pid)
        rss = srv.rss_kib()
        elapsed = time.monotonic() - t0
        cpu = (cpu_seconds(srv.proc.pid) - cpu0) / elapsed
        fleet_cpu = (cpu_seconds(proc.pid) - fleet_cpu0) / elapsed
    finally:
        f = fleet_result(proc, workdir, window + 60)
    res.update({f"p1_{k}": beside[k] for k in ("qps", "p50_us", "p99_us", "p999_us", "cpu_us_per_req")})
    res.update({k: f[k] for k in ("p50_us", "p99_us", "p999_us", "max_us", "answered", "connect_failed", "dropped",
                                  "late")})
    res["errors"] = f["errors"] + f["connect_failed"] + f["dropped"] + beside.get("errors", 0)
    res["rss_kib"] = rss
    res["rss_kib_idle"] = rss_idle
    # What the connections added: the idle reading (all connected, before P1 ran) less the
    # reading before the fleet, per connection.
    res["rss_bytes_per_conn"] = round((rss_idle - rss_before) * 1024 / p.fleet, 1)
    res["server_cpu_pct"] = round(100 * cpu, 1)
    res["fleet_cpu_pct"] = round(100 * fleet_cpu, 1)
    res["fleet_realtime"] = realtime()
    if res["fleet_cpu_pct"] > FLEET_CPU_MAX_PCT:
        raise RuntimeError(f"nsrv-fleet used {res['fleet_cpu_pct']} % of the load CPU (at most {FLEET_CPU_MAX_PCT} "
                           f"% expected: it polls {p.fleet * 3000 // p.period_ms:,} routes/s); P1 beside it would "
                           f"measure the load generator, not the server: {json.dumps(res)}")
    if p.kind == "clients":
        # P1 alone once more, after the fleet has gone: the VM's speed drifts over the minutes
        # of polling, so beside is judged against both ends of its window.
        after = runner.bench(srv.port, p.bench, a.seconds, 1, srv.proc.pid)
        alone = [before, after]
        res["p1_alone_runs"] = [r["qps"] for r in alone]
        res["p1_alone_qps"] = round(sum(r["qps"] for r in alone) / 2)
        res.update({f"p1_alone_{k}": max(r[k] for r in alone) for k in ("p50_us", "p99_us", "p999_us")})
        res["p1_ratio"] = round(res["p1_qps"] / res["p1_alone_qps"], 3)
        # The same by the server's CPU per P1 request (beside: the fleet's queries included),
        # which the VM's drifting speed moves far less than throughput.
        cpus = [r["cpu_us_per_req"] for r in alone if r.get("cpu_us_per_req")]
        res["p1_alone_cpu_us_per_req"] = round(sum(cpus) / len(cpus), 3) if cpus else None
        if cpus and res.get("p1_cpu_us_per_req"):
            res["p1_cpu_ratio"] = round(res["p1_alone_cpu_us_per_req"] / res["p1_cpu_us_per_req"], 3)
    return res


def summarise_runs(rs: List[dict]) -> dict:
    """CLIENTS over --repeat rounds: the round with the median P1 ratio, with the median of
    every round's ratios and fleet p99 and their ranges (a round is seconds of P1 and minutes of
    polling; the machine's speed moves between rounds)."""
    good = [r for r in rs if "error" not in r and r.get("p1_ratio")]
    if not good:
        return rs[-1]
    if len(rs) == 1:
        return good[0]
    med = dict(sorted(good, key=lambda r: r["p1_ratio"])[(len(good) - 1) // 2])
    for key in ("p1_ratio", "p1_cpu_ratio", "p99_us", "p50_us", "p999_us", "p1_p99_us"):
        vals = [r[key] for r in good if r.get(key) is not None]
        if vals:
            med[f"{key}_runs"] = vals
            med[key] = round(median(vals), 3)
    med["rounds"] = len(rs)
    med["errors"] = sum(r.get("errors", 0) for r in good) + len(rs) - len(good)
    return med


def fmt_us(v) -> str:
    if v in (None, ""):
        return "—"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"


def summary(ps: list, servers: list, results: Dict[str, Dict[str, dict]]) -> List[str]:
    """The fleet profiles' figures, server by server, and the connection cost curve's fit
    (least squares over the CONNS-N cells, extrapolated to 100,000 connections)."""
    keys = [p.key for p in ps if p.kind in KINDS]
    if not keys:
        return []
    lines = ["", "### Fleet profiles", ""]
    names = [s.name for s in servers if not s.why_not and s.name != "ceiling"]
    for p in ps:
        if p.kind not in KINDS:
            continue
        for name in names:
            r = results.get(p.key, {}).get(name)
            if not r:
                continue
            if "error" in r:
                lines.append(f"- {p.key} {name}: failed: {r['error'][:200]}")
                continue
            rss = f"RSS {r.get('rss_kib', 0) / 1024:.1f} MB"
            if p.kind == "storm":
                last = f"the last after {r['all_answered_ms']:.0f} ms" if r["all_answered_ms"] >= 0 else \
                    f"{r['unanswered']:,} still waiting after 60 s (in the percentiles with the time waited)"
                lines.append(f"- {p.key} {name}: {r['answered']:,} of {r['clients']:,} answered, {last}, "
                             f"{r['dropped']} dropped, {r['connect_failed']} connects failed; per client p50 "
                             f"{fmt_us(r['p50_us'])}, "
                             f"p99 {fmt_us(r['p99_us'])}, p99.9 {fmt_us(r['p999_us'])}, max {fmt_us(r['max_us'])}; "
                             f"errors {r['errors']}; server CPU {r['server_cpu_s']} s; {rss}")
                continue
            line = (f"- {p.key} {name}: {r['clients']:,} connected in {r['connect_ms']:.0f} ms, "
                    f"{r['connect_failed']} refused, {r['dropped']} dropped, {r['late']} rounds late; fleet route "
                    f"p50/p99/p99.9 {fmt_us(r['p50_us'])} / {fmt_us(r['p99_us'])} / {fmt_us(r['p999_us'])} "
                    f"({r['answered']:,} answers); P1 beside {r['p1_qps'] / 1000:.1f}k/s, p50/p99/p99.9 "
                    f"{fmt_us(r['p1_p50_us'])} / {fmt_us(r['p1_p99_us'])} / {fmt_us(r['p1_p999_us'])}")
            if r.get("p1_alone_qps"):
                line += (f"; P1 alone {r['p1_alone_qps'] / 1000:.1f}k/s (mean of "
                         f"{' and '.join(f'{q / 1000:.1f}k/s' for q in r.get('p1_alone_runs', []))} before and "
                         f"after; p99 {fmt_us(r['p1_alone_p99_us'])}): beside = {100 * r['p1_ratio']:.0f} % of alone")
                if r.get("p1_cpu_ratio"):
                    line += (f", by server CPU per P1 request (the fleet's included) {100 * r['p1_cpu_ratio']:.0f} % "
                             f"({r['p1_alone_cpu_us_per_req']:.2f} µs alone, {r['p1_cpu_us_per_req']:.2f} µs beside)")
            if r.get("rounds", 1) > 1:
                line += (f"; **median of {r['rounds']} rounds**: beside/alone "
                         f"{', '.join(f'{100 * x:.0f} %' for x in r['p1_ratio_runs'])}, fleet p99 "
                         f"{', '.join(fmt_us(x) for x in r['p99_us_runs'])}")
                if r.get("p1_cpu_ratio_runs"):
                    line += f", by CPU {', '.join(f'{100 * x:.0f} %' for x in r['p1_cpu_ratio_runs'])}"
            line += (f"; {rss} ({r['rss_kib_data'] / 1024:.1f} MB with the data only): "
                     f"{r['rss_bytes_per_conn']:.0f} B per connection; server CPU {r['server_cpu_pct']} % of a core")
            if "fleet_cpu_pct" in r:
                line += (f"; nsrv-fleet used {r['fleet_cpu_pct']} % of the load CPU"
                         f"{' (real-time priority)' if r.get('fleet_realtime') else ' (normal priority: chrt refused)'}")
            lines.append(line)
    for p in ps:
        mine, java = (results.get(p.key, {}).get(n) or {} for n in ("nsrvd", "java-5.3.3"))
        a, b = mine.get("p99_us_runs", []), java.get("p99_us_runs", [])
        if p.kind == "clients" and len(a) > 1 and len(a) == len(b):
            pairs = [x / y for x, y in zip(a, b) if y]
            lines.append(f"- {p.key} fleet p99, nsrvd / java-5.3.3 round by round (each round's runs adjacent in "
                         f"time): {', '.join(f'{x:.3f}' for x in pairs)}; median **{median(pairs):.3f}**")
    for name in names:
        pts = [(r["clients"], r["rss_kib_idle"], r["rss_kib_data"]) for k in keys
               if (r := results.get(k, {}).get(name)) and "error" not in r and results_kind(ps, k) == "conncost"]
        if len(pts) >= 2:
            xs = [x for x, _, _ in pts]
            ys = [(y - d) * 1024 for _, y, d in pts]  # bytes the connections added
            n = len(xs)
            mx, my = sum(xs) / n, sum(ys) / n
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            icpt = my - slope * mx
            lines.append(f"- cost curve {name}: connections' RSS = {icpt / 1024:.0f} KiB + {slope:.0f} B x N "
                         f"(least squares over N = {', '.join(f'{x:,}' for x in xs)}); "
                         f"**extrapolated** to 100,000 connections: {(icpt + slope * 100000) / 2 ** 20:.0f} MiB "
                         "above the data")
    return lines


def results_kind(ps: list, key: str) -> str:
    return next((p.kind for p in ps if p.key == key), "")
