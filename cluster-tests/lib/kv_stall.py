#!/usr/bin/env python3
"""KV-write stall benchmark: do durable KV writes on one connection delay everyone else?

One writer process stores a big value (default 4 MiB) with PUT_KV_CONFIG, then pipelines
small PUT_KV_CONFIG requests on the same connection (default 1000 entries in all) and waits
for every reply. Meanwhile reader processes, each on its own connection, send
GET_ROUTEINFO_BY_TOPIC one at a time on a fixed schedule (one every 2 ms) and time every
round trip from the moment it was due, so a query that could not even be sent because the
previous one was stalled counts as stalled too (no coordinated omission). The readers are
separate processes, so the writer's client-side work never delays their clocks.

Prints one JSON line: percentiles in ms (p50, p99, max, count) of the route queries that fell
due while the writer was at work, the same for the half second before it started (the noise
floor of the machine), and the writer's duration and reply codes. With --nsrvd the script starts its own nsrvd in a temp
directory; with --addr it measures a running NameServer (which then stores the entries).

    cluster-tests/lib/kv_stall.py --nsrvd build/src/nsrvd
    cluster-tests/lib/kv_stall.py --addr 127.0.0.1:9876 --entries 1000 --big-mib 4

The node test cluster-tests/node/test_persist_stall.py runs measure() with a bound.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rmq import Connection, RequestCode  # noqa: E402

PROBE_TOPIC = "KvStallProbeTopic"
# Readers send one query this often: a steady probe, not a load test of its own.
READER_PERIOD_S = 0.002
# How long the readers run before the writer starts.
IDLE_PHASE_S = 0.5


def _percentile(sorted_ms: List[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    i = min(len(sorted_ms) - 1, max(0, int(round(q * (len(sorted_ms) - 1)))))
    return sorted_ms[i]


def _reader(host: str, port: int, start, stop, out) -> None:
    lat: List[tuple] = []
    errors = 0
    with Connection(host, port, timeout=600.0) as c:
        start.wait()
        due = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)
            req = c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": PROBE_TOPIC})
            c.send(req)
            try:
                c.recv_for(req.opaque)
            except Exception:  # a timeout is the worst stall of all: count it
                errors += 1
                break
            done = time.perf_counter()
            # Every query that fell due while this one was outstanding waited as long.
            while due <= done:
                lat.append((due, (done - due) * 1000.0))
                due += READER_PERIOD_S
    out.put({"lat": lat, "errors": errors})


def _writer(host: str, port: int, entries: int, big_bytes: int, window: int, start, out) -> None:
    codes: Dict[int, int] = {}
    with Connection(host, port, timeout=600.0) as c:
        start.wait()
        time.sleep(IDLE_PHASE_S)  # the readers measure the machine's noise floor first
        t0 = time.perf_counter()
        big = c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "KV_STALL", "key": "big", "value": "x" * big_bytes})
        reqs = [big] + [
            c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "KV_STALL", "key": f"k{i}", "value": f"v{i}"})
            for i in range(1, entries)
        ]
        for i in range(0, len(reqs), window):
            chunk = reqs[i : i + window]
            got = c.pipeline(chunk, timeout=600.0)
            for r in got.values():
                codes[r.code] = codes.get(r.code, 0) + 1
        out.put({"t0": t0, "t1": time.perf_counter(), "codes": codes})


def measure(host: str, port: int, *, entries: int = 1000, big_mib: float = 4.0, readers: int = 2,
            window: int = 1000) -> dict:
    """Runs the writer and the readers once; returns the figures (see the module doc)."""
    ctx = mp.get_context("fork")
    start, stop = ctx.Event(), ctx.Event()
    rq, wq = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_reader, args=(host, port, start, stop, rq)) for _ in range(readers)]
    w = ctx.Process(target=_writer, args=(host, port, entries, int(big_mib * (1 << 20)), window, start, wq))
    for p in procs + [w]:
        p.start()
    time.sleep(0.3)  # connections open before the clock starts
    start.set()
    wres = wq.get()
    stop.set()
    during: List[float] = []
    idle: List[float] = []
    errors = 0
    t0, t1 = wres["t0"], wres["t1"]
    for _ in procs:
        r = rq.get()
        errors += r["errors"]
        for due, ms in r["lat"]:
            if t0 <= due <= t1:
                during.append(ms)
            elif due < t0 - 0.05:  # clear of the writer's first bytes
                idle.append(ms)
    for p in procs + [w]:
        p.join()
    during.sort()
    idle.sort()
    return {
        "entries": entries,
        "big_mib": big_mib,
        "readers": readers,
        "route_queries": len(during),
        "route_errors": errors,
        "route_p50_ms": round(_percentile(during, 0.50), 3),
        "route_p99_ms": round(_percentile(during, 0.99), 3),
        "route_max_ms": round(during[-1], 3) if during else None,
        "idle_queries": len(idle),
        "idle_p99_ms": round(_percentile(idle, 0.99), 3),
        "writer_s": round(t1 - t0, 3),
        "writer_codes": wres["codes"],
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--addr", help="HOST:PORT of a running NameServer")
    g.add_argument("--nsrvd", help="path to an nsrvd binary to start in a temp directory")
    ap.add_argument("--entries", type=int, default=1000, help="KV entries written, the big one included")
    ap.add_argument("--big-mib", type=float, default=4.0, help="size of the big value in MiB")
    ap.add_argument("--readers", type=int, default=2, help="route-query connections")
    ap.add_argument("--window", type=int, default=1000, help="PUTs the writer keeps in flight")
    a = ap.parse_args(argv)
    if a.addr:
        host, port = a.addr.rsplit(":", 1)
        res = measure(host, int(port), entries=a.entries, big_mib=a.big_mib, readers=a.readers, window=a.window)
    else:
        from nsrvd_proc import NsrvdProcess

        with tempfile.TemporaryDirectory(prefix="kv-stall-") as d:
            srv = NsrvdProcess(str(Path(a.nsrvd).resolve()), Path(d)).start()
            try:
                res = measure("127.0.0.1", srv.port, entries=a.entries, big_mib=a.big_mib, readers=a.readers,
                              window=a.window)
            finally:
                srv.terminate(timeout=120.0)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
