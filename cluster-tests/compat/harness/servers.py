"""The NameServers (nsrvd and the real Java ones) and real Java brokers the suite runs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional

from common import J17_OPTS, Proc, alloc_port, cfg, log, rmq

LOGBACK_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<!-- written by the nsrvd compatibility suite: 4.9.x programs refuse to start without it -->
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{role}.log</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5p [%t] %c{{0}} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def rocketmq_home(version: str) -> Path:
    """$ROCKETMQ_HOME for one version: conf/ holds the logback files 4.9.x insists on."""
    home = cfg().logdir / f"rocketmq-home-{version}"
    conf = home / "conf"
    if not conf.is_dir():
        conf.mkdir(parents=True, exist_ok=True)
        for role in ("namesrv", "broker", "tools"):
            (conf / f"logback_{role}.xml").write_text(LOGBACK_TEMPLATE.format(role=role))
    return home


def write_properties(path: Path, props: Mapping[str, object]) -> None:
    lines = []
    for k, v in props.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        lines.append(f"{k}={v}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# Addresses -> stable labels ("broker-a#0"), so that outputs of different runs compare equal.
LABELS: Dict[str, str] = {}


def normalize(text: str) -> str:
    for addr in sorted(LABELS, key=len, reverse=True):
        text = text.replace(addr, LABELS[addr])
    return text


# --------------------------------------------------------------------------------------------
# NameServers
# --------------------------------------------------------------------------------------------


class NameServer:
    kind = ""  # "nsrvd", "java533", "java497"
    version = ""  # Java version this one is (or for nsrvd, "nsrvd")

    def __init__(self, tag: str, extra: Optional[Mapping[str, object]] = None) -> None:
        self.tag = tag
        self.extra = dict(extra or {})
        self.port = alloc_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.workdir = cfg().logdir / "ns" / f"{self.kind}-{tag}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kv_path = self.workdir / "run" / "namesrv" / "kvConfig.json"
        self.conf_path = self.workdir / "namesrv.properties"
        self.proc: Optional[Proc] = None
        self.jvm: List[str] = []  # extra -D options of a Java NameServer (TLS: -Dtls.server.mode)
        self.tls = False  # the suite's own queries speak TLS to it (scenario 9)

    @property
    def label(self) -> str:
        return "nsrvd" if self.kind == "nsrvd" else f"Java NameServer {self.version}"

    def props(self) -> Dict[str, object]:
        p: Dict[str, object] = {
            "listenPort": self.port,
            "kvConfigPath": str(self.kv_path),
            "configStorePath": str(self.conf_path),
        }
        if self.version != "4.9.7":
            p["bindAddress"] = "127.0.0.1"  # 4.9.7 has no bindAddress and listens on all addresses
        p.update(self.extra)
        return p

    def start(self) -> "NameServer":
        raise NotImplementedError

    def wait_ready(self, timeout: float = 60) -> bool:
        assert self.proc is not None
        ok = self.proc.wait_for(r"The Name Server boot success", timeout) is not None
        if ok:
            ok = rmq_ping(self.addr, self.tls)
        if not ok:
            log(f"{self.label} at {self.addr} did not start; see {self.proc.logfile}")
        return ok

    def stop(self) -> None:
        if self.proc is not None and self.proc.alive():
            self.proc.terminate(20)

    def conn(self, **kw) -> rmq.Connection:
        host, port = self.addr.split(":")
        timeout = kw.pop("timeout", 5.0)
        if self.tls:
            kw["sock"] = tls_socket(host, int(port), timeout)
        return rmq.Connection(host, int(port), timeout=timeout, **kw)

    def client(self, **kw) -> rmq.NamesrvClient:
        return rmq.NamesrvClient(self.conn(**kw))


def tls_socket(host: str, port: int, timeout: float):
    """A TLS connection as a client in Java's test mode makes it: any certificate accepted."""
    import socket
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(socket.create_connection((host, port), timeout=timeout))


