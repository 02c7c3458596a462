"""Restart convergence: a node killed with kill -9 and restarted, in a
3-node cluster where 1000 brokers (20 topics each, plus the system topics) register with every
node every 30 s. Measured: the time from the restarted process's exec until its /status broker
set (identity and DataVersion) and a sample of routes (GET_ROUTEINFO_BY_TOPIC, including TBW102
which every broker hosts) equal its peers'.

A Java broker re-registers on its own timer (registerNameServerPeriod, 30 s) and opens a new
connection to a restarted NameServer only then. The simulator would instead reconnect and
re-register within a few hundred milliseconds of the node coming back, which would hide what
gossip does. So the brokers are ``cut`` from the node before it is killed:

* with gossip, they stay cut until the node has converged: it converges from its peers alone
  (a stricter test than the real case, where some brokers' timers fire meanwhile);
* without gossip (``gossipEnable=false`` on the restarted node), each broker is healed at its
  "next registration", spread evenly over one 30 s period after the restart: what Java brokers
  with uniformly spread timers do. That measurement is bounded at 35 s.

Environment: NSRV_RESTART_BROKERS (1000), NSRV_RESTART_REPS (10), NSRV_RESTART_NOGOSSIP_REPS (1).
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Dict, List, Optional, Tuple

import pytest

from clusterlib import Node, http_get, normalize_route, percentile, poll_until
from nsrvd_proc import timeout_mult
from rmq import RequestCode, ResponseCode
from testenv import knob

N_BROKERS = int(knob("NSRV_RESTART_BROKERS", "1000"))
TOPICS = 20
REPS = int(knob("NSRV_RESTART_REPS", "10"))
SANITIZER_REPS = 3  # a sanitizer build (run-all-tests' cluster-asan stage) runs 3 of them
NOGOSSIP_REPS = int(knob("NSRV_RESTART_NOGOSSIP_REPS", "1"))
PERIOD_MS = 30000
BOUND_S = 35.0
P99_TARGET_S = 2.0
SAMPLE_TOPICS = 40


def sample_topics(n_brokers: int) -> List[str]:
    rnd = random.Random(4)
    picks = [f"topic-broker-{rnd.randrange(n_brokers):04d}-{rnd.randrange(TOPICS)}" for _ in range(SAMPLE_TOPICS)]
    return ["TBW102"] + picks


class Convergence:
    """Polls the restarted node until its registry equals the reference."""

    def __init__(self, x: Node, ref_set: frozenset, ref_routes: Dict[str, dict]) -> None:
        self.x = x
        self.ref_set = ref_set
        self.ref_routes = ref_routes
        self.timeline: List[Tuple[float, int]] = []  # (seconds since exec, brokers known)
        self.t_status: Optional[float] = None
        self.t_done: Optional[float] = None
        self.t_up: Optional[float] = None

    def step(self) -> bool:
        # The cheap gauge first: parsing a 1000-broker /status every 50 ms took CPU from the
        # very nodes being timed (on 2 loaded cores, a good part of the measured second).
        try:
            brokers = self.x.metrics().get("nsrvd_brokers", 0)
        except (OSError, AssertionError):
            return False
        now = time.monotonic() - self.x.exec_time
        if self.t_up is None:
            self.t_up = now
        self.timeline.append((now, int(brokers)))
        if brokers < len(self.ref_set):
            return False
        try:
            code, body = http_get(self.x.status_port, "/status")
        except OSError:
            return False
        now = time.monotonic() - self.x.exec_time  # answered; the parsing is ours
        if code != 200:
            return False
        have = self.x.broker_set(json.loads(body))
        self.timeline.append((now, len(have & self.ref_set)))
        if have != self.ref_set:
            return False
        if self.t_status is None:
            self.t_status = now
        answered = self.routes_answered_equal()
        if answered is None:
            return False
        self.t_done = answered - self.x.exec_time
        return True

    def routes_answered_equal(self) -> Optional[float]:
        """When the node answered the sample routes, if they equal the reference; else None.
        The measuring must not be measured: the routes are asked in one pipelined batch (41
        round trips cost a scheduler wait each on a loaded machine) and timed when the answers
        are in, before this pure-Python client parses them (TBW102's route names all 1000
        brokers: 0.3-0.6 s of parsing on a loaded machine, seen here as convergence time)."""
        try:
            conn = self.x.client().conn
            reqs = {t: conn.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": t}) for t in self.ref_routes}
            got = conn.pipeline(list(reqs.values()), timeout=5)
        except (OSError, ConnectionError):
            self.x.close_conn()
            return None
        answered = time.monotonic()
        for t, want in self.ref_routes.items():
            r = got[reqs[t].opaque]
            if r.code != ResponseCode.SUCCESS or normalize_route(r.body_json()) != want:
                return None
        return answered

    def run(self, bound: float, interval: float = 0.05) -> Optional[float]:
        while time.monotonic() - self.x.exec_time < bound:
            if self.step():
                return self.t_done
            time.sleep(interval)
        return None

    def known_at(self, seconds: float) -> int:
        best = 0
        for t, n in self.timeline:
            if t <= seconds:
                best = n
        return best


def reference(peers: List[Node], topics: List[str]) -> Tuple[frozenset, Dict[str, dict]]:
    sets = [p.broker_set() for p in peers]
    assert sets[0] == sets[1], "the two peers disagree before the restart"
    assert len(sets[0]) == N_BROKERS, f"peers hold {len(sets[0])} brokers, want {N_BROKERS}"
    routes = {t: peers[0].route(t) for t in topics}
    for t in topics:
        assert routes[t] is not None, f"peer has no route for {t}"
        assert peers[1].route(t) == routes[t], f"peers disagree on the route of {t}"
    return sets[0], routes


def wait_all_direct(x: Node, timeout: float) -> None:
    def ok():
        bs = x.brokers()
        return len(bs) == N_BROKERS and all(b["source"] == "direct" for b in bs.values())

    poll_until(ok, timeout, 0.25)


@pytest.mark.budget(900)
def test_restart_convergence(cluster_factory, sim_factory, results):
    c = cluster_factory()
    sim = sim_factory(
        c.ns_addrs(), brokers=N_BROKERS, topics=TOPICS, period_ms=PERIOD_MS, duration_s=3600,
        extra_args=["--ramp", "3000"],
    )
    ready = sim.wait_ready(timeout=120)
    assert ready["failed"] == 0, f"first registration round: {ready}"
    poll_until(lambda: all(len(nd.brokers()) == N_BROKERS for nd in c.nodes), 60, 0.5)
    topics = sample_topics(N_BROKERS)

    # ---- with gossip
    samples: List[float] = []
    status_samples: List[float] = []
    up_samples: List[float] = []
    pulls: List[Dict[str, int]] = []
    reps = REPS if timeout_mult() == 1 else min(REPS, SANITIZER_REPS)
    for rep in range(reps):
        x = c.node(rep % 3 + 1)
        peers = [nd for nd in c.nodes if nd is not x]
        ref_set, ref_routes = reference(peers, topics)
        sim.command(f"cut all {x.id - 1}")
        x.kill9()
        x.start(wait=False)
        conv = Convergence(x, ref_set, ref_routes)
        t = conv.run(BOUND_S)
        if t is None:
            st = x.status()
            missing = len(ref_set - x.broker_set(st))
            results.record("restart_convergence", {"failed_rep": rep, "node": x.id, "missing": missing,
                                                   "gossip": st.get("gossip")})
            pytest.fail(f"rep {rep}: node {x.id} not converged within {BOUND_S}s ({missing} brokers missing)\n"
                        f"{x.proc.tail()}")
        samples.append(t)
        status_samples.append(conv.t_status)
        up_samples.append(conv.t_up)
        g = x.gossip()
        pulls.append({"pullsOk": g["pullsOk"], "brokersImported": g["brokersImported"]})
        print(f"rep {rep}: node {x.id} up after {conv.t_up:.3f}s, /status equal after {conv.t_status:.3f}s, "
              f"routes too after {t:.3f}s (pulls {g['pullsOk']}, imported {g['brokersImported']})", flush=True)
        sim.command(f"heal all {x.id - 1}")
        wait_all_direct(x, 60)

    fig = {
        "brokers": N_BROKERS,
        "topics_per_broker": TOPICS,
        "reps": reps,
        "converged_s": [round(s, 3) for s in samples],
        "status_equal_s": [round(s, 3) for s in status_samples],
        "status_endpoint_up_s": [round(s, 3) for s in up_samples],
        "p50_s": round(percentile(samples, 50), 3),
        "p99_s": round(percentile(samples, 99), 3),
        "max_s": round(max(samples), 3),
        "pulls": pulls,
    }
    results.record("restart_convergence", fig)

    # ---- without gossip on the restarted node (brokers re-register on their own timers)
    nog: List[Optional[float]] = []
    known2: List[int] = []
    for rep in range(NOGOSSIP_REPS):
        x = c.node(1)
        peers = [c.node(2), c.node(3)]
        ref_set, ref_routes = reference(peers, topics)
        sim.command(f"cut all {x.id - 1}")
        x.kill9()
        x.start(wait=False, overrides={"gossipEnable": False})
        order = list(range(N_BROKERS))
        random.Random(rep).shuffle(order)
        stop = threading.Event()
        heal_errors: List[str] = []

        def heal_on_timers(t0=x.exec_time, order=order):
            try:
                for k, i in enumerate(order):
                    due = t0 + (k + 0.5) * PERIOD_MS / 1000.0 / N_BROKERS
                    while not stop.is_set() and time.monotonic() < due:
                        time.sleep(min(0.01, max(0.0, due - time.monotonic())))
                    if stop.is_set():
                        return
                    sim.command(f"heal {sim.name(i)} 0")
            except Exception as e:  # reported by the main thread
                heal_errors.append(repr(e))

        th = threading.Thread(target=heal_on_timers, daemon=True)
        th.start()
        conv = Convergence(x, ref_set, ref_routes)
        t = conv.run(BOUND_S, interval=0.25)
        stop.set()
        th.join(10)
        assert not heal_errors, heal_errors
        sim.command("heal all 0")
        nog.append(t)
        known2.append(conv.known_at(2.0))
        print(f"no gossip rep {rep}: converged after {t if t is not None else '> %.0f' % BOUND_S}s; "
              f"brokers known 2 s after exec: {known2[-1]}/{N_BROKERS}", flush=True)
    if NOGOSSIP_REPS:
        results.record(
            "restart_convergence",
            {
                "no_gossip_converged_s": [round(t, 3) if t is not None else f"> {BOUND_S}" for t in nog],
                "no_gossip_known_at_2s": known2,
                "no_gossip_broker_period_ms": PERIOD_MS,
            },
        )

    # The 2 s target is a speed figure of the optimised build; a sanitizer build (several
    # times slower) is held to convergence within BOUND_S above, which checks the same code.
    if timeout_mult() == 1:
        assert fig["p99_s"] <= P99_TARGET_S, f"restart convergence p99 {fig['p99_s']}s > {P99_TARGET_S}s: {samples}"
    for k in known2:
        # The comparison is meaningful only if, without gossip, the node really was incomplete.
        assert k < N_BROKERS // 2, f"without gossip the node already knew {k} brokers after 2 s"
