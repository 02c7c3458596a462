"""The real RocketMQ programs in the chaos suite (from the compat suite's peers cache,
cluster-tests/compat/prepare-peers.sh): a 5.3.3 broker in namespace ``bjava`` registered with
every node, and in namespace ``jc`` a producer sending one message every 50 ms and a push
consumer (CompatClient stream-produce / stream-consume, built against rocketmq-client 5.3.3),
both given all three nodes as NameServers.

Per scenario the table shows messages sent / acknowledged by the broker / received / received
more than once, counted over the messages the producer sent during the scenario; the scenario
fails when a message acknowledged during it has not arrived 15 s after the scenario ended.

``routepoll`` starts the polling clients of the rolling restart: CompatClient routepoll built
against 5.3.3 (follows GO_AWAY) and 4.9.7, asking the route of the real broker's topic every
10 ms through the client's own remoting layer.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

TOPIC = "ChaosTopic"
J17 = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
       "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED", "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
       "--add-opens", "java.base/java.lang=ALL-UNNAMED", "-XX:+IgnoreUnrecognizedVMOptions"]
SHORT_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"]
REGISTER_PERIOD_MS = 10000  # the broker's minimum registerNameServerPeriod


class Lines:
    """A process whose stdout is read on a thread into a list of (monotonic time, line)."""

    def __init__(self, argv: List[str], log: Path, cwd: Path) -> None:
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                     cwd=str(cwd), start_new_session=True)
        self.lines: List = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.lines.append((time.monotonic(), line))
            self.on_line(line)

    def on_line(self, line: str) -> None:
        pass

    def wait_line(self, pattern: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < end:
            with self.lock:
                if any(rx.search(x) for _, x in self.lines):
                    return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.log.close()


class Producer(Lines):
    def __init__(self, *a) -> None:
        self.acked: Dict[int, float] = {}
        self.nacked: Dict[int, float] = {}
        super().__init__(*a)

    def on_line(self, line: str) -> None:
        p = line.split(" ", 2)
        if p[0] == "ACK":
            self.acked[int(p[1])] = time.monotonic()
        elif p[0] == "NACK":
            self.nacked[int(p[1])] = time.monotonic()


class Consumer(Lines):
    def __init__(self, *a) -> None:
        self.received: Dict[int, int] = {}
        super().__init__(*a)

    def on_line(self, line: str) -> None:
        if line.startswith("RECV s-"):
            i = int(line[7:])
            self.received[i] = self.received.get(i, 0) + 1


class JavaLoad:
    def __init__(self, suite, cache: Path, log) -> None:
        self.s = suite
        self.cache = cache
        self.log = log
        self.work = suite.work / "java"
        self.work.mkdir(exist_ok=True)
        self.home = self.work / "home"
        (self.home / "conf").mkdir(parents=True, exist_ok=True)
        self.register_period_s = REGISTER_PERIOD_MS / 1000.0
        self.broker: Optional[subprocess.Popen] = None
        self.producer: Optional[Producer] = None
        self.consumer: Optional[Consumer] = None
        self.window_start = 0.0
        self.pollers: List[Lines] = []

    def cp(self, version: str, role: str) -> str:
        if role == "client":
            d = self.cache / version / "java-client"
            return str(d / "compat-java.jar") + ":" + (d / "classpath.txt").read_text().strip()
        return (self.cache / version / f"{role}.cp").read_text().strip()

    def client_argv(self, host: str, version: str, argv: List[str], tag: str) -> List[str]:
        w = self.work / tag
        w.mkdir(exist_ok=True)
        return self.s.net.exec_prefix(host) + [
            "java", "-Xmx192m", *SHORT_JVM, *J17, f"-Duser.home={w}", f"-Drocketmq.home.dir={self.home}",
            f"-Drocketmq.client.logRoot={w}/logs", "-Drocketmq.client.logLevel=WARN",
            "-cp", self.cp(version, "client"), "nsrvd.compat.CompatClient", *argv]

    def start_broker(self) -> None:
        net = self.s.net
        store = self.work / "store"
        conf = self.work / "broker.conf"
        ip = net.ip("bjava")
        conf.write_text("\n".join(f"{k}={v}" for k, v in {
            "brokerClusterName": "DefaultCluster", "brokerName": "java-broker", "brokerId": 0,
            "brokerRole": "ASYNC_MASTER", "flushDiskType": "ASYNC_FLUSH",
            "namesrvAddr": self.s.cluster.addrs(), "brokerIP1": ip, "brokerIP2": ip, "listenPort": 10911,
            "storePathRootDir": store, "storePathCommitLog": store / "commitlog",
            "mappedFileSizeCommitLog": 67108864, "mappedFileSizeConsumeQueue": 600000,
            "maxHashSlotNum": 10000, "maxIndexNum": 40000, "autoCreateTopicEnable": "true",
            "timerWheelEnable": "false", "sendMessageThreadPoolNums": 2,
            "registerNameServerPeriod": REGISTER_PERIOD_MS,
        }.items()) + "\n")
        run = self.work / "broker-run"
        run.mkdir(exist_ok=True)
        out = open(self.work / "broker.out", "wb")
        self.broker = subprocess.Popen(net.exec_prefix("bjava") + [
            "java", "-server", "-Xms256m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m", "-XX:+UseG1GC",
            "-XX:ParallelGCThreads=2", "-XX:ConcGCThreads=1", "-XX:CICompilerCount=2", *J17,
            f"-Duser.home={run}", f"-Drocketmq.home.dir={self.home}", "-cp", self.cp("5.3.3", "broker"),
            "org.apache.rocketmq.broker.BrokerStartup", "-c", str(conf)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self.s.extra_procs.append(self.broker)
        end = time.monotonic() + 120
        while time.monotonic() < end:
            if "boot success" in (self.work / "broker.out").read_text(errors="replace"):
                return
            if self.broker.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"the real broker did not start; see {self.work / 'broker.out'}")

    def start(self) -> None:
        self.start_broker()
        ns = self.s.cluster.addrs()
        self.consumer = Consumer(self.client_argv("jc", "5.3.3", [
            "stream-consume", "--ns", ns, "--topic", TOPIC, "--group", "ChaosGroup", "--duration", "100000",
            "--poll", "1000"], "consumer"), self.work / "consumer.err", self.work)
        self.producer = Producer(self.client_argv("jc", "5.3.3", [
            "stream-produce", "--ns", ns, "--topic", TOPIC, "--interval", "50", "--duration", "100000",
            "--poll", "1000"], "producer"), self.work / "producer.err", self.work)
        for p in (self.consumer, self.producer):
            if not p.wait_line("^READY", 90):
                raise RuntimeError(f"a Java client did not start; see {self.work}")
        end = time.monotonic() + 60
        while time.monotonic() < end and not self.consumer.received:
            time.sleep(0.2)
        if not self.consumer.received:
            raise RuntimeError("no message went through the real broker within 60 s")
        # the real broker's topic is polled on every node from now on
        with self.s.expect_lock:
            self.s.expect["java-broker"] = TOPIC

    # ------------------------------------------------------------------ per scenario

    def begin(self, name: str) -> None:
        self.window_start = time.monotonic()

    def end(self, res) -> None:
        t0, t1 = self.window_start, time.monotonic()
        p, c = self.producer, self.consumer
        acked = [i for i, t in list(p.acked.items()) if t0 <= t <= t1]
        nacked = [i for i, t in list(p.nacked.items()) if t0 <= t <= t1]
        end = time.monotonic() + 15
        while time.monotonic() < end and any(i not in c.received for i in acked):
            time.sleep(0.2)
        if any(i not in c.received for i in acked):
            self.recount()
        missing = [i for i in acked if i not in c.received]
        dup = sum(1 for i in acked if c.received.get(i, 0) > 1)
        res.msgs = {"sent": len(acked) + len(nacked), "acked": len(acked),
                    "received": sum(1 for i in acked if i in c.received), "dup": dup}
        res.check(not missing, f"{len(missing)} acknowledged message(s) never received, e.g. {missing[:5]}")
        res.check(len(acked) + len(nacked) > 0, "the producer sent nothing during the scenario")
        if p.proc.poll() is not None or c.proc.poll() is not None:
            res.failures.append("a Java client exited")

    def recount(self) -> None:
        """Before a message is called lost: re-read what the consumer printed, where the live
        feed of its lines can miss some (docker mode overrides this)."""

    # ------------------------------------------------------------------ route polling clients

    def routepoll(self, addrs: str, topic: str, seconds: float, tag: str) -> Dict[str, Lines]:
        out = {}
        for v in ("5.3.3", "4.9.7"):
            out[v] = Lines(self.client_argv("jc", v, ["routepoll", "--ns", addrs, "--topic", topic,
                                                      "--interval", "10", "--duration", str(int(seconds))],
                                            f"poll-{tag}-{v}"), self.work / f"poll-{tag}-{v}.err", self.work)
        for v, p in out.items():
            if not p.wait_line("^READY", 90):
                raise RuntimeError(f"routepoll {v} did not start; see {self.work}")
        # Counting starts once each client has had an answer. A JVM's first request on a busy
        # 2-core machine can spend its whole 3 s budget on class loading and channel set-up
        # (seen: 1.2 s before it even connected, then "wait response ... timeout" and a second
        # request failing on the channel the client itself closed for that timeout), which
        # says nothing about restarts. Failures before that are reported, not counted.
        for v, p in out.items():
            if not p.wait_line(r"^ROUTEPOLL ok=[1-9]", 60):
                raise RuntimeError(f"routepoll {v} got no answer within 60 s; see {self.work}")
            p.warm_ms = int(time.time() * 1000)
        return out

    @staticmethod
    def poll_result(p: Lines) -> Dict:
        """Stops a routepoll client: requests answered (as of its last progress line) and every
        failed request (each is its own line, so none is missed)."""
        p.stop()
        p.t.join(5)
        ok = 0
        for _, line in p.lines:
            m = re.match(r"ROUTEPOLL ok=(\d+) failed=(\d+)", line)
            if m:
                ok = int(m.group(1))
        since = getattr(p, "warm_ms", 0)
        fails = [x for _, x in p.lines if x.startswith("FAIL")]
        counted = [x for x in fails if int(x.split()[1]) >= since]
        warmup = [x for x in fails if int(x.split()[1]) < since]
        return {"ok": ok, "failed": len(counted), "first": counted[:2], "warmup_failed": len(warmup),
                "warmup_first": warmup[:1]}

    def java_ns_rolling(self, gap_s: float) -> Dict[str, Dict]:
        """The same rolling SIGTERM restart against three Java 5.3.3 NameServers (namespaces
        j1..j3, a simulated broker registered with them), polled by the same two clients."""
        net = self.s.net
        hosts = ["j1", "j2", "j3"]
        addrs = ";".join(f"{net.ip(h)}:9876" for h in hosts)
        procs: Dict[str, Lines] = {}

        def start_ns(h: str) -> None:
            w = self.work / f"ns-{h}"
            (w / "run").mkdir(parents=True, exist_ok=True)
            (w / "ns.properties").write_text(f"listenPort=9876\nkvConfigPath={w}/kv.json\n")
            procs[h] = Lines(net.exec_prefix(h) + [
                "java", "-server", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", *J17, f"-Duser.home={w}/run",
                f"-Drocketmq.home.dir={self.home}", "-cp", self.cp("5.3.3", "namesrv"),
                "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(w / "ns.properties")],
                w / "stderr.log", w)
            self.s.extra_procs.append(procs[h].proc)

        for h in hosts:
            start_ns(h)
        for h in hosts:
            if not procs[h].wait_line("boot success", 60):
                raise RuntimeError(f"Java NameServer {h} did not start")
        sim = self.s.sim("jsim", "bj2", [], 1, "jns-", expect=False, namesrv=addrs.split(";"))
        topic = f"topic-{sim.names()[0]}-0"
        time.sleep(2)
        polls = self.routepoll(addrs, topic, 600, "javans")
        try:
            time.sleep(2)
            for h in hosts:
                p = procs[h]
                p.proc.terminate()
                try:
                    p.proc.wait(30)
                except subprocess.TimeoutExpired:
                    p.proc.kill()
                p.stop()
                time.sleep(0.5)
                start_ns(h)
                procs[h].wait_line("boot success", 60)
                time.sleep(gap_s)
            time.sleep(2)
        finally:
            res = {v: self.poll_result(p) for v, p in polls.items()}
            sim.close(5)
            self.s.sims.pop("jsim", None)
            for p in procs.values():
                p.stop()
        return res

    def finish(self, results, log) -> None:
        for x in (self.producer, self.consumer):
            if x is not None:
                x.stop()


def start(suite, cache: Path, log) -> Optional[JavaLoad]:
    if not (cache / "5.3.3" / "broker.cp").is_file() or not (cache / "4.9.7" / "java-client").is_dir():
        log(f"no real RocketMQ programs in {cache} (cluster-tests/compat/prepare-peers.sh java533,java497): "
            "running with simulated brokers only")
        return None
    j = JavaLoad(suite, cache, log)
    j.start()
    log("real 5.3.3 broker up, producer/consumer moving messages")
    return j
