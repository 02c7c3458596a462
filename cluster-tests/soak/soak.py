#!/usr/bin/env python3
"""Soak: a 3-node gossip cluster under steady churn, with memory and descriptors checked flat.

    cluster-tests/soak/soak.py --nsrvd build/src/nsrvd --seconds 3600   # the one-hour soak
    cluster-tests/soak/soak.py --nsrvd build/src/nsrvd --seconds 300    # the CI version

See README.md here for what churns, what "flat" means and the figures. Writes one line per
check ("passed|failed<TAB>soak/<check>") to --results for cluster-tests/stages/stages.py, and the
samples to <workdir>/samples.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))
sys.path.insert(0, str(HERE.parent / "lib"))

from brokersim import BrokerSim, BrokerSimError, find_binary  # noqa: E402
from clusterlib import Cluster  # noqa: E402
from nsrvd_proc import use_binary  # noqa: E402
from rmq import Connection, NamesrvClient, ResponseCode  # noqa: E402

# "Flat": samples of the first WARMUP_FRACTION are not judged (tables, buffers and the
# allocator's arenas grow to their working size there). The rest is cut into quarters.
# RSS: a leak grows RSS in every quarter; the allocator grows it in steps (a heap top that
# cannot shrink, a mmap threshold that moves: +600-700 kB at once, seen 2 minutes into a
# 5-minute run), after which it is flat again. So the growth from the first quarter's maximum
# to the last's, minus the largest single quarter-to-quarter rise, may be at most
# RSS_SLACK_FRACTION (+ RSS_SLACK_KB for allocator granularity); and that one rise at most
# RSS_STEP_MAX_KB (a one-off leak bigger than any allocator step still fails).
# Open files: a connection in flight when a sample is taken adds one, and 4 clients, 50
# brokers coming and going make the count swing by 20 from sample to sample; a leaked
# descriptor stays. So the quarters' medians are compared: at most FD_SLACK more at the end.
WARMUP_FRACTION = 0.2
RSS_SLACK_FRACTION = 0.05
RSS_SLACK_KB = 512
RSS_STEP_MAX_KB = 2048
FD_SLACK = 8
SAMPLE_EVERY_S = 2.0

STABLE_BROKERS = 40  # groups that live for the whole run and are stopped/killed/frozen/resumed
VISITOR_BROKERS = 10  # groups of a simulator that joins and leaves again and again
CLIENT_THREADS = 4
KV_KEYS = 200  # KV churn over a bounded key space: the stored state stays bounded


class Soak:
    def __init__(self, nsrvd: str, workdir: Path, seconds: float, seed: int) -> None:
        self.nsrvd = nsrvd
        self.workdir = workdir
        self.seconds = seconds
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.samples: Dict[int, List[Dict[str, float]]] = {}
        self.counts = {"requests": 0, "unanswered": 0, "bad_code": 0, "kv_mismatch": 0,
                       "broker_ops": 0, "visits": 0, "connections": 0}
        self.errors: List[str] = []
        self.cluster = None
        self.sims: List[BrokerSim] = []

    # ------------------------------------------------------------------ churn

    def note_error(self, msg: str) -> None:
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(msg)

    def client_loop(self, idx: int) -> None:
        """Connect to a random node, send a few requests, disconnect; KV on one node."""
        rng = random.Random(idx * 7919)
        while not self.stop.is_set():
            nd = rng.choice(self.cluster.nodes)
            try:
                conn = Connection("127.0.0.1", nd.port, timeout=5)
            except OSError as e:
                self.note_error(f"client {idx}: connect to node {nd.id}: {e}")
                self.stop.wait(0.2)
                continue
            with self.lock:
                self.counts["connections"] += 1
            ns = NamesrvClient(conn)
            try:
                for _ in range(rng.randint(1, 20)):
                    self.one_request(ns, rng, idx)
            except Exception as e:  # noqa: BLE001 - every unanswered request is counted
                with self.lock:
                    self.counts["unanswered"] += 1
                self.note_error(f"client {idx} -> node {nd.id}: {type(e).__name__}: {e}")
            finally:
                conn.close()

    def one_request(self, ns: NamesrvClient, rng: random.Random, idx: int) -> None:
        op = rng.random()
        ok = {ResponseCode.SUCCESS}
        if op < 0.4:
            b = rng.randrange(STABLE_BROKERS)
            r = ns.get_route(f"topic-soak-{b:04d}-{rng.randrange(5)}")
            ok = {ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST}
        elif op < 0.5:
            r = ns.all_topics()
        elif op < 0.6:
            r = ns.cluster_info()
        else:
            # Each thread owns its keys, so a get after its put must see the value.
            key = f"k{idx}-{rng.randrange(KV_KEYS)}"
            if rng.random() < 0.3:
                r = ns.delete_kv("soak", key)
            else:
                value = "v" * rng.randrange(1, 2000)
                r = ns.put_kv("soak", key, value)
                if r.code == ResponseCode.SUCCESS:
                    g = ns.get_kv("soak", key)
                    if g.code != ResponseCode.SUCCESS or g.ext.get("value") != value:
                        with self.lock:
                            self.counts["kv_mismatch"] += 1
                        self.note_error(f"kv {key}: get after put gave code {g.code}")
        with self.lock:
            self.counts["requests"] += 1
            if r.code not in ok:
                self.counts["bad_code"] += 1
                self.note_error(f"request {r!r}: code {r.code}")

    def broker_loop(self) -> None:
        """Stable groups: graceful stop, kill, freeze (evicted by timeout), resume, bump,
        and cut/heal of single links. A visiting simulator joins and leaves."""
        stable = self.sims[0]
        names = stable.names()
        down: set = set()
        visitor = None
        next_visit = time.monotonic() + 5
        while not self.stop.wait(0.25):
            name = self.rng.choice(names)
            op = self.rng.random()
            try:
                if name in down:
                    stable.resume(name)
                    down.discard(name)
                elif op < 0.2:
                    stable.stop(name)
                    down.add(name)
                elif op < 0.4:
                    stable.die(name)
                    down.add(name)
                elif op < 0.5:
                    stable.freeze(name)
                    down.add(name)
                elif op < 0.8:
                    stable.bump(name)
                else:
                    node = self.rng.randrange(len(self.cluster.nodes))
                    stable.cut(name, node)
                    self.stop.wait(0.3)
                    stable.heal(name, node)
                with self.lock:
                    self.counts["broker_ops"] += 1
            except BrokerSimError as e:
                self.note_error(f"brokersim {name}: {e}")
            if time.monotonic() >= next_visit:
                if visitor is None:
                    visitor = BrokerSim(self.cluster.ns_addrs(), brokers=VISITOR_BROKERS, topics=5,
                                        prefix="visitor-", addr_base=30911, period_ms=2000, timeout_ms=6000,
                                        duration_s=int(self.seconds) + 600, binary=self.brokersim_bin,
                                        extra_args=["--unregister-on-exit"] if self.rng.random() < 0.5 else [],
                                        log_path=self.workdir / f"visitor{self.counts['visits']}.log").start()
                    with self.lock:
                        self.counts["visits"] += 1
                else:
                    visitor.close()
                    visitor = None
                next_visit = time.monotonic() + self.rng.uniform(3, 10)
        if visitor is not None:
            visitor.close()

    def sample_loop(self) -> None:
        t0 = time.monotonic()
        while not self.stop.wait(SAMPLE_EVERY_S):
            for nd in self.cluster.nodes:
                if not nd.alive():
                    self.note_error(f"node {nd.id} is not running (exit {nd.proc.proc.poll()})")
                    continue
                try:
                    s = {"t": round(time.monotonic() - t0, 2), "rss_kb": nd.proc.rss_kb(),
                         "fds": nd.proc.open_fds()}
                except OSError:
                    continue
                with self.lock:
                    self.samples.setdefault(nd.id, []).append(s)

    # ------------------------------------------------------------------ run and judge

    def run(self) -> List[tuple]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        use_binary(self.nsrvd)
        self.brokersim_bin = find_binary(self.nsrvd)
        self.cluster = Cluster(self.nsrvd, self.workdir / "cluster", n=3,
                               config={"scanNotActiveBrokerInterval": 1000, "gossipIntervalMs": 1000})
        checks: List[tuple] = []
        try:
            self.cluster.start()
            self.sims.append(BrokerSim(self.cluster.ns_addrs(), brokers=STABLE_BROKERS, topics=5, prefix="soak-",
                                       period_ms=2000, timeout_ms=6000, duration_s=int(self.seconds) + 600,
                                       binary=self.brokersim_bin, log_path=self.workdir / "stable.log").start())
            self.sims[0].wait_ready(60)
            threads = [threading.Thread(target=self.sample_loop, daemon=True),
                       threading.Thread(target=self.broker_loop, daemon=True)]
            threads += [threading.Thread(target=self.client_loop, args=(i,), daemon=True) for i in range(CLIENT_THREADS)]
            for t in threads:
                t.start()
            end = time.monotonic() + self.seconds
            while time.monotonic() < end and all(nd.alive() for nd in self.cluster.nodes):
                time.sleep(1)
            self.stop.set()
            for t in threads:
                t.join(30)
            checks += self.judge()
        finally:
            self.stop.set()
            for s in self.sims:
                s.close()
            alive_at_end = {nd.id: nd.alive() for nd in self.cluster.nodes}
            problems = self.cluster.close()
            for nd in self.cluster.nodes:
                mine = [p for p in problems if p.startswith(f"node {nd.id}:")]
                ok = alive_at_end[nd.id] and not mine
                checks.append((ok, f"node{nd.id}-alive-and-clean-exit",
                               "; ".join(p.splitlines()[0] for p in mine) or ("" if ok else "died during the soak")))
        (self.workdir / "samples.json").write_text(json.dumps(
            {"counts": self.counts, "errors": self.errors, "samples": self.samples}, indent=1))
        return checks

    def judge(self) -> List[tuple]:
        checks = []
        for nd_id, samples in sorted(self.samples.items()):
            judged = samples[int(len(samples) * WARMUP_FRACTION):]
            q = max(1, len(judged) // 4)
            if len(judged) < 8:
                checks.append((False, f"node{nd_id}-rss-flat", f"only {len(judged)} samples"))
                continue
            quarters = [judged[i * q:(i + 1) * q] for i in range(3)] + [judged[3 * q:]]
            rss = [max(s["rss_kb"] for s in qs) for qs in quarters]
            step = max(0, max(b - a for a, b in zip(rss, rss[1:])))
            creep = rss[3] - rss[0] - step
            limit = rss[0] * RSS_SLACK_FRACTION + RSS_SLACK_KB
            checks.append((creep <= limit and step <= RSS_STEP_MAX_KB, f"node{nd_id}-rss-flat",
                           f"max RSS by quarter {rss} kB: growth besides the largest step {creep} kB "
                           f"(limit {limit:.0f}), largest step {step} kB (limit {RSS_STEP_MAX_KB})"))
            fds = [sorted(s["fds"] for s in qs)[len(qs) // 2] for qs in quarters]
            checks.append((fds[3] <= fds[0] + FD_SLACK, f"node{nd_id}-fds-flat",
                           f"median open files by quarter {fds}, limit {fds[0] + FD_SLACK} at the end"))
        c = self.counts
        checks.append((c["requests"] > 0 and c["unanswered"] == 0 and c["bad_code"] == 0, "requests-answered",
                       f"{c['requests']} requests on {c['connections']} connections, {c['unanswered']} unanswered, "
                       f"{c['bad_code']} unexpected codes" + (f"; first error: {self.errors[0]}" if self.errors else "")))
        checks.append((c["kv_mismatch"] == 0, "kv-read-your-write", f"{c['kv_mismatch']} mismatches"))
        checks.append((c["broker_ops"] > 0 and c["visits"] > 0, "broker-churn-ran",
                       f"{c['broker_ops']} broker operations, {c['visits']} visiting simulators"))
        return checks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nsrvd", required=True)
    ap.add_argument("--seconds", type=float, default=3600)
    ap.add_argument("--results", default="")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    nsrvd = str(Path(a.nsrvd).resolve())
    workdir = Path(a.workdir or f"/tmp/nsrvd-soak-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    soak = Soak(nsrvd, workdir, a.seconds, a.seed)
    t0 = time.monotonic()
    checks = soak.run()
    lines = []
    for ok, name, detail in checks:
        print(f"[soak] {'PASS' if ok else 'FAIL'} {name}: {detail}")
        lines.append(f"{'passed' if ok else 'failed'}\tsoak/{name}" + ("" if ok else f"\t{detail}"))
    for e in soak.errors[:20]:
        print(f"[soak] error: {e}")
    print(f"[soak] {len(checks)} checks in {time.monotonic() - t0:.0f} s; samples in {workdir}/samples.json")
    if a.results:
        Path(a.results).write_text("\n".join(lines) + "\n")
    passed = sum(1 for ok, _, _ in checks if ok)
    print(f"{passed} passed, {len(checks) - passed} failed")
    return 0 if passed == len(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