def rmq_ping(addr: str, tls: bool = False) -> bool:
    host, port = addr.split(":")
    try:
        sock = tls_socket(host, int(port), 5.0) if tls else None
        with rmq.Connection(host, int(port), timeout=5.0, sock=sock) as c:
            r = c.request(rmq.RequestCode.GET_BROKER_CLUSTER_INFO)
            return r.code == 0
    except Exception:  # noqa: BLE001
        return False


class JavaNameServer(NameServer):
    def __init__(self, version: str, tag: str, extra: Optional[Mapping[str, object]] = None) -> None:
        self.version = version
        self.kind = "java533" if version == "5.3.3" else "java497"
        super().__init__(tag, extra)

    def classpath(self) -> str:
        return cfg().cp(self.version, "namesrv")

    def start(self) -> "JavaNameServer":
        write_properties(self.conf_path, self.props())
        run = self.workdir / "run"
        run.mkdir(exist_ok=True)
        args = ["java", "-server", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", *J17_OPTS, *self.jvm,
                f"-Duser.home={run}", f"-Drocketmq.home.dir={rocketmq_home(self.version)}",
                "-cp", self.classpath(), "org.apache.rocketmq.namesrv.NamesrvStartup",
                "-c", str(self.conf_path)]
        self.proc = Proc(f"namesrv-{self.version}-{self.tag}", args, self.workdir / "stdout.log")
        return self


class NsrvdServer(NameServer):
    kind = "nsrvd"
    version = "nsrvd"

    def start(self) -> "NsrvdServer":
        write_properties(self.conf_path, self.props())
        nsrvd = cfg().nsrvd
        assert nsrvd is not None
        self.proc = Proc(f"nsrvd-{self.tag}", [str(nsrvd), "-c", str(self.conf_path)],
                         self.workdir / "stdout.log", env={"HOME": str(self.workdir / "run")},
                         cwd=self.workdir)
        return self


def make_nameserver(kind: str, tag: str, extra: Optional[Mapping[str, object]] = None) -> NameServer:
    if kind == "nsrvd":
        return NsrvdServer(tag, extra)
    return JavaNameServer("5.3.3" if kind == "java533" else "4.9.7", tag, extra)


# --------------------------------------------------------------------------------------------
# Brokers
# --------------------------------------------------------------------------------------------


def topics_json(topics: Iterable[Mapping[str, object]]) -> str:
    """A broker's store/config/topics.json holding these topics (seeded before it starts)."""
    table = {}
    for t in topics:
        name = str(t["topicName"])
        table[name] = {
            "order": False,
            "perm": t.get("perm", 6),
            "readQueueNums": t.get("readQueueNums", 4),
            "topicFilterType": "SINGLE_TAG",
            "topicName": name,
            "topicSysFlag": t.get("topicSysFlag", 0),
            "writeQueueNums": t.get("writeQueueNums", 4),
        }
    return json.dumps({"dataVersion": {"counter": 1, "stateVersion": 0, "timestamp": int(time.time() * 1000)},
                       "topicConfigTable": table}, separators=(",", ":"))


