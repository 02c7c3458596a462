"""Scenario 11: the RocketMQ 5 stack, the Proxy in cluster mode with gRPC clients.

RocketMQ 5 clients (rocketmq-client-java and the other gRPC clients) never talk to a NameServer:
they talk gRPC to a Proxy, and the Proxy in cluster mode takes every route from the NameServers.
One column per NameServer, side by side: nsrvd, and the Java NameServer 5.4.0 as the oracle. In
each column a 5.4.0 broker (timerWheelEnable=true: pop consumption needs the timer wheel)
registers with that NameServer only, with its topics seeded in its store (the Proxy caches a
missing route for 20 s, so the topics exist before the Proxy first asks), then:

* a 5.4.0 Proxy with namesrvAddr = that NameServer: GrpcClient (rocketmq-client-java 5.0.7)
  starts a SimpleConsumer and a PushConsumer (two groups), sends S11_COUNT messages, and both
  consumers must receive every one (three rows: producer, SimpleConsumer, PushConsumer);
* on the same Proxy, the same run with rocketmq-python-client 5.1.2 (grpc-python/client.py) and
  with rocketmq-client-nodejs 1.0.8 (grpc-node/client.js), one row each for its producer and
  both consumers;
* a second 5.4.0 Proxy (after the first stopped: one Proxy JVM per column at a time) given only
  the address service (namesrvDomain, namesrvDomainSubgroup=nsaddr, no namesrvAddr): its log
  must show it took the NameServer's address from there, and the same client run must carry
  every message. For nsrvd the address service is nsrvd's own status listener
  (/rocketmq/nsaddr); the Java NameServer has none, so its column uses a static HTTP server of
  this harness that answers /rocketmq/nsaddr with the Java NameServer's address.

An nsrvd cell passes only if its check passes and its counts equal the Java column's. The nsrvd
cells' evidence lists every request code the NameServer received while the Proxies ran.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

import nsquery as q
from common import COMPAT, FAIL, J17_OPTS, PASS, RESULTS, SHORT_JVM, Proc, alloc_port, cfg, log, run, wait_until
from servers import Broker, JavaNameServer, NameServer, NsrvdServer

S11_COUNT = 100
PROXY_STARTS = 3
ORACLE = "5.4.0"
ROW_PRODUCER = "Proxy 5.4.0: gRPC producer (client-java 5.0.7)"
ROW_SIMPLE = "Proxy 5.4.0: gRPC SimpleConsumer"
ROW_PUSH = "Proxy 5.4.0: gRPC PushConsumer"
ROW_PYTHON = "Proxy 5.4.0: Python gRPC client 5.1.2 (producer, simple, push)"
ROW_NODE = "Proxy 5.4.0: Node.js gRPC client 1.0.8 (producer, simple, push)"
ROW_DOMAIN = "Proxy 5.4.0 given only the address service"
ROWS = (ROW_PRODUCER, ROW_SIMPLE, ROW_PUSH, ROW_PYTHON, ROW_NODE, ROW_DOMAIN)
# the other languages' gRPC clients: row, topic key, language, test program (for the evidence)
OTHER_CLIENTS = ((ROW_PYTHON, "python", "grpc-python/client.py"), (ROW_NODE, "node", "grpc-node/client.js"))


def _cp(role: str) -> str:
    """Class path resolved by prepare-peers.sh for the peer proxy540 (proxy, broker, namesrv)."""
    return (cfg().cache / "proxy540" / f"{role}.cp").read_text().strip()


class JavaNameServer540(JavaNameServer):
    kind = "java540"
    version = ORACLE

    def __init__(self, tag: str) -> None:
        NameServer.__init__(self, tag)

    def classpath(self) -> str:
        return _cp("namesrv")


class Broker540(Broker):
    def classpath(self) -> str:
        return _cp("broker")


class ProxyServer:
    """A 5.4.0 Proxy in cluster mode. It listens on every address (no bind-address setting)."""

    def __init__(self, tag: str, conf: Dict[str, object]) -> None:
        self.tag = tag
        self.grpc_port = alloc_port()
        self.conf = dict(conf, grpcServerPort=self.grpc_port, remotingListenPort=alloc_port())
        self.endpoint = f"127.0.0.1:{self.grpc_port}"
        self.workdir = cfg().logdir / "proxies" / tag
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: Optional[Proc] = None

    def start(self) -> "ProxyServer":
        conf_path = self.workdir / "proxy.json"
        conf_path.write_text(json.dumps(self.conf), encoding="utf-8")
        args = ["java", "-Xms128m", "-Xmx512m", *SHORT_JVM, *J17_OPTS, f"-Duser.home={self.workdir}",
                f"-Drocketmq.home.dir={self.workdir}", "-cp", _cp("proxy"), "org.apache.rocketmq.proxy.ProxyStartup",
                "-pm", "cluster", "-pc", str(conf_path)]
        self.proc = Proc(f"proxy-{self.tag}", args, self.workdir / "stdout.log")
        return self

    def wait_ready(self, timeout: float = 150) -> bool:
        assert self.proc is not None
        return self.proc.wait_for(r"rocketmq-proxy startup successfully", timeout) is not None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def why(self) -> str:
        """The first exception line of its output, or "timed out"."""
        m = re.search(r"^\S*(?:Exception|Error)\b.*$", self.proc.output() if self.proc else "", re.M)
        return m.group(0)[:300] if m else "timed out"

    def logs_text(self) -> str:
        parts = []
        for f in sorted((self.workdir / "logs").rglob("*.log")) if (self.workdir / "logs").is_dir() else []:
            try:
                parts.append(f"==== {f.name}\n" + f.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                pass
        if self.proc is not None:
            parts.append("==== stdout\n" + self.proc.output())
        return "\n".join(parts)

    def stop(self) -> None:
        if self.proc is not None and self.proc.alive():
            self.proc.terminate(20)


class StaticAddressServer:
    """The address service for a Java NameServer, which has none: GET /rocketmq/nsaddr answers
    that NameServer's address, as an operator's web server would; anything else is 404."""

    def __init__(self, ns_addr: str) -> None:
        body = ns_addr.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                ok = self.path == "/rocketmq/nsaddr"
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body) if ok else 0))
                self.end_headers()
                if ok:
                    self.wfile.write(body)

            def log_message(self, *a):  # noqa: ARG002 - keep the table's output clean
                pass

        self.port = alloc_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def domain(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------------------------------


def _columns() -> List[str]:
    cols = []
    if "nsrvd" in cfg().targets and cfg().has_nsrvd():
        cols.append("nsrvd")
    if "java" in cfg().targets:
        cols.append("java")
    return cols


def _request_counts(ns: NameServer) -> Dict[str, int]:
    """nsrvd's requests by code and replies by code (its /metrics), e.g. {"105 GET_ROUTEINFO_BY_TOPIC": 7}."""
    status = ns.extra.get("statusPort")
    if not status:
        return {}
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{status}/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    out = {}
    for m in re.finditer(r'^nsrvd_requests_by_code_total\{code="(-?\d+)",request="(\w+)"\} (\d+)', text, re.M):
        out[f"{m.group(1)} {m.group(2)}"] = int(m.group(3))
    for m in re.finditer(r'^nsrvd_request_responses_total\{request="(\w+)",response="(\w+)"\} (\d+)', text, re.M):
        if m.group(2) != "SUCCESS":
            out[f"{m.group(1)} -> {m.group(2)}"] = int(m.group(3))
    return out


