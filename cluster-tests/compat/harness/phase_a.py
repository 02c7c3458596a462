"""Scenarios 1-6: one set of NameServers (nsrvd, Java 5.4.0, 5.3.3 and 4.9.7) side by side, with a
5.3.3 master (broker-a), a 4.9.7 master (broker-b) and a 5.4.0 master (broker-c) registered with
all of them, so every route mixes three broker versions. Every client
is pointed at one NameServer only, so each cell shows what that NameServer alone makes work;
the Java NameServer of the peer's version is the oracle that nsrvd's results are compared with.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import nsquery as q
from clients import PEERS, AdminOut, mqadmin, run_client, start_client
from common import FAIL, KIND_OF_VERSION, PASS, RESULTS, SKIP, VERSIONS, cfg, log, rmq, wait_until
from servers import LABELS, Broker, NameServer, make_nameserver, normalize

CLUSTER = "DefaultCluster"
MASTER_NAME = {"5.3.3": "broker-a", "4.9.7": "broker-b", "5.4.0": "broker-c"}
MASTERS = set(MASTER_NAME.values())
ORACLE_KIND = KIND_OF_VERSION


def versions_selected() -> List[str]:
    return [v for v in VERSIONS if KIND_OF_VERSION[v] in cfg().peers]


def admin_version(ns: NameServer) -> str:
    """The mqadmin that goes with a NameServer: its own version, 5.3.3 for nsrvd."""
    return ns.version if ns.version in VERSIONS else "5.3.3"


class PhaseA:
    def __init__(self) -> None:
        kinds = []
        if "nsrvd" in cfg().targets and cfg().has_nsrvd():
            kinds.append("nsrvd")
        # Every Java NameServer always runs: 5.3.3 is the oracle of most rows, 5.4.0 and 4.9.7
        # of their own version's peers.
        kinds += ["java540", "java533", "java497"]
        self.ns: Dict[str, NameServer] = {k: make_nameserver(k, "A") for k in kinds}
        self.masters: Dict[str, Broker] = {}
        self.slaves: Dict[Tuple[str, str], Broker] = {}
        self.nsrvd_error: Optional[str] = None
        if "nsrvd" in cfg().targets and not cfg().has_nsrvd():
            self.nsrvd_error = f"no nsrvd binary at {cfg().nsrvd}"

    # -- set-up ---------------------------------------------------------------------------
    def start(self) -> bool:
        log("phase A: starting NameServers " + ", ".join(f"{k}={n.addr}" for k, n in self.ns.items()))
        for n in self.ns.values():
            n.start()
        for k, n in list(self.ns.items()):
            if not n.wait_ready(60):
                if k == "nsrvd":
                    self.nsrvd_error = f"nsrvd did not start: see {n.proc.logfile if n.proc else '?'}"
                    n.stop()
                    del self.ns[k]
                else:
                    return False
        nss = list(self.ns.values())
        for v, name in MASTER_NAME.items():
            self.masters[v] = Broker(v, name, 0, nss, tag=f"A-{name}-0")
        for b in self.masters.values():
            b.start()
        if not all(b.wait_ready(150) for b in self.masters.values()):
            return False
        for n in self.ns.values():
            ok = wait_until(lambda n=n: set(q.cluster_info(n).get("brokerAddrTable", {})) >= MASTERS, 40)
            if not ok:
                log(f"phase A: brokers did not register with {n.label}")
                if n.kind == "nsrvd":
                    self.nsrvd_error = "the brokers did not register with nsrvd within 40 s"
                else:
                    return False
        log("phase A: brokers registered: " + ", ".join(f"{b.name}={b.addr}" for b in self.masters.values()))
        # The topic every scenario routes (scenario 1 shows it, 3 and 6 watch its route).
        outs = self.create_topics("5.3.3", self.oracle_ns("5.3.3"), [S1_TOPIC])
        missing = self.wait_routes([S1_TOPIC])
        if missing:
            log("phase A: topic not routed everywhere: " + ", ".join(missing) + "\n" + _fmt_admin(outs))
            return False
        return True

    def stop(self) -> None:
        for b in list(self.slaves.values()) + list(self.masters.values()):
            if b.proc is not None and b.proc.alive():
                b.kill9()
        for n in self.ns.values():
            n.stop()

    # -- helpers --------------------------------------------------------------------------
    def columns(self) -> List[str]:
        cols = []
        if "nsrvd" in cfg().targets:
            cols.append("nsrvd")
        if "java" in cfg().targets:
            cols.append("java")
        return cols

    def ns_for(self, column: str, oracle: str) -> Optional[NameServer]:
        if column == "nsrvd":
            return self.ns.get("nsrvd")
        return self.ns.get(ORACLE_KIND[oracle])

    def oracle_ns(self, oracle: str) -> NameServer:
        return self.ns[ORACLE_KIND[oracle]]

    def unavailable(self, scenario: int, peer: str, oracle: str, column: str) -> bool:
        """Records the cell and returns True if this column has no NameServer to test."""
        if self.ns_for(column, oracle) is not None:
            return False
        if column == "nsrvd" and self.nsrvd_error and "no nsrvd binary" in self.nsrvd_error:
            RESULTS.set(scenario, peer, oracle, column, SKIP, self.nsrvd_error)
        else:
            RESULTS.set(scenario, peer, oracle, column, FAIL, self.nsrvd_error or "NameServer not running")
        return True

    def create_topics(self, version: str, ns: NameServer, topics: Sequence[str], extra: Sequence[str] = ()
                      ) -> List[AdminOut]:
        cmds = [["updateTopic", "-c", CLUSTER, "-t", t, "-r", "4", "-w", "4", "-n", ns.addr, *extra] for t in topics]
        return mqadmin(version, cmds)

    def wait_routes(self, topics: Sequence[str], timeout: float = 30) -> List[str]:
        """Wait until every NameServer routes every topic to every master; returns misses."""
        missing = []
        for n in self.ns.values():
            for t in topics:
                ok = wait_until(lambda n=n, t=t: MASTERS <= set(q.route_brokers(n, t)), timeout)
                if not ok:
                    missing.append(f"{t}@{n.label}")
        return missing


def _both(fn: Callable[[str], object], columns: Sequence[str]) -> Dict[str, object]:
    """Run fn(column) for each column concurrently."""
    out: Dict[str, object] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(columns))) as ex:
        futs = {c: ex.submit(fn, c) for c in columns}
        for c, f in futs.items():
            out[c] = f.result()
    return out


def _fmt_admin(outs: Sequence[AdminOut]) -> str:
    return "\n".join(f"$ mqadmin {' '.join(o.args)}\n{o.output}" for o in outs)


# ============================================================================================
# Scenario 1: registration of a 5.4.0, a 5.3.3 and a 4.9.7 broker; clusterList, topicList, topicRoute
# ============================================================================================

S1_TOPIC = "CompatS1"
S1_ROUTES = [S1_TOPIC, "TBW102", *sorted(MASTERS), CLUSTER]


def s1(A: PhaseA) -> None:
    for v in versions_selected():
        peer = f"mqadmin {v}"

        def admin(column: str, v=v) -> Optional[List[AdminOut]]:
            ns = A.ns_for(column, v)
            if ns is None:
                return None
            cmds = [["clusterList", "-n", ns.addr], ["topicList", "-n", ns.addr]]
            cmds += [["topicRoute", "-t", t, "-n", ns.addr] for t in S1_ROUTES]
            cmds += [["topicClusterList", "-t", S1_TOPIC, "-n", ns.addr],
                     ["topicRoute", "-t", "NoSuchTopicS1", "-n", ns.addr]]
            return mqadmin(v, cmds)

        res = _both(admin, A.columns())
        java = res.get("java")
        java_ok = None
        if java is not None:
            problems = s1_sanity(java, v)
            java_ok = not problems
            RESULTS.set(1, peer, v, "java", PASS if java_ok else FAIL, "; ".join(problems), _fmt_admin(java))
        elif "java" in A.columns():
            A.unavailable(1, peer, v, "java")
        if "nsrvd" in A.columns():
            if A.unavailable(1, peer, v, "nsrvd"):
                continue
            outs_n = res["nsrvd"]
            problems = s1_sanity(outs_n, v)
            if java is not None:
                problems += s1_compare(outs_n, java)
            ev = "---- nsrvd\n" + _fmt_admin(outs_n) + "\n---- Java NameServer " + v + "\n" + (_fmt_admin(java) if java else "")
            RESULTS.set(1, peer, v, "nsrvd", PASS if not problems else FAIL, "; ".join(problems), ev)


def s1_sanity(outs: List[AdminOut], v: str) -> List[str]:
    p = []
    cl = q.parse_cluster_list(outs[0].output or "")
    want = {(CLUSTER, b, "0", f"{b}#0") for b in MASTERS}
    have = {r[:4] for r in cl}
    # mqadmin 4.9.7 clusterList dies with an NPE on a 5.x broker's runtime info (no
    # "getTransferedTps"), whatever the NameServer: a Java-side limit, checked for equality only.
    known_497_npe = v == "4.9.7" and "getTransferedTps" in (outs[0].output or "")
    if not want <= have and not known_497_npe:
        p.append(f"clusterList lacks {sorted(want - have)}")
    if CLUSTER not in (outs[-2].output or ""):
        p.append("topicClusterList did not print " + CLUSTER)
    tl = q.parse_topic_list(outs[1].output or "")
    for t in (S1_TOPIC, *sorted(MASTERS), CLUSTER):
        if t not in tl:
            p.append(f"topicList lacks {t}")
    r = q.parse_route_output(outs[2].output or "")
    if r is None:
        p.append("topicRoute CompatS1 printed no route")
    else:
        bds = {b["brokerName"]: b.get("brokerAddrs") for b in r.get("brokerDatas", [])}
        if bds != {b: {"0": f"{b}#0"} for b in MASTERS}:
            p.append(f"topicRoute CompatS1 brokers {bds}")
        qds = sorted((d["brokerName"], d["readQueueNums"], d["writeQueueNums"], d["perm"]) for d in r.get("queueDatas", []))
        if qds != [(b, 4, 4, 6) for b in sorted(MASTERS)]:
            p.append(f"topicRoute CompatS1 queues {qds}")
    if q.error_code(outs[-1].output or "") != 17:
        p.append("topicRoute of an unknown topic did not fail with CODE 17")
    return p


def s1_compare(mine: List[AdminOut], java: List[AdminOut]) -> List[str]:
    p = []
    a, b = q.parse_cluster_list(mine[0].output or ""), q.parse_cluster_list(java[0].output or "")
    if a != b:
        p.append(f"clusterList differs: {a} vs Java {b}")
    a2, b2 = q.parse_topic_list(mine[1].output or ""), q.parse_topic_list(java[1].output or "")
    if a2 != b2:
        p.append(f"topicList differs: only nsrvd {sorted(set(a2) - set(b2))}, only Java {sorted(set(b2) - set(a2))}")
    for i, t in enumerate(S1_ROUTES, start=2):
        ra, rb = q.parse_route_output(mine[i].output or ""), q.parse_route_output(java[i].output or "")
        if ra != rb:
            p.append(f"topicRoute {t} differs")
    ca, cb = q.parse_topic_list(mine[-2].output or ""), q.parse_topic_list(java[-2].output or "")
    if ca != cb:
        p.append(f"topicClusterList differs: {ca} vs Java {cb}")
    ea, eb = q.error_code(mine[-1].output or ""), q.error_code(java[-1].output or "")
    if ea != eb:
        p.append(f"unknown topic: CODE {ea} vs Java {eb}")
    return p


# ============================================================================================
# Scenario 2: 1000 messages produced and consumed per client, routes from one NameServer
# ============================================================================================

S2_COUNT = 1000


def s2(A: PhaseA) -> None:
    peers = [p for p in ("java540", "java533", "java497", "go", "go211", "node") if p in cfg().peers]
    jobs = []
    topics_by_col: Dict[Tuple[str, str], List[str]] = {}
    for p in peers:
        oracle = PEERS[p].oracle
        for col in A.columns():
            if A.unavailable(2, PEERS[p].label, oracle, col):
                continue
            ns = A.ns_for(col, oracle)
            topic = f"S2_{p}_{col}"
            jobs.append((p, col, ns, topic))
            # the topic is created with the mqadmin of the peer's version, through this NameServer
            topics_by_col.setdefault((oracle, ns.addr), []).append(topic)
    created: Dict[str, str] = {}
    for (oracle, _addr), topics in topics_by_col.items():
        ns = next(j[2] for j in jobs if j[2].addr == _addr)
        outs = A.create_topics(oracle, ns, topics)
        for o, t in zip(outs, topics):
            created[t] = _fmt_admin([o])
    missing = A.wait_routes([j[3] for j in jobs])

    def one(job) -> None:
        p, col, ns, topic = job
        label, oracle = PEERS[p].label, PEERS[p].oracle
        if any(m.startswith(topic + "@") for m in missing):
            RESULTS.set(2, label, oracle, col, FAIL, f"route of {topic} missing after mqadmin updateTopic",
                        created.get(topic, ""))
            return
        group = f"CG_{topic}"
        cons = start_client(p, ["consume", "--ns", ns.addr, "--topic", topic, "--count", str(S2_COUNT),
                                "--group", group, "--timeout", "150"])
        rc, out = run_client(p, ["produce", "--ns", ns.addr, "--topic", topic, "--count", str(S2_COUNT),
                                 "--group", f"PG_{topic}"], timeout=240)
        crc = cons.wait(170)
        if crc is None:
            cons.kill()
        cout = cons.output()
        problems = []
        m = re.search(r"PRODUCE ok=(\d+) failed=(\d+) brokers=(.*)", out)
        if rc != 0 or not m or int(m.group(1)) != S2_COUNT:
            problems.append("producer: " + (m.group(0) if m else f"exit {rc}, no summary"))
        elif not all(b in m.group(3) for b in MASTERS):
            problems.append("producer did not use every broker: " + m.group(3))
        mc = re.search(r"CONSUME distinct=(\d+) total=(\d+)", cout)
        if crc != 0 or not mc or int(mc.group(1)) != S2_COUNT:
            problems.append("consumer: " + (mc.group(0) if mc else f"exit {crc}, no summary"))
        retries = re.search(r"retries=(\d+)", out)
        note = f"{retries.group(1)} send(s) retried by the test program" if retries and retries.group(1) != "0" else ""
        detail = "; ".join(problems) if problems else note
        RESULTS.set(2, label, oracle, col, FAIL if problems else PASS, detail,
                    f"---- producer\n{out[-6000:]}\n---- consumer\n{cout[-6000:]}")

    with ThreadPoolExecutor(max_workers=cfg().workers) as ex:
        list(ex.map(one, jobs))


# ============================================================================================
# Scenario 3: master and slave in one broker group
# ============================================================================================


def s3_start_slaves(A: PhaseA) -> None:
    """One slave per (version, NameServer) that registers with that NameServer only, so that
    what the slave learns (masterAddr, HA address) can only have come from it."""
    for v in versions_selected():
        for col in A.columns():
            ns = A.ns_for(col, v)
            if ns is None:
                continue
            b = Broker(v, MASTER_NAME[v], 1, [ns], tag=f"A-{MASTER_NAME[v]}-1-{col}")
            LABELS[b.addr] = f"{MASTER_NAME[v]}#1"
            LABELS[b.ha_addr] = f"{MASTER_NAME[v]}#1-ha"
            self_key = (v, col)
            A.slaves[self_key] = b
            b.start()


def s3(A: PhaseA) -> None:
    if not A.slaves:
        s3_start_slaves(A)
    ready = {k: b.wait_ready(150) for k, b in A.slaves.items()}
    for v in versions_selected():
        peer = f"broker {v} master+slave"
        master = A.masters[v]
        for col in A.columns():
            if A.unavailable(3, peer, v, col):
                continue
            ns = A.ns_for(col, v)
            slave = A.slaves.get((v, col))
            if slave is None or not ready.get((v, col)):
                RESULTS.set(3, peer, v, col, FAIL, "harness: slave broker did not start",
                            slave.proc.output()[-5000:] if slave and slave.proc else "")
                continue
            problems = []
            want = {"0": master.addr, "1": slave.addr}
            got = wait_until(lambda: q.route_brokers(ns, S1_TOPIC).get(master.name) == want and want, 40)
            if not got:
                problems.append(f"route of {S1_TOPIC}: {master.name} addrs {q.route_brokers(ns, S1_TOPIC).get(master.name)}, "
                                f"want {want}")
            # What the slave learnt from the REGISTER_BROKER reply: it logs the master address
            # (slave synchronisation) and connects its HA client to the master's HA address.
            learnt = wait_until(lambda: _slave_learnt(slave, master), 45, 1.0)
            if not learnt:
                problems.append("the slave never logged the master address / HA address it should learn from "
                                "the REGISTER_BROKER reply")
            RESULTS.set(3, peer, v, col, FAIL if problems else PASS, "; ".join(problems),
                        "---- slave logs (tail)\n" + slave.logs_text()[-8000:])
    for p in ("go211", "go"):
        if p not in cfg().peers:
            continue
        label = PEERS[p].label + " route (master+slave)"
        for col in A.columns():
            if A.unavailable(3, label, "5.3.3", col):
                continue
            ns = A.ns_for(col, "5.3.3")
            rc, out = run_client(p, ["produce", "--ns", ns.addr, "--topic", S1_TOPIC, "--count", "20"], timeout=90)
            problems = []
            expect = q.route_brokers(ns, S1_TOPIC)
            routes = [ln for ln in out.splitlines() if ln.startswith(f"ROUTE {S1_TOPIC} ")]
            if not routes:
                problems.append("the Go client logged no route")
            else:
                parsed = rmq.loads_lenient(routes[-1].split(" ", 2)[2])
                got = {b.get("brokerName"): {str(k): v for k, v in (b.get("brokerAddrs") or {}).items()}
                       for b in parsed.get("brokerDatas", [])}
                if got != expect:
                    problems.append(f"Go parsed brokerAddrs {normalize(str(got))}, NameServer holds {normalize(str(expect))}")
                if not any(len(a) >= 2 for a in expect.values()):
                    problems.append("no broker group with a slave in the route")
            if rc != 0:
                problems.append("sending failed: " + " ".join(re.findall(r"(PRODUCE .*|FIRST_ERROR .*)", out)))
            RESULTS.set(3, label, "5.3.3", col, FAIL if problems else PASS, "; ".join(problems), out[-6000:])


def _slave_learnt(slave: Broker, master: Broker) -> bool:
    text = slave.logs_text()
    # 5.x: "Update master address from null to ..."; HA: "update master ha address, OLD: ... NEW: ...";
    # 4.9.x: "update master address, OLD: ... NEW: ...". Both addresses must appear in such lines.
    lines = [ln for ln in text.splitlines() if re.search(r"(?i)master", ln)]
    joined = "\n".join(lines)
    return master.addr in joined and master.ha_addr in joined


# ============================================================================================
# Scenario 4: KV config, order config and ordered topics, NameServer config
# ============================================================================================


def s4(A: PhaseA) -> None:
    for v in versions_selected():
        peer = f"mqadmin {v}"
        res = _both(lambda col, v=v: s4_run(A, v, col), A.columns())
        java = res.get("java")
        if java is not None:
            RESULTS.set(4, peer, v, "java", PASS if not java["problems"] else FAIL, "; ".join(java["problems"]),
                        java["evidence"])
        elif "java" in A.columns():
            A.unavailable(4, peer, v, "java")
        if "nsrvd" not in A.columns():
            continue
        mine = res.get("nsrvd")
        if mine is None:
            A.unavailable(4, peer, v, "nsrvd")
            continue
        problems = list(mine["problems"])
        if java is not None:
            for key in mine["compare"]:
                a, b = mine["compare"][key], java["compare"].get(key)
                if a != b:
                    problems.append(f"{key}: {a!r} vs Java {b!r}")
        RESULTS.set(4, peer, v, "nsrvd", PASS if not problems else FAIL, "; ".join(problems),
                    mine["evidence"] + ("\n---- Java\n" + java["evidence"] if java else ""))


def s4_run(A: PhaseA, v: str, col: str) -> Optional[dict]:
    ns = A.ns_for(col, v)
    if ns is None:
        return None
    nsn = f"COMPAT_S4_{v.replace('.', '')}"
    otopic = f"S4_ORDER_{v.replace('.', '')}_{col}"
    conf = "broker-a:4;broker-b:4"
    problems: List[str] = []
    compare: Dict[str, object] = {}
    evidence = []
    created = A.create_topics(v, ns, [otopic])
    evidence.append(_fmt_admin(created))
    if A.wait_routes([otopic]):
        problems.append(f"route of {otopic} missing after updateTopic")
    n = ["-n", ns.addr]
    cmds = [
        ["updateKvConfig", "-s", nsn, "-k", "k1", "-v", "v1", *n],
        ["updateKvConfig", "-s", nsn, "-k", "k2", "-v", "v2", *n],
        ["deleteKvConfig", "-s", nsn, "-k", "k2", *n],
        ["updateOrderConf", "-t", otopic, "-m", "put", "-v", conf, *n],
        ["updateOrderConf", "-t", otopic, "-m", "get", *n],
        ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", *n],
        ["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/nsrvd-compat-evil.json", *n],
        ["getNamesrvConfig", *n],
        ["topicRoute", "-t", otopic, *n],
    ]
    outs = mqadmin(v, cmds)
    evidence.append(_fmt_admin(outs))
    o = [x.output or "" for x in outs]
    # Each command's own message, compared with the Java NameServer's (addresses masked).
    for i, key in ((0, "updateKvConfig"), (2, "deleteKvConfig"), (3, "updateOrderConf put"),
                   (4, "updateOrderConf get"), (5, "updateNamesrvConfig allowed key")):
        compare[key] = _first_line(normalize(o[i].replace(ns.addr, "NS").replace(otopic, "TOPIC")))
    for i in (0, 1, 2, 3, 5):
        if re.search(r"Exception|CODE:", o[i]):
            problems.append(f"{' '.join(cmds[i][:3])} failed: {_first_line(o[i])}")
    if conf not in o[4]:
        problems.append(f"updateOrderConf get did not print {conf}")
    # Refusal of a blacklisted key: NO_PERMISSION (16).
    compare["updateNamesrvConfig kvConfigPath: code"] = q.error_code(o[6])
    if q.error_code(o[6]) != 16:
        problems.append(f"updateNamesrvConfig kvConfigPath not refused with CODE 16: {_first_line(o[6])}")
    cfgmap = q.parse_config_output(o[7])
    for k, want in (("orderMessageEnable", "true"), ("listenPort", str(ns.port)), ("kvConfigPath", str(ns.kv_path))):
        if cfgmap.get(k) != want:
            problems.append(f"getNamesrvConfig {k}={cfgmap.get(k)!r}, want {want!r}")
    r = q.parse_route_output(o[8])
    compare["orderTopicConf in route"] = r.get("orderTopicConf") if r else None
    if not r or r.get("orderTopicConf") != conf:
        problems.append(f"topicRoute {otopic}: orderTopicConf {r.get('orderTopicConf') if r else None!r}, want {conf!r}")
    # Direct checks of the stored KV state.
    kv1 = q.request(ns, rmq.RequestCode.GET_KV_CONFIG, {"namespace": nsn, "key": "k1"})
    kv2 = q.request(ns, rmq.RequestCode.GET_KV_CONFIG, {"namespace": nsn, "key": "k2"})
    kvl = q.request(ns, rmq.RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": nsn})
    compare["GET_KV_CONFIG k1"] = (kv1.code, (kv1.ext or {}).get("value"))
    compare["GET_KV_CONFIG k2 (deleted)"] = kv2.code
    compare["GET_KVLIST_BY_NAMESPACE"] = (kvl.code, kvl.body_text())
    if (kv1.code, (kv1.ext or {}).get("value")) != (0, "v1"):
        problems.append(f"GET_KV_CONFIG k1 -> {kv1!r}")
    if kv2.code != 22:
        problems.append(f"GET_KV_CONFIG k2 after delete -> code {kv2.code}")
    evidence.append(f"GET_KV_CONFIG k1: {kv1!r}\nGET_KV_CONFIG k2: {kv2!r}\nGET_KVLIST: {kvl!r}")
    try:
        kvfile = ns.kv_path.read_text()
        if nsn not in kvfile or '"k1":"v1"' not in kvfile.replace(" ", ""):
            problems.append(f"{ns.kv_path} does not hold the KV update: {kvfile[:300]!r}")
    except OSError as e:
        problems.append(f"kvConfigPath {ns.kv_path} unreadable: {e}")
    # An ordered producer (the client of the same version) uses exactly the queues of the conf.
    peer = KIND_OF_VERSION[v]
    rc, out = run_client(peer, ["produce", "--ns", ns.addr, "--topic", otopic, "--count", "80", "--ordered",
                                "--poll", "1000"], timeout=120)
    evidence.append("---- ordered producer\n" + out[-4000:])
    m = re.search(r"PRODUCE ok=(\d+) failed=(\d+) brokers=(\{.*?\}) queues=(\{.*?\})", out)
    if rc != 0 or not m:
        problems.append("ordered producer failed: " + _first_line(out))
    else:
        queues = sorted(re.findall(r"(broker-[ab]:\d+)=", m.group(4)))
        compare["ordered producer queues"] = queues
        want_q = sorted([f"broker-a:{i}" for i in range(4)] + [f"broker-b:{i}" for i in range(4)])
        if queues != want_q:
            problems.append(f"ordered producer used queues {queues}, want {want_q}")
    # Clean up the order conf (delete), then it is gone.
    outs2 = mqadmin(v, [["updateOrderConf", "-t", otopic, "-m", "delete", *n]])
    evidence.append(_fmt_admin(outs2))
    kvd = q.request(ns, rmq.RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": otopic})
    compare["order conf after delete"] = kvd.code
    if kvd.code != 22:
        problems.append(f"order conf still present after updateOrderConf delete: {kvd!r}")
    return {"problems": problems, "compare": compare, "evidence": "\n".join(evidence)}


def _first_line(s: str) -> str:
    for ln in (s or "").splitlines():
        if ln.strip():
            return ln.strip()[:300]
    return ""


# ============================================================================================
# Scenario 5: wipeWritePerm / addWritePerm
# ============================================================================================

S5_POLL_MS = 1000


def s5(A: PhaseA) -> None:
    peers = [p for p in ("java540", "java533", "java497", "go", "node") if p in cfg().peers]
    jobs = []  # (peer, column, ns, topic)
    for p in peers:
        oracle = PEERS[p].oracle
        for col in A.columns():
            if A.unavailable(5, PEERS[p].label, oracle, col):
                continue
            jobs.append((p, col, A.ns_for(col, oracle), f"S5_{p}_{col}"))
    if not jobs:
        return
    # Every topic first, and registered everywhere: a topic created later would bump the
    # brokers' DataVersion, and the next registration would restore the wiped permission.
    by_ns: Dict[str, List[str]] = {}
    for p, col, ns, t in jobs:
        by_ns.setdefault(ns.addr, []).append(t)
    for addr, topics in by_ns.items():
        ns = next(j[2] for j in jobs if j[2].addr == addr)
        A.create_topics(admin_version(ns), ns, topics)
    missing = A.wait_routes([j[3] for j in jobs])
    time.sleep(2)
    groups: Dict[str, List[tuple]] = {}
    for j in jobs:
        groups.setdefault(j[2].addr, []).append(j)
    _both(lambda addr: s5_group(A, groups[addr], missing), list(groups))


def s5_group(A: PhaseA, jobs: List[tuple], missing: List[str]) -> None:
    ns = jobs[0][2]
    version = admin_version(ns)
    pulses = {}
    for p, col, _ns, t in jobs:
        pulses[(p, col)] = start_client(p, ["pulse", "--ns", ns.addr, "--topic", t, "--interval", "250",
                                            "--duration", "200", "--poll", str(S5_POLL_MS)])

    def lines(pr) -> List[Tuple[int, str, str]]:
        out = []
        for m in re.finditer(r"^PULSE (\d+) (\w+) ?(.*)$", pr.output(), re.M):
            out.append((int(m.group(1)), m.group(2), m.group(3).strip()))
        return out

    def all_seen(pred) -> bool:
        return all(pred(lines(pr)) for pr in pulses.values())

    wait_until(lambda: all_seen(lambda ls: {b for t, s, b in ls if s == "OK"} >= MASTERS), 60, 1)
    t1 = int(time.time() * 1000)
    wipe = mqadmin(version, [["wipeWritePerm", "-b", "broker-a", "-n", ns.addr]])
    # stopped: 8 consecutive sends (2 s) after the wipe, none of them to broker-a
    def stopped(ls) -> bool:
        after = [b for t, s, b in ls if t > t1]
        return len(after) >= 8 and all(b != "broker-a" for b in after[-8:])
    wait_until(lambda: all_seen(stopped), 50, 1)
    t2 = int(time.time() * 1000)
    add = mqadmin(version, [["addWritePerm", "-b", "broker-a", "-n", ns.addr]])
    wait_until(lambda: all_seen(lambda ls: any(t > t2 and s == "OK" and b == "broker-a" for t, s, b in ls)), 50, 1)
    time.sleep(1)
    for pr in pulses.values():
        pr.kill()
    wipe_out, add_out = wipe[0].output or "", add[0].output or ""
    for (p, col), pr in pulses.items():
        label, oracle = PEERS[p].label, PEERS[p].oracle
        topic = f"S5_{p}_{col}"
        ls = lines(pr)
        problems = []
        if any(m.startswith(topic + "@") for m in missing):
            problems.append("route missing after updateTopic")
        m = re.search(r"wipe write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", wipe_out)
        if not m or int(m.group(1)) < 1:
            problems.append("wipeWritePerm: " + _first_line(wipe_out))
        m2 = re.search(r"add write perm of broker\[broker-a\] in name server\[[^\]]*\] OK, (\d+)", add_out)
        if not m2 or int(m2.group(1)) < 1:
            problems.append("addWritePerm: " + _first_line(add_out))
        before = {b for t, s, b in ls if t < t1 and s == "OK"}
        if before != MASTERS:
            problems.append(f"before the wipe the producer wrote to {sorted(before)}")
        window = [(t, s, b) for t, s, b in ls if t1 < t < t2]
        # after the last broker-a write in the window, the producer kept writing to the others
        last_a = max([t for t, s, b in window if b == "broker-a"], default=t1)
        tail = [x for x in window if x[0] > last_a]
        if len([x for x in tail if x[1] == "OK" and x[2] in MASTERS - {"broker-a"}]) < 8:
            problems.append("the producer did not stop writing to broker-a after wipeWritePerm")
        stop_ms = last_a - t1
        if not any(t > t2 and s == "OK" and b == "broker-a" for t, s, b in ls):
            problems.append("the producer did not resume writing to broker-a after addWritePerm")
        fails = [x for x in ls if x[1] != "OK"]
        # A send timing out on a loaded two-core box is the broker's business, not the
        # NameServer's: up to two timeouts are tolerated (and reported); any other failure is not.
        hard = [x for x in fails if "timeout" not in x[2].lower()]
        if hard or len(fails) > 2:
            problems.append(f"{len(fails)} sends failed, first: {(hard or fails)[0][2][:200]}")
        note = f"{len(fails)} send(s) timed out" if fails and not problems else ""
        detail = "; ".join(problems) if problems else note
        RESULTS.set(5, label, oracle, col, FAIL if problems else PASS, detail,
                    f"wipe at {t1}, add at {t2}\n{wipe_out}\n{add_out}\n---- pulse\n{pr.output()[-8000:]}")


# ============================================================================================
# Scenario 6: deleteTopic, graceful broker shutdown, kill -9
# ============================================================================================


def s6(A: PhaseA) -> None:
    # -- deleteTopic, through each NameServer, with the mqadmin of each version
    for v in versions_selected():
        peer = f"mqadmin {v} deleteTopic"
        res = {}
        for col in A.columns():
            if A.unavailable(6, peer, v, col):
                continue
            ns = A.ns_for(col, v)
            t = f"S6_DEL_{v.replace('.', '')}_{col}"
            created = A.create_topics(v, ns, [t])
            A.wait_routes([t])
            before = q.route(ns, t)[0]
            outs = mqadmin(v, [["deleteTopic", "-t", t, "-c", CLUSTER, "-n", ns.addr]])
            code_after = wait_until(lambda: q.route(ns, t)[0] == 17 and 17, 10) or q.route(ns, t)[0]
            others = {n.label: q.route(n, t)[0] for n in A.ns.values() if n is not ns}
            problems = []
            if before != 0:
                problems.append(f"route before deleteTopic: code {before}")
            if "delete topic" not in (outs[0].output or "").lower() or "Exception" in (outs[0].output or ""):
                problems.append("deleteTopic: " + _first_line(outs[0].output or ""))
            if code_after != 17:
                problems.append(f"route after deleteTopic: code {code_after}, want 17")
            res[col] = (code_after, problems, _fmt_admin(created + outs) + f"\nroute codes elsewhere: {others}")
        for col, (code_after, problems, ev) in res.items():
            if col == "nsrvd" and "java" in res and res["java"][0] != code_after:
                problems = problems + [f"differs from Java ({res['java'][0]})"]
            RESULTS.set(6, peer, v, col, FAIL if problems else PASS, "; ".join(problems), ev)

    # -- slaves: the 5.x ones shut down gracefully, the 4.9.7 ones are killed with -9
    for v, how in (("5.4.0", "graceful shutdown"), ("5.3.3", "graceful shutdown"), ("4.9.7", "kill -9")):
        if v not in versions_selected():
            continue
        peer = f"slave {v} {how}"
        states = {}
        for col in A.columns():
            if A.unavailable(6, peer, v, col):
                continue
            slave = A.slaves.get((v, col))
            ns = A.ns_for(col, v)
            if slave is None or slave.proc is None or not slave.proc.alive():
                RESULTS.set(6, peer, v, col, FAIL, "harness: slave not running")
                continue
            states[col] = (slave, ns)
        results = _both(lambda col: _s6_slave_gone(states[col][0], states[col][1], how), list(states))
        for col, (ok, ms, route_after, ev) in results.items():
            problems = [] if ok else [f"slave still in the route 15 s after {how}: {normalize(str(route_after))}"]
            if col == "nsrvd" and "java" in results and results["java"][2] != route_after:
                problems.append(f"route differs from Java: {normalize(str(route_after))} vs "
                                f"{normalize(str(results['java'][2]))}")
            RESULTS.set(6, peer, v, col, FAIL if problems else PASS, "; ".join(problems), ev)

    # -- masters (registered with every NameServer): 5.4.0 and 5.3.3 graceful, then 4.9.7 kill -9
    for v, how in (("5.4.0", "graceful shutdown"), ("5.3.3", "graceful shutdown"), ("4.9.7", "kill -9")):
        peer = f"master {v} {how}"
        b = A.masters[v]
        t0 = time.time()
        if how == "kill -9":
            b.kill9()
        else:
            b.terminate()
        per_ns = {}
        for n in A.ns.values():
            gone = wait_until(lambda n=n: b.name not in q.cluster_info(n).get("brokerAddrTable", {}), 15, 0.2)
            per_ns[n.kind] = {
                "gone": bool(gone), "after_s": round(time.time() - t0, 1),
                "cluster": q.canon(q.strip_5x(q.cluster_info(n)) if v == "4.9.7" else q.cluster_info(n)),
                "route S1": q.route(n, S1_TOPIC)[0] if v == "4.9.7" else sorted(q.route_brokers(n, S1_TOPIC)),
                f"route {b.name}": q.route(n, b.name)[0],
            }
        for col in A.columns():
            if A.unavailable(6, peer, v, col):
                continue
            ns = A.ns_for(col, v)
            st = per_ns[ns.kind]
            problems = []
            if not st["gone"]:
                problems.append(f"{b.name} still registered 15 s after {how}")
            if st[f"route {b.name}"] != 17:
                problems.append(f"route of topic {b.name}: code {st[f'route {b.name}']}, want 17")
            if col == "nsrvd":
                ref = per_ns[ORACLE_KIND[v]]
                for k in ("cluster", "route S1", f"route {b.name}"):
                    if normalize(str(st[k])) != normalize(str(ref[k])):
                        problems.append(f"{k}: {normalize(str(st[k]))} vs Java {normalize(str(ref[k]))}")
            RESULTS.set(6, peer, v, col, FAIL if problems else PASS, "; ".join(problems),
                        normalize(str(per_ns)) + "\n---- broker output\n" + (b.proc.output()[-3000:] if b.proc else ""))


def _s6_slave_gone(slave: Broker, ns: NameServer, how: str):
    t0 = time.time()
    if how == "kill -9":
        slave.kill9()
    else:
        slave.terminate()
    name = slave.name
    ok = wait_until(lambda: q.broker_addrs(ns, name) and "1" not in q.broker_addrs(ns, name), 15, 0.2)
    ms = int((time.time() - t0) * 1000)
    route_after = q.route_brokers(ns, S1_TOPIC).get(name)
    ev = f"{how} of {slave.addr}; after {ms} ms broker addrs {q.broker_addrs(ns, name)}; route {route_after}\n" \
         + (slave.proc.output()[-3000:] if slave.proc else "")
    return bool(ok), ms, {k: normalize(v) for k, v in (route_after or {}).items()}, ev