class Broker:
    def __init__(self, version: str, name: str, broker_id: int, nameservers: List[NameServer], *,
                 cluster: str = "DefaultCluster", tag: str = "", extra: Optional[Mapping[str, object]] = None,
                 topics: Optional[List[Mapping[str, object]]] = None, heap: str = "512m") -> None:
        self.version = version
        self.name = name
        self.broker_id = broker_id
        self.cluster = cluster
        self.nameservers = list(nameservers)
        self.tag = tag or f"{name}-{broker_id}"
        self.extra = dict(extra or {})
        self.topics = topics
        self.heap = heap
        self.port = alloc_port((-2, 0, 1))
        self.addr = f"127.0.0.1:{self.port}"
        self.ha_addr = f"127.0.0.1:{self.port + 1}"
        self.workdir = cfg().logdir / "brokers" / self.tag
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: Optional[Proc] = None
        self.jvm: List[str] = []  # extra -D options (TLS: -Dtls.enable=true)
        LABELS[self.addr] = f"{name}#{broker_id}"
        LABELS[self.ha_addr] = f"{name}#{broker_id}-ha"

    def conf(self) -> Dict[str, object]:
        store = self.workdir / "store"
        c: Dict[str, object] = {
            "brokerClusterName": self.cluster,
            "brokerName": self.name,
            "brokerId": self.broker_id,
            "brokerRole": "ASYNC_MASTER" if self.broker_id == 0 else "SLAVE",
            "flushDiskType": "ASYNC_FLUSH",
            "namesrvAddr": ";".join(ns.addr for ns in self.nameservers),
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "listenPort": self.port,
            "haListenPort": self.port + 1,
            "storePathRootDir": str(store),
            "storePathCommitLog": str(store / "commitlog"),
            "mappedFileSizeCommitLog": 67108864,
            "mappedFileSizeConsumeQueue": 600000,
            "maxHashSlotNum": 10000,
            "maxIndexNum": 40000,
            "fileReservedTime": 1,
            "diskMaxUsedSpaceRatio": 88,
            "autoCreateTopicEnable": "true",
            "sendMessageThreadPoolNums": 2,
        }
        if self.version != "4.9.7":
            # 5.x default; with it off, the broker's deleteTopic fails with an NPE
            # (TimerMessageStore is null), so mqadmin deleteTopic never reaches the NameServer.
            c["timerWheelEnable"] = "true"
            c["mappedFileSizeTimerLog"] = 10485760
        c.update(self.extra)
        return c

    def classpath(self) -> str:
        return cfg().cp(self.version, "broker")

    def start(self) -> "Broker":
        conf_path = self.workdir / "broker.conf"
        write_properties(conf_path, self.conf())
        if self.topics is not None:
            cfgdir = self.workdir / "store" / "config"
            cfgdir.mkdir(parents=True, exist_ok=True)
            (cfgdir / "topics.json").write_text(topics_json(self.topics))
        run = self.workdir / "run"
        run.mkdir(exist_ok=True)
        args = ["java", "-server", f"-Xms{min(256, int(self.heap[:-1]))}m", f"-Xmx{self.heap}",
                "-XX:MaxDirectMemorySize=512m", "-XX:+UseG1GC", "-XX:ParallelGCThreads=2",
                "-XX:ConcGCThreads=1", "-XX:CICompilerCount=2", *J17_OPTS, *self.jvm,
                f"-Duser.home={run}", f"-Drocketmq.home.dir={rocketmq_home(self.version)}",
                "-cp", self.classpath(), "org.apache.rocketmq.broker.BrokerStartup",
                "-c", str(conf_path)]
        self.proc = Proc(f"broker-{self.tag}", args, self.workdir / "stdout.log")
        return self

    def wait_ready(self, timeout: float = 120) -> bool:
        assert self.proc is not None
        ok = self.proc.wait_for(r"The broker\[.*boot success", timeout) is not None
        if not ok:
            log(f"broker {self.tag} ({self.version}) did not start; see {self.proc.logfile}")
        return ok

    def terminate(self) -> Optional[int]:
        """Graceful shutdown: the JVM's shutdown hook unregisters from every NameServer."""
        if self.proc is None:
            return None
        return self.proc.terminate(60)

    def kill9(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def logs_text(self) -> str:
        """Every log file the broker wrote (its user.home/logs) plus its stdout."""
        parts = []
        logs = self.workdir / "run" / "logs"
        if logs.is_dir():
            for f in sorted(logs.rglob("*.log")):
                try:
                    parts.append(f"==== {f}\n" + f.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    pass
        if self.proc is not None:
            parts.append("==== stdout\n" + self.proc.output())
        return "\n".join(parts)
