"""The scenarios. Each takes the Suite, a Result and the mode's durations, injects its fault,
records exemptions (see suite.py) and its own assertions; the runner adds the common ones
(counted route errors, liveness sightings, lost messages, convergence after the last heal)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Dict, List, Optional

from cluster import GOSSIP_PORT
from suite import (ARRIVAL_MAX_S, ARRIVAL_P99_S, BROKER_TIMEOUT_MS, HEAL_GRACE_S, HERE, INF,
                   RESTART_COMPLETE_S, Result, Suite)

BROKER_HOSTS = ["ball", "s1", "s2", "s3", "bjava", "probe", "ghost"]


def pct(values: List[float], p: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def _arrivals(s: Suite, res: Result, count: int, limit: float, label: str,
              max_limit: Optional[float] = None) -> None:
    """count arrivals of the probe broker (node 1 only); p99 at most limit and, with max_limit,
    every one within max_limit (the tail, not only the typical arrival)."""
    probe = s.sims.get("probe") or s.sim("probe", "probe", [1], 1, "probe-", expect=False)
    times = []
    for _ in range(count):
        t = s.arrival(probe, res)
        times.append(t if t is not None else INF)
    fin = [t for t in times if t != INF]
    p99 = pct(times, 99)
    res.notes.append(f"{label}: probe arrival on all nodes p50 {pct(fin, 50):.2f}s p99 {p99:.2f}s max "
                     f"{max(fin):.2f}s ({len(fin)}/{count})" if fin else f"{label}: probe never arrived")
    res.check(p99 <= limit, f"{label}: probe broker (node 1 only) routable everywhere p99 "
              f"{p99:.2f}s > {limit:.2f}s; times {[round(t, 2) for t in times]}")
    if max_limit is not None:
        slow = [round(t, 2) for t in times if t > max_limit]
        res.check(not slow, f"{label}: {len(slow)} of {count} probe arrivals over {max_limit:.1f}s: {slow}")


def _restart_and_measure(s: Suite, res: Result, ids: List[int], excl_idx: Dict[int, int],
                         solo_idx: Dict[int, int], faketime: Optional[str] = None,
                         complete_check: bool = True) -> None:
    for i in ids:
        s.node(i).start(faketime=faketime)
    for i in ids:
        nd = s.node(i)
        if complete_check:
            t = s.measure_complete(nd, exclude=(f"solo{i}-0000",))
            res.notes.append(f"n{i} complete {t:.3f}s after exec" if t is not None else f"n{i} never complete")
            res.check(t is not None and t <= RESTART_COMPLETE_S,
                      f"node {i} complete {t}s after restart (limit {RESTART_COMPLETE_S}s)")
            s.end_exempt(excl_idx[i], nd.exec_time + (t if t is not None else RESTART_COMPLETE_S))
        if i in solo_idx:
            # its solo broker reconnects (<= 0.3 s backoff) and registers again, then gossip
            s.end_exempt(solo_idx[i], nd.exec_time + 0.3 + HEAL_GRACE_S + 1.0)


def kill9(s: Suite, res: Result, ids: List[int], down_s: float) -> float:
    t = time.monotonic()
    excl, solo = {}, {}
    for i in ids:
        s.node(i).kill9()
        excl[i] = s.exempt_window(i, "*", t)
        solo[i] = s.exempt_window(0, f"solo{i}-0000", t)
    time.sleep(down_s)
    if len(ids) == len(s.nodes):
        # No peer to learn from: every broker comes back on its own registration timer.
        for i in ids:
            s.node(i).start()
        for i in ids:
            s.node(i).wait_up()
        t_up = max(s.node(i).exec_time for i in ids)
        period = 1.0 if s.java is None else s.java.register_period_s
        conv = s.wait_converged(period + 15, since=t_up)
        res.notes.append("all nodes down: no completeness check, brokers re-register on their timers")
        res.check(conv is not None and conv <= period + 2.0,
                  f"all-down restart converged after {conv}s (limit: register period {period}s + 2s)")
        for idx in list(excl.values()) + list(solo.values()):
            s.end_exempt(idx, t_up + period + 2.0)
        return t_up
    _restart_and_measure(s, res, ids, excl, solo)
    return max(s.node(i).exec_time for i in ids)


def rolling_sigterm(s: Suite, res: Result, gap_s: float, java_baseline: bool = True) -> float:
    polls = base = None
    if s.java is not None and java_baseline:
        # the comparison first, so that the convergence figure is nsrvd's, after its restarts
        base = s.java.java_ns_rolling(gap_s)
    if s.java is not None:
        polls = s.java.routepoll(s.cluster.addrs(), "ChaosTopic", 600, "nsrvd")
        time.sleep(2)
    try:
        last = _rolling(s, res, gap_s)
        time.sleep(2)
    finally:
        counts = {v: s.java.poll_result(p) for v, p in polls.items()} if polls else None
    if counts is None:
        res.notes.append("no Java clients (peers cache missing): GO_AWAY clients not checked")
        return last
    res.check(counts["5.3.3"]["ok"] > 0 and counts["4.9.7"]["ok"] > 0, "a polling client made no request")
    for v in ("5.3.3", "4.9.7"):
        if counts[v]["warmup_failed"]:
            res.notes.append(f"{v} client: {counts[v]['warmup_failed']} failed request(s) before its first answer, "
                             f"not counted: {counts[v]['warmup_first']}")
    res.check(counts["5.3.3"]["failed"] == 0,
              f"5.3.3 client saw {counts['5.3.3']['failed']} failed request(s) across the rolling restart")
    if base is None:
        # Three Java NameServers restarted in turn take minutes of JVM start-up on two cores:
        # the comparison runs in the full suite only.
        for v in ("5.3.3", "4.9.7"):
            res.notes.append(f"{v} client: nsrvd {counts[v]['failed']} failed of {counts[v]['ok']} "
                             f"{counts[v]['first'] or ''}(Java NameServer comparison: full run only)")
        return last
    for v in ("5.3.3", "4.9.7"):
        res.notes.append(f"{v} client: nsrvd {counts[v]['failed']} failed of {counts[v]['ok']}, Java NameServer "
                         f"{base[v]['failed']} failed of {base[v]['ok']} {counts[v]['first'] or ''}")
    res.check(counts["4.9.7"]["failed"] <= base["4.9.7"]["failed"],
              f"4.9.7 client: {counts['4.9.7']['failed']} failed requests with nsrvd, "
              f"{base['4.9.7']['failed']} with the Java NameServer")
    return last


def _rolling(s: Suite, res: Result, gap_s: float) -> float:
    last = time.monotonic()
    for nd in s.nodes:
        t_sig = time.monotonic()
        excl = {nd.id: s.exempt_window(nd.id, "*", t_sig)}
        solo = {nd.id: s.exempt_window(0, f"solo{nd.id}-0000", t_sig)}
        rc = nd.terminate(15)
        t_exit = time.monotonic()
        res.check(rc == 0, f"node {nd.id}: exit code {rc} after SIGTERM")
        p = s.pollers[nd.id]
        lost = [u for u in p.unanswered if u[0] < t_sig and u[0] > t_sig - 5]
        res.check(not lost, f"node {nd.id}: {len(lost)} request(s) sent before SIGTERM not answered: {lost[:3]}")
        res.notes.append(f"n{nd.id} drained and exited in {t_exit - t_sig:.2f}s")
        time.sleep(0.5)
        _restart_and_measure(s, res, [nd.id], excl, solo)
        last = nd.exec_time
        time.sleep(gap_s)
    return last


def pause(s: Suite, res: Result, i: int, secs: float) -> float:
    nd = s.node(i)
    t = time.monotonic()
    e1 = s.exempt_window(i, "*", t)
    e2 = s.exempt_window(0, f"solo{i}-0000", t)
    nd.signal(signal.SIGSTOP)
    time.sleep(secs)
    nd.signal(signal.SIGCONT)
    t_res = time.monotonic()
    s.end_exempt(e1, t_res + HEAL_GRACE_S)
    s.end_exempt(e2, t_res + HEAL_GRACE_S + 1.0)
    return t_res


def cut(s: Suite, res: Result, i: int, what: str, secs: float) -> float:
    nd = s.node(i)
    peers = [o.host for o in s.nodes if o.id != i]
    brokers = [h for h in BROKER_HOSTS if h in s.net.hosts]
    others = (peers if what in ("peers", "both") else []) + (brokers if what in ("brokers", "both") else [])
    t = time.monotonic()
    e1 = s.exempt_window(i, "*", t)
    e2 = s.exempt_window(0, f"solo{i}-0000", t)
    s.net.cut(nd.host, others)
    time.sleep(secs)
    # errors on the cut-off node itself are allowed; reported for information
    counted = sum(1 for e in s.pollers[i].errors if t <= e.t)
    res.notes.append(f"n{i} cut from {what} {secs:.0f}s: {counted} route errors on n{i} while cut (allowed)")
    s.net.heal(nd.host)
    t_heal = time.monotonic()
    s.end_exempt(e1, t_heal + HEAL_GRACE_S)
    # solo<i> lost its registrations (heartbeats timed out); it reconnects and registers again
    s.end_exempt(e2, t_heal + BROKER_TIMEOUT_MS / 1000.0 + HEAL_GRACE_S + 1.0)
    return t_heal


def loss(s: Suite, res: Result, percent: int, arrivals: int, max_s: Optional[float] = None) -> float:
    for nd in s.nodes:
        s.net.loss(nd.host, [o.host for o in s.nodes if o.id != nd.id], GOSSIP_PORT, percent)
    try:
        _arrivals(s, res, arrivals, ARRIVAL_P99_S, f"{percent}% loss", max_s)
    finally:
        for nd in s.nodes:
            s.net.heal(nd.host)
    return time.monotonic()


def delay(s: Suite, res: Result, arrivals: int) -> float:
    procs = s.relays_start(200, 100)
    try:
        _arrivals(s, res, arrivals, ARRIVAL_P99_S + 0.3, "200±100 ms delay")
    finally:
        out = s.relays_stop(procs)
        res.notes.append("relays: " + "; ".join(out))
    return time.monotonic()


def skew(s: Suite, res: Result, arrivals: int) -> float:
    nd = s.node(2)
    t = time.monotonic()
    nd.terminate(10)
    excl = {2: s.exempt_window(2, "*", t)}
    solo = {2: s.exempt_window(0, "solo2-0000", t)}
    _restart_and_measure(s, res, [2], excl, solo, faketime="+5m")
    try:
        time.sleep(2.0)
        _arrivals(s, res, arrivals, ARRIVAL_P99_S, "node 2 clock +5 min")
    finally:
        t = time.monotonic()
        nd.terminate(10)
        excl = {2: s.exempt_window(2, "*", t)}
        solo = {2: s.exempt_window(0, "solo2-0000", t)}
        _restart_and_measure(s, res, [2], excl, solo)
    return nd.exec_time


def flood(s: Suite, res: Result, secs: float) -> float:
    before = s.rejects(3)
    names_before = set(s.expected_names())
    p = subprocess.Popen(s.net.exec_prefix("n1") + [
        "python3", str(HERE / "flood.py"), "--target", s.node(3).ip, "--port", str(GOSSIP_PORT),
        "--capture", "3", "--seconds", str(secs)], stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    # and unsigned junk from a stranger's address
    q = subprocess.Popen(s.net.exec_prefix("atk") + [
        "python3", str(HERE / "flood.py"), "--target", s.node(3).ip, "--port", str(GOSSIP_PORT),
        "--capture", "0", "--seconds", str(secs + 3), "--rate", "500"], stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    s.extra_procs += [p, q]
    time.sleep(3.5)
    _arrivals(s, res, 3, ARRIVAL_P99_S, "during the flood")
    out_p, _ = p.communicate(timeout=secs + 30)
    out_q, _ = q.communicate(timeout=secs + 30)
    sent = 0
    for o in (out_p, out_q):
        try:
            d = json.loads(o.strip().splitlines()[-1])
            sent += sum(d["sent"].values())
            res.notes.append(f"flood: {d}")
        except (ValueError, IndexError):
            res.failures.append(f"flood tool printed {o!r}")
    after = s.rejects(3)
    res.notes.append(f"n3 rejected {after - before} of {sent} bad packets (the rest lost in socket buffers)")
    res.check(after - before > 0, "node 3 counted no rejected packet")
    for nd in s.live_nodes():
        extra = (s.names_on(nd.id) or set()) - names_before - {"probe-0000"}
        extra = {x for x in extra if not x.startswith("java")}
        res.check(not extra, f"node {nd.id} shows brokers nobody registered: {extra}")
        res.check(nd.alive(), f"node {nd.id} died")
    return time.monotonic()


def one_node(s: Suite, res: Result, arrivals: int) -> float:
    _arrivals(s, res, arrivals, ARRIVAL_P99_S, "no fault")
    return time.monotonic()


def dies_silently(s: Suite, res: Result) -> float:
    """A broker (on every node) whose host vanishes: its packets stop, no FIN, no RST."""
    g = s.sims.get("ghost") or s.sim("ghost", "ghost", [1, 2, 3], 1, "ghost-")
    name = g.names()[0]
    time.sleep(2.0)
    with s.expect_lock:
        s.expect.pop(name, None)
    s.net.cut("ghost", [h for h in s.net.hosts if h != "ghost"])
    g.proc.kill()  # its FIN/RST never leaves the namespace
    t_die = time.monotonic()
    gone = None
    deadline = t_die + BROKER_TIMEOUT_MS / 1000.0 + 10
    while time.monotonic() < deadline:
        if all(name not in (s.names_on(nd.id) or {name}) for nd in s.live_nodes()):
            gone = time.monotonic() - t_die
            break
        time.sleep(0.05)
    res.notes.append(f"ghost broker gone from every node {gone:.2f}s after its last packet" if gone
                     else "ghost broker never gone")
    res.check(gone is not None, "a broker that died silently is still shown")
    s.sims.pop("ghost", None)
    try:
        g.close(2)
    except Exception:  # noqa: BLE001
        pass
    return time.monotonic()
