#!/usr/bin/env python3
"""The chaos suite's runner (cluster-tests/chaos/run.sh calls it; see README.md there).

Builds the namespaces, moves itself into the client namespace (every route and /status
request it makes comes from there), starts three nsrvd nodes, the simulated brokers and, when
the peers cache holds them, the real broker with a producer/consumer pair and polling Java
clients, then runs each scenario and checks, besides the scenario's own assertions:
  * zero route errors outside the scenario's exemption windows;
  * no broker shown alive on any node longer than timeout + scan after its last direct
    heartbeat anywhere (StatusMonitor, every 100 ms from every node's /status);
  * the cluster converges again after the last fault (every live node the same brokers);
  * every message the producer had acknowledged arrives at the consumer.
Prints a table and ``N passed, M failed``; exit code 0 only when every scenario passed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import netns  # noqa: E402
import scenarios as sc  # noqa: E402
from suite import HEAL_GRACE_S, Result, Suite  # noqa: E402

HOSTS = {"n1": 1, "n2": 2, "n3": 3, "c": 10, "jc": 11, "ball": 21, "s1": 31, "s2": 32, "s3": 33,
         "bjava": 23, "probe": 24, "ghost": 25, "atk": 50, "j1": 41, "j2": 42, "j3": 43, "bj2": 52}


def plan(short: bool) -> List[Tuple[str, Callable]]:
    arr = 5 if short else 10
    cut_s = 5 if short else 10
    return [
        ("kill9-one", lambda s, r: sc.kill9(s, r, [1], 3)),
        ("kill9-two", lambda s, r: sc.kill9(s, r, [1, 2], 3)),
        ("kill9-all", lambda s, r: sc.kill9(s, r, [1, 2, 3], 3)),
        ("rolling-sigterm", lambda s, r: sc.rolling_sigterm(s, r, 2 if short else 5, java_baseline=not short)),
        (f"pause-{10 if short else 60}s", lambda s, r: sc.pause(s, r, 2, 10 if short else 60)),
        ("cut-peers", lambda s, r: sc.cut(s, r, 3, "peers", cut_s)),
        ("cut-brokers", lambda s, r: sc.cut(s, r, 3, "brokers", cut_s)),
        ("cut-both", lambda s, r: sc.cut(s, r, 3, "both", cut_s)),
        ("loss-10", lambda s, r: sc.loss(s, r, 10, arr)),
        # enough arrivals that p99 and max say something about the tail
        ("loss-30", lambda s, r: sc.loss(s, r, 30, 30 if short else 100, sc.ARRIVAL_MAX_S)),
        ("delay-200ms-reorder", lambda s, r: sc.delay(s, r, arr)),
        ("clock-skew-5min", lambda s, r: sc.skew(s, r, arr)),
        ("gossip-flood", lambda s, r: sc.flood(s, r, 5 if short else 10)),
        ("broker-one-node", lambda s, r: sc.one_node(s, r, arr)),
        ("broker-dies-silently", lambda s, r: sc.dies_silently(s, r)),
    ]


def restore(s: Suite, res: Result) -> None:
    """Whatever a failed scenario left behind (a node down, stopped, cut or on a fake clock) is
    undone so that the next scenario starts from a whole cluster."""
    fixed = []
    for nd in s.nodes:
        s.net.heal(nd.host)
        if nd.stopped:
            nd.signal(signal.SIGCONT)
            fixed.append(f"n{nd.id} resumed")
        if nd.faketime and nd.alive():
            nd.terminate(10)
        if not nd.alive():
            t = time.monotonic()
            s.exempt_window(nd.id, "*", res.t0, t + 5)
            s.exempt_window(0, f"solo{nd.id}-0000", res.t0, t + 5)
            nd.start()
            nd.wait_up()
            fixed.append(f"n{nd.id} restarted")
    if fixed:
        res.failures.append("left the cluster broken: " + ", ".join(fixed))
        s.wait_converged(20)


def start_run(work: Path) -> Callable[[str], None]:
    """Creates WORK, returns a logger that prints and appends to WORK/chaos.log, and turns
    SIGTERM into KeyboardInterrupt so a stopped run still cleans up (both runners)."""
    work.mkdir(parents=True, exist_ok=True)
    logf = open(work / "chaos.log", "a")

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    return log


def run_one(s: Suite, name: str, fn: Callable, log) -> Result:
    res = Result(name)
    res.t0 = time.monotonic()
    if s.java is not None:
        s.java.begin(name)
    log(f"--- {name}")
    try:
        t_last = fn(s, res)
        conv = s.wait_converged(20, since=t_last)
        if conv is not None:
            # the scenario may return some time after its last fault: the /status snapshots
            # (every 100 ms) tell when the nodes actually agreed again
            settled = s.monitor.settled_at(t_last, len(s.live_nodes()), s.expected_names())
            if settled is not None:
                conv = min(conv, max(0.0, settled - t_last))
        res.conv_s = conv
        res.check(conv is not None, "not converged within 20 s after the last fault")
        time.sleep(HEAL_GRACE_S)
    except Exception as e:  # noqa: BLE001 - one broken scenario must not stop the suite
        res.failures.append(f"scenario raised {type(e).__name__}: {e}")
        log(traceback.format_exc())
    restore(s, res)
    res.t1 = time.monotonic()
    counted, raw, by, first = s.route_errors(res.t0, res.t1)
    res.route_errors, res.route_errors_raw = counted, raw
    res.check(counted == 0, f"{counted} route error(s) outside the allowed windows: {dict(list(by.items())[:6])}; "
              f"first (times from the scenario's start): {' | '.join(first)}")
    viol = s.monitor.violations_between(res.t0, res.t1)
    if viol:
        v = viol[0]
        res.failures.append(f"{len(viol)} sighting(s) of a broker alive past its timeout, first: node {v.node} "
                            f"{v.broker} {v.age_s:.2f}s after its last direct heartbeat (limit {v.limit_s:.2f}s)")
    res.disagree_s = s.monitor.disagreement(res.t0, res.t1)
    if s.java is not None:
        s.java.end(res)
    for f in res.failures:
        log(f"    FAIL {f}")
    for n in res.notes:
        log(f"    {n}")
    return res


def table(results: List[Result]) -> str:
    head = ("scenario", "result", "converge s", "disagree s", "route err", "msgs sent/acked/recv/dup")
    rows = []
    for r in results:
        m = r.msgs
        msgs = f"{m['sent']}/{m['acked']}/{m['received']}/{m['dup']}" if m else "-"
        rows.append((r.name, "PASS" if r.passed else "FAIL",
                     f"{r.conv_s:.2f}" if r.conv_s is not None else "-",
                     f"{r.disagree_s:.2f}", f"{r.route_errors} ({r.route_errors_raw})", msgs))
    w = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    fmt = lambda row: "  ".join(str(c).ljust(w[i]) for i, c in enumerate(row)).rstrip()  # noqa: E731
    lines = [fmt(head), fmt(tuple("-" * x for x in w))] + [fmt(r) for r in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nsrvd", required=True)
    ap.add_argument("--brokersim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated scenario names (prefixes)")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--prefix", default=f"chaos{os.getpid()}", help="namespace name prefix")
    ap.add_argument("--peers-cache", default=os.environ.get("NSRVD_COMPAT_CACHE", str(Path.home() / ".cache/nsrvd-peers")))
    a = ap.parse_args()
    work = Path(a.work)
    log = start_run(work)
    prefix = a.prefix
    net = netns.Net(prefix, HOSTS)
    s = None
    results: List[Result] = []
    try:
        net.up()
        log(f"namespaces {prefix}-* on {netns.SUBNET}.0/24, bridge in {net.hub}; work dir {work}")
        netns.enter(net.ns("c"))
        s = Suite(net, a.nsrvd, a.brokersim, work, log)
        s.start()
        log("cluster up: 3 nodes, brokers " + ", ".join(s.expected_names()))
        if not a.no_java:
            import javaload
            s.java = javaload.start(s, Path(a.peers_cache), log)
        only = [x for x in a.only.split(",") if x]
        for name, fn in plan(a.short):
            if only and not any(name.startswith(o) for o in only):
                continue
            results.append(run_one(s, name, fn, log))
        if s.java is not None:
            s.java.finish(results, log)
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}): cleaning up")
    finally:
        if s is not None:
            try:
                for p in s.close():
                    log(f"teardown: {p}")
            except Exception as e:  # noqa: BLE001
                log(f"teardown error: {e}")
        net.close()
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
    # cluster-tests/stages/stages.py's tsv, with why a scenario failed
    with open(work / "results.tsv", "w") as f:
        for r in results:
            why = "" if r.passed else "\t" + " | ".join(" ".join(x.split()) for x in r.failures)
            f.write(f"{'passed' if r.passed else 'failed'}\tchaos/{r.name}{why}\n")
    return 0 if failed == 0 and results else 1


if __name__ == "__main__":
    sys.exit(main())