def _delta(before: Dict[str, int], after: Dict[str, int]) -> str:
    d = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}
    return ", ".join(f"{k} x{v}" for k, v in sorted(d.items())) or "none"


def _run_client(col: str, proxy: ProxyServer, topic: str, tag: str, lang: str = "java") -> Tuple[Optional[dict], str]:
    """GrpcClient (lang "java") or its twins grpc-python/client.py ("python") and
    grpc-node/client.js ("node") against proxy."""
    work = cfg().logdir / "clients" / f"grpc-{lang}-{col}-{tag}"
    work.mkdir(parents=True, exist_ok=True)
    argv = ["run", "--endpoint", proxy.endpoint, "--topic", topic, "--count", str(S11_COUNT),
            "--simple-group", f"S11_SIMPLE_{col}_{tag}", "--push-group", f"S11_PUSH_{col}_{tag}", "--timeout", "60"]
    if lang == "java":
        d = cfg().cache / "proxy540" / "grpc-client"
        cp = str(d / "compat-grpc.jar") + ":" + (d / "classpath.txt").read_text().strip()
        args = ["java", "-Xmx256m", *SHORT_JVM, f"-Duser.home={work}", f"-Drocketmq.log.root={work}/logs", "-cp", cp,
                "nsrvd.compat.GrpcClient", *argv]
    elif lang == "python":
        args = [str(cfg().cache / "proxy540" / "pyenv" / "bin" / "python"), str(COMPAT / "grpc-python" / "client.py"),
                *argv]
    else:
        args = ["node", str(cfg().cache / "proxy540" / "node" / "client.js"), *argv]
    # 60 s for the consumers after the last send, plus starting and sending on a loaded machine
    rc, out = run(f"grpc-{lang}-{col}-{tag}", args, work / "output.log", 300, env={"HOME": str(work)})
    m = re.search(r'^\{"sent".*\}$', out, re.M)
    try:
        return (json.loads(m.group(0)) if m else None), out
    except ValueError:
        return None, out


