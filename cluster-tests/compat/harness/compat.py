#!/usr/bin/env python3
"""nsrvd real-peer compatibility suite: runs the real RocketMQ brokers, mqadmin and clients
against nsrvd and against the Java NameServer of the same version, and prints a table
scenario x peer x {nsrvd, Java NameServer}, then "N passed, M failed".

Normally started by ../run-compat.sh, which resolves and builds the peers first.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
import time
import traceback
from pathlib import Path

import common
from common import COUNTED_FAIL, COUNTED_PASS, FAIL, PASS, RESULTS, SKIP, XFAIL, XPASS, Config, cleanup, install_signal_handlers, log

ALL_PEERS = ["java533", "java497", "go", "go211", "node", "proxy540"]
SCENARIO_TITLES = {
    1: "broker registration; mqadmin clusterList/topicList/topicRoute",
    2: "1000 messages produced and consumed",
    3: "master and slave in one group",
    4: "KV config, order config, NameServer config",
    5: "wipeWritePerm / addWritePerm",
    6: "deleteTopic, graceful shutdown, kill -9",
    7: "broker variants",
    8: "differential replay",
    9: "who may change the cluster: ACL-signed mqadmin (nsrvd only)",
    10: "TLS (enforcing NameServer, -Dtls.enable=true peers)",
    11: "Proxy 5.4.0 in cluster mode with gRPC clients",
}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", type=int, help="scenario numbers (default: all, 1-11)")
    ap.add_argument("--peers", default=",".join(ALL_PEERS),
                    help="comma list of " + ",".join(ALL_PEERS) + " (java533/java497 also select the "
                         "mqadmin and broker rows of that version)")
    ap.add_argument("--targets", default="nsrvd,java", help="nsrvd,java")
    ap.add_argument("--nsrvd", default=os.environ.get("NSRVD_BIN", ""), help="nsrvd binary")
    ap.add_argument("--cache", default=os.environ.get("NSRVD_COMPAT_CACHE", str(Path.home() / ".cache" / "nsrvd-peers")))
    ap.add_argument("--logdir", default=os.environ.get("COMPAT_LOG_DIR", ""))
    ap.add_argument("--workers", type=int, default=int(os.environ.get("COMPAT_WORKERS", "3")))
    return ap.parse_args(argv)


def main(argv) -> int:
    a = parse_args(argv)
    scenarios = sorted(set(a.scenarios)) or list(range(1, 12))
    logdir = Path(a.logdir) if a.logdir else Path(f"/tmp/nsrvd-compat-{time.strftime('%Y%m%d-%H%M%S')}")
    logdir.mkdir(parents=True, exist_ok=True)
    nsrvd = Path(a.nsrvd) if a.nsrvd else None
    common.CFG = Config(cache=Path(a.cache), logdir=logdir, nsrvd=nsrvd, scenarios=scenarios,
                        peers=[p for p in a.peers.split(",") if p], targets=[t for t in a.targets.split(",") if t],
                        workers=a.workers)
    install_signal_handlers()
    cfg = common.CFG
    t0 = time.time()
    log(f"compat suite: scenarios {scenarios}, peers {cfg.peers}, targets {cfg.targets}")
    log(f"logs and evidence: {logdir}")
    if "nsrvd" in cfg.targets and not cfg.has_nsrvd():
        log(f"NOTE: no nsrvd binary at {nsrvd}; nsrvd cells are skipped")
    try:
        run_phases(scenarios)
    except common.Interrupted as e:
        RESULTS.set(0, "(run interrupted)", "5.3.3", "java", FAIL, f"interrupted by {e}; cells not shown did not run")
    finally:
        cleanup()
    print_table(time.time() - t0)
    write_results(logdir / "results.tsv")
    for target, title in (("nsrvd", "against nsrvd"), ("java", "against the Java NameServer")):
        cells = [c for r in RESULTS.rows for col, c in r.cells.items() if col == target]
        tp = sum(1 for c in cells if c.status in COUNTED_PASS)
        tf = sum(1 for c in cells if c.status in COUNTED_FAIL)
        print(f"cells {title}: {tp} passed, {tf} failed")
    passed = sum(1 for r in RESULTS.rows for c in r.cells.values() if c.status in COUNTED_PASS)
    failed = sum(1 for r in RESULTS.rows for c in r.cells.values() if c.status in COUNTED_FAIL)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


STAGE_STATUS = {PASS: "passed", XFAIL: "xfail", FAIL: "failed", XPASS: "failed", SKIP: "skipped"}


def write_results(path: Path) -> None:
    """One line per cell, "STATUS<TAB>TARGET/sN/PEER", for cluster-tests/stages/stages.py (cells
    against nsrvd and against the Java NameServer are separate stages there)."""
    lines = []
    for r in sorted(RESULTS.rows, key=_row_key):
        for col, c in r.cells.items():
            if c.status in STAGE_STATUS:  # n/a cells are not tests
                lines.append(f"{STAGE_STATUS[c.status]}\t{col}/s{r.scenario}/{r.peer}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def guarded(scenario: int, fn, *args) -> None:
    t = time.time()
    log(f"=== scenario {scenario}: {SCENARIO_TITLES[scenario]}")
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a harness problem must not hide the other scenarios
        tb = traceback.format_exc()
        log(f"scenario {scenario}: harness error\n{tb}")
        RESULTS.set(scenario, "(harness)", "5.3.3", "java", FAIL, "harness error: " + tb.strip().splitlines()[-1], tb)
    log(f"=== scenario {scenario} done in {time.time() - t:.0f} s")


def run_phases(scenarios) -> None:
    if 8 in scenarios:
        import differential

        guarded(8, differential.s8)
    phase_a = [s for s in scenarios if 1 <= s <= 6]
    if phase_a:
        import phase_a as pa

        A = pa.PhaseA()
        try:
            if not A.start():
                RESULTS.set(min(phase_a), "(phase A set-up)", "5.3.3", "java", FAIL,
                            "harness: Java NameServers or brokers did not start; see " + str(common.cfg().logdir))
                return
            if 1 in scenarios:
                guarded(1, pa.s1, A)
            if 3 in scenarios:
                pa.s3_start_slaves(A)  # they boot while scenario 2 runs
            if 2 in scenarios:
                guarded(2, pa.s2, A)
            if 3 in scenarios:
                guarded(3, pa.s3, A)
            if 4 in scenarios:
                guarded(4, pa.s4, A)
            if 5 in scenarios:
                guarded(5, pa.s5, A)
            if 6 in scenarios:
                if 3 not in scenarios:
                    pa.s3_start_slaves(A)
                    for b in A.slaves.values():
                        b.wait_ready(150)
                    time.sleep(3)
                guarded(6, pa.s6, A)
        finally:
            A.stop()
    if 7 in scenarios:
        import phase_b

        guarded(7, phase_b.s7)
    if 9 in scenarios:
        import acl

        guarded(9, acl.s9)
    if 10 in scenarios:
        import phase_tls

        guarded(10, phase_tls.s10)
    if 11 in scenarios and "proxy540" in common.cfg().peers:
        import phase_proxy

        guarded(11, phase_proxy.s11)


ROW_ORDER = ["mqadmin 5.3.3", "mqadmin 4.9.7", "Java client 5.3.3", "Java client 4.9.7", "Go client v2.1.2",
             "Go client v2.1.1", "ali-ons", "broker 5.3.3", "broker 4.9.7", "slave 5.3.3", "slave 4.9.7",
             "master 5.3.3", "master 4.9.7", "brokers 5.3.3", "differential replay vs Java 5.3.3",
             "differential replay vs Java 4.9.7"]


def _row_key(r) -> tuple:
    rank = next((i for i, p in enumerate(ROW_ORDER) if r.peer.startswith(p)), len(ROW_ORDER))
    return (r.scenario, rank, RESULTS.rows.index(r))


def print_table(elapsed: float) -> None:
    rows = sorted(RESULTS.rows, key=_row_key)
    w = max([len(r.peer) for r in rows] + [10])
    print()
    print(f"{'#':>2}  {'peer / check':<{w}}  {'nsrvd':<12}  Java NameServer")
    print(f"{'--':>2}  {'-' * w}  {'-' * 12}  {'-' * 22}")
    evid = []
    for r in rows:
        n = r.cells.get("nsrvd")
        j = r.cells.get("java")
        ns = n.status if n else "-"
        js = (f"{j.status} ({r.oracle})" if j else "-")
        print(f"{r.scenario:>2}  {r.peer:<{w}}  {ns:<12}  {js}")
        for col, c in r.cells.items():
            if c.status != PASS and c.detail:
                evid.append(f"  [{r.scenario}] {r.peer} / {col}: {c.status}: {c.detail}"
                            + (f"\n      evidence: {c.evidence}" if c.evidence else ""))
    print()
    if evid:
        print("Failures and notes (every cell's evidence is under cells/ in the log directory):")
        print("\n".join(evid))
        print()
    print(f"logs: {common.cfg().logdir}   runtime: {elapsed / 60:.1f} min")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