def _summary(res: Optional[dict]) -> str:
    if res is None:
        return "no result line (the client failed before sending; see evidence)"
    s = (f"sent {res['sent']}/{S11_COUNT} (failed {res['sendFailed']}), SimpleConsumer {res['simpleDistinct']} "
         f"distinct of {res['simpleTotal']}, PushConsumer {res['pushDistinct']} distinct of {res['pushTotal']}")
    if res.get("errors"):
        s += "; first error: " + str(res["errors"][0])[:300]
    return s


def _start_proxy(col: str, kind: str, conf: Dict[str, object]) -> Tuple[ProxyServer, List[str]]:
    """Start a Proxy, again (up to PROXY_STARTS times) when one exits or hangs during start-up:
    on a loaded 2-core machine its start-up requests (the route of DefaultHeartBeatSyncerTopic,
    creating it on the brokers) can outlast its 3 s timeouts, against Java as against nsrvd,
    and the Proxy then exits. Returns the last Proxy (alive if it started) and a note per
    failed start."""
    notes: List[str] = []
    for attempt in range(1, PROXY_STARTS + 1):
        proxy = ProxyServer(f"S11-{col}-{kind}-{attempt}", conf)
        t = time.time()
        proxy.start()
        if proxy.wait_ready():
            log(f"  [11] {col}: Proxy ({kind}) ready in {time.time() - t:.0f} s")
            return proxy, notes
        notes.append(f"Proxy ({kind}) start {attempt} failed: {proxy.why()}")
        log(f"  [11] {col}: {notes[-1]}")
        proxy.stop()
    return proxy, notes


def _all_arrived(res: Optional[dict]) -> bool:
    return (res is not None and res["sent"] == S11_COUNT and res["sendFailed"] == 0
            and res["simpleDistinct"] == S11_COUNT and res["pushDistinct"] == S11_COUNT)


class Column:
    """What one column's run produced: per row a status, a detail, an outcome (compared with the
    oracle's) and evidence."""

    def __init__(self, col: str) -> None:
        self.col = col
        self.cells: Dict[str, Tuple[str, str, object, str]] = {}

    def set(self, row: str, ok: bool, detail: str, outcome: object, evidence: str) -> None:
        self.cells[row] = (PASS if ok else FAIL, detail, outcome, evidence)

    def fail_rest(self, why: str, evidence: str) -> None:
        for row in ROWS:
            if row not in self.cells:
                self.set(row, False, why, None, evidence)


def _nameserver(col: str) -> NameServer:
    if col == "nsrvd":
        # the status listener serves the address service for the second Proxy
        return NsrvdServer("S11", {"statusPort": alloc_port(), "logLevel": "info"})
    return JavaNameServer540("S11")


def _message_rows(C: Column, res: Optional[dict], out: str, extra: str) -> None:
    ev = f"{extra}\n---- GrpcClient\n{out[-8000:]}"
    sent_ok = res is not None and res["sent"] == S11_COUNT and res["sendFailed"] == 0
    C.set(ROW_PRODUCER, sent_ok, "" if sent_ok else _summary(res), res and (res["sent"], res["sendFailed"]), ev)
    for row, key in ((ROW_SIMPLE, "simpleDistinct"), (ROW_PUSH, "pushDistinct")):
        ok = sent_ok and res is not None and res[key] == S11_COUNT
        C.set(row, ok, "" if ok else _summary(res), res and res[key], ev)


def _one_column(col: str) -> Column:
    C = Column(col)
    ns = _nameserver(col).start()
    broker = proxy = addr_server = None
    topics = {"direct": f"S11_GRPC_{col}", "python": f"S11_GRPC_PY_{col}", "node": f"S11_GRPC_NODE_{col}",
              "domain": f"S11_GRPC_DOMAIN_{col}"}
    try:
        if not ns.wait_ready(120):  # a JVM's start on a loaded 2-core machine has taken over 60 s
            C.fail_rest(f"{ns.label} did not start", ns.proc.output()[-4000:] if ns.proc else "")
            return C
        # waitTimeMillsInSendQueue: a send waiting in the broker's queue longer than this (200 ms
        # by default) is refused as "broker busy" (TIMEOUT_CLEAN_QUEUE), which a loaded 2-core
        # machine reaches; that is the broker's flow control, nothing a NameServer decides.
        broker = Broker540(ORACLE, f"px-{col}", 0, [ns], tag=f"S11-{col}", extra={"waitTimeMillsInSendQueue": 3000},
                           topics=[{"topicName": t, "readQueueNums": 4, "writeQueueNums": 4} for t in topics.values()])
        broker.start()
        routed = broker.wait_ready(180) and wait_until(
            lambda: all(q.route(ns, t)[0] == 0 for t in topics.values()), 60)
        if not routed:
            C.fail_rest("the 5.4.0 broker did not start or its topics are not routable", broker.logs_text()[-6000:])
            return C
        before = _request_counts(ns)

        # 1. The Proxy given the NameServer's address.
        proxy, notes = _start_proxy(col, "direct", {"rocketMQClusterName": "DefaultCluster", "namesrvAddr": ns.addr})
        if not proxy.alive():
            C.fail_rest("the Proxy did not start: " + "; ".join(notes), proxy.logs_text()[-6000:])
            return C
        res, out = _run_client(col, proxy, topics["direct"], "direct")
        _message_rows(C, res, out, f"Proxy with namesrvAddr={ns.addr}")
        for row, lang, program in OTHER_CLIENTS:
            res, out = _run_client(col, proxy, topics[lang], lang, lang)
            ok = _all_arrived(res)
            C.set(row, ok, "" if ok else _summary(res), res and (res["sent"], res["simpleDistinct"], res["pushDistinct"]),
                  f"Proxy with namesrvAddr={ns.addr}\n---- {program}\n{out[-8000:]}")
        proxy.stop()

        # 2. The Proxy given only the address service.
        if col == "nsrvd":
            domain = f"127.0.0.1:{ns.extra['statusPort']}"
            source = "nsrvd's status listener"
        else:
            addr_server = StaticAddressServer(ns.addr)
            domain = addr_server.domain
            source = "a static HTTP server of the harness"
        proxy, dnotes = _start_proxy(col, "domain", {"rocketMQClusterName": "DefaultCluster", "namesrvDomain": domain,
                                                     "namesrvDomainSubgroup": "nsaddr"})
        notes += dnotes
        if not proxy.alive():
            C.fail_rest("the Proxy (address service) did not start: " + "; ".join(dnotes), proxy.logs_text()[-6000:])
            return C
        res, out = _run_client(col, proxy, topics["domain"], "domain")
        proxy.stop()
        logs = proxy.logs_text()
        learned = f"name server address changed, old=null, new={ns.addr}" in logs
        ok = learned and _all_arrived(res)
        why = []
        if not learned:
            why.append(f"the Proxy's log does not show it took {ns.addr} from the address service")
        if not ok:
            why.append(_summary(res))
        after = _request_counts(ns)
        codes = (f"requests nsrvd received while both Proxies ran (the broker's REGISTER_BROKER included): "
                 f"{_delta(before, after)}") if after else ""
        C.set(ROW_DOMAIN, ok, "; ".join(why),
              res and (res["sent"], res["simpleDistinct"], res["pushDistinct"], learned),
              f"address service http://{domain}/rocketmq/nsaddr ({source})\n{codes}\n---- GrpcClient\n{out[-6000:]}"
              f"\n---- Proxy logs (address lines)\n"
              + "\n".join(sorted({line[20:] for line in logs.splitlines() if "name server address" in line}))[:3000])
        if codes:
            p = C.cells[ROW_PRODUCER]
            C.cells[ROW_PRODUCER] = (p[0], p[1], p[2], codes + "\n" + p[3])
            log(f"  [11] {col}: {codes}")
        if notes:  # failed Proxy starts that a later attempt made good: shown, not failed
            for row, (st, detail, outcome, ev) in list(C.cells.items()):
                C.cells[row] = (st, "; ".join(x for x in [detail, *notes] if x), outcome, ev)
        return C
    except Exception as e:  # noqa: BLE001 - a harness problem fails this column's cells, not the run
        C.fail_rest(f"harness error: {e!r}", "")
        return C
    finally:
        if proxy is not None:
            proxy.stop()
        if addr_server is not None:
            addr_server.stop()
        if broker is not None and broker.proc is not None and broker.proc.alive():
            broker.kill9()
        ns.stop()


def s11() -> None:
    cols = _columns()
    log("scenario 11: Proxy 5.4.0 (cluster mode) with gRPC clients for " + ", ".join(cols))
    with ThreadPoolExecutor(max_workers=max(1, len(cols))) as ex:
        done = {c.col: c for c in ex.map(_one_column, cols)}
    oracle = done.get("java")
    for col, C in done.items():
        for row in ROWS:
            status, detail, outcome, ev = C.cells[row]
            if col == "nsrvd" and status == PASS and oracle is not None and oracle.cells[row][2] != outcome:
                status = FAIL
                detail = f"passed, but differs from the Java NameServer {ORACLE}: {outcome} vs {oracle.cells[row][2]}"
            RESULTS.set(11, row, ORACLE, col, status, detail, ev)
