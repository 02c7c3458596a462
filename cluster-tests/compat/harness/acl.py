"""Scenario 9: who may change the cluster (docs/design/tls-and-access.md "Who may change the cluster"), with the real
mqadmin of each version and the real AclClientRPCHook it builds from $ROCKETMQ_HOME/conf/tools.yml
(rocketmq-client 5.4.0 and 5.3.3 / rocketmq-acl 4.9.7).

One nsrvd with adminAclEnable=true (a key file of mode 0600), adminAllowList and
brokerAllowList admitting 127.0.0.0/8. For each mqadmin version:

* with credentials, JSON headers and then ROCKETMQ binary headers
  (-Drocketmq.serialize.type=ROCKETMQ): updateKvConfig, updateNamesrvConfig, deleteKvConfig
  accepted and applied (checked with direct queries);
* without credentials (no tools.yml) and with a wrong secretKey: the same writes refused with
  CODE 16 and nothing applied;
* without credentials: getNamesrvConfig and clusterList answered.

And a real 5.3.3 broker registering with that node and with a second nsrvd whose
brokerAllowList (10.0.0.0/8) excludes it: routable on the first, refused (NO_PERMISSION,
logged) and absent on the second.

The Java NameServer has no access control, so the Java column of these rows is not applicable.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List

import nsquery as q
from clients import AdminOut, mqadmin
from common import FAIL, PASS, RESULTS, cfg, log, rmq
from phase_a import _fmt_admin, _first_line, versions_selected
from common import wait_until
from servers import Broker, NsrvdServer, rocketmq_home

_TRANSPORT = re.compile(r"Remoting(SendRequest|Connect|Timeout)Exception")

ACCESS_KEY = "rocketmq2"
SECRET = "12345678"


def _home(version: str, name: str, tools_yml: str) -> Path:
    """A $ROCKETMQ_HOME like the version's own, with this conf/tools.yml (or none)."""
    base = rocketmq_home(version)
    home = cfg().logdir / f"rocketmq-home-{version}-{name}"
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for f in (base / "conf").iterdir():
        (conf / f.name).write_text(f.read_text())
    if tools_yml:
        (conf / "tools.yml").write_text(tools_yml)
    return home


def _writes(addr: str, tag: str, value: str) -> List[List[str]]:
    n = ["-n", addr]
    return [
        ["updateKvConfig", "-s", "ACL_S9", "-k", f"{tag}_keep", "-v", value, *n],
        ["updateKvConfig", "-s", "ACL_S9", "-k", f"{tag}_gone", "-v", value, *n],
        ["deleteKvConfig", "-s", "ACL_S9", "-k", f"{tag}_gone", *n],
        ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", value, *n],
    ]


def _kv(ns, key: str):
    r = q.request(ns, rmq.RequestCode.GET_KV_CONFIG, {"namespace": "ACL_S9", "key": key})
    return r.code, (r.ext or {}).get("value")


def _order_flag(ns) -> str:
    r = q.request(ns, rmq.RequestCode.GET_NAMESRV_CONFIG, None)
    m = re.search(r"^orderMessageEnable=(\w+)$", r.body_text(), re.M)
    return m.group(1) if m else "?"


BROKER_ROW = "broker 5.3.3 and brokerAllowList"


def s9() -> None:
    if "nsrvd" not in cfg().targets or not cfg().has_nsrvd():
        return
    keys = cfg().logdir / "acl-s9.keys"
    keys.write_text(f"# scenario 9\n{ACCESS_KEY}={SECRET}\n")
    os.chmod(keys, 0o600)
    ns = NsrvdServer("S9", {"adminAclEnable": "true", "adminAclFile": str(keys),
                            "adminAllowList": "127.0.0.0/8,::1", "brokerAllowList": "127.0.0.0/8,::1"})
    closed = NsrvdServer("S9-closed", {"brokerAllowList": "10.0.0.0/8"})
    broker = None
    ns.start()
    closed.start()
    try:
        if not ns.wait_ready(30) or not closed.wait_ready(30):
            for v in versions_selected():
                RESULTS.set(9, f"mqadmin {v} with ACL credentials", v, "nsrvd", FAIL,
                            f"nsrvd with the access rules did not start; see {cfg().logdir / 'ns'}")
            return
        for v in versions_selected():
            problems, evidence = _run(ns, v)
            RESULTS.set(9, f"mqadmin {v} with ACL credentials", v, "nsrvd", PASS if not problems else FAIL,
                        "; ".join(problems), evidence)
        # After the mqadmin runs: a booting broker JVM starves them on two cores.
        if "java533" in cfg().peers:
            broker = Broker("5.3.3", "broker-s9", 0, [ns, closed], cluster="AclCluster").start()
        if broker is not None:
            problems = _broker_checks(broker, ns, closed)
            RESULTS.set(9, BROKER_ROW, "5.3.3", "nsrvd", PASS if not problems else FAIL, "; ".join(problems),
                        f"---- nsrvd (allowed)\n{ns.proc.output()}\n---- nsrvd (closed)\n{closed.proc.output()}")
    finally:
        if broker is not None:
            broker.kill9()
        ns.stop()
        closed.stop()


def _broker_checks(broker: Broker, ns, closed) -> List[str]:
    if not broker.wait_ready(150):
        return [f"the 5.3.3 broker did not start; see {broker.workdir}"]
    problems: List[str] = []
    if not wait_until(lambda: q.broker_addrs(ns, "broker-s9"), 60):
        problems.append("not registered with the node whose brokerAllowList admits 127.0.0.1")
    # By now it has sent its first REGISTER_BROKER to both nodes.
    refused = re.compile(r"refused a request from 127\.0\.0\.1:\d+: REGISTER_BROKER refused: .* is not in brokerAllowList")
    if not wait_until(lambda: refused.search(closed.proc.output()), 30):
        problems.append("no REGISTER_BROKER refusal logged by the node whose brokerAllowList excludes it")
    if q.broker_addrs(closed, "broker-s9"):
        problems.append("registered with the node whose brokerAllowList excludes it")
    log(f"scenario 9 {BROKER_ROW}: {'PASS' if not problems else 'FAIL: ' + '; '.join(problems)}")
    return problems


def _run(ns, v: str) -> "tuple[List[str], str]":
    tag = "v" + v.replace(".", "")
    good = f"accessKey: {ACCESS_KEY}\nsecretKey: {SECRET}\n"
    wrong = f"accessKey: {ACCESS_KEY}\nsecretKey: not-{SECRET}\n"
    problems: List[str] = []
    evidence: List[str] = []

    def batch(label: str, home: Path, cmds, props=()) -> List[AdminOut]:
        outs = mqadmin(v, cmds, home=home, props=props)
        evidence.append(f"---- {label}\n" + _fmt_admin(outs))
        # A JVM starved on the loaded 2-core CI machine can time out connecting (the client
        # closes its channel and fails the next send): such a batch runs once more. The
        # commands are idempotent; an answer from nsrvd (CODE n or success) is never retried.
        if any(o.output is None or _TRANSPORT.search(o.output) for o in outs):
            outs = mqadmin(v, cmds, home=home, props=props)
            evidence.append(f"---- {label} (run again after a transport error)\n" + _fmt_admin(outs))
        return outs

    # Signed, JSON then ROCKETMQ headers: accepted and applied.
    for ser, value in (("JSON", "true"), ("ROCKETMQ", "false")):
        label = f"signed {ser}"
        outs = batch(label, _home(v, "signed", good), _writes(ns.addr, f"{tag}_{ser}", value),
                     props=[f"-Drocketmq.serialize.type={ser}"])
        for o in outs:
            if o.output is None or re.search(r"Exception|CODE:", o.output):
                problems.append(f"{label}: {' '.join(o.args[:3])} failed: {_first_line(o.output or '')}")
        if _kv(ns, f"{tag}_{ser}_keep") != (0, value):
            problems.append(f"{label}: updateKvConfig not applied: {_kv(ns, f'{tag}_{ser}_keep')}")
        if _kv(ns, f"{tag}_{ser}_gone")[0] != 22:
            problems.append(f"{label}: deleteKvConfig not applied")
        if _order_flag(ns) != value:
            problems.append(f"{label}: updateNamesrvConfig not applied (orderMessageEnable={_order_flag(ns)})")

    # Unsigned and wrongly signed: refused with NO_PERMISSION, nothing applied.
    before = _order_flag(ns)
    for label, home in (("unsigned", _home(v, "unsigned", "")), ("wrong secretKey", _home(v, "wrong", wrong))):
        key = f"{tag}_{label.split()[0]}"
        outs = batch(label, home, _writes(ns.addr, key, "true"))
        for o in outs:
            if q.error_code(o.output or "") != 16:
                problems.append(f"{label}: {' '.join(o.args[:3])} not refused with CODE 16: {_first_line(o.output or '')}")
        want = "not signed" if label == "unsigned" else "Signature does not match"
        if want not in (outs[0].output or ""):
            problems.append(f"{label}: remark does not say '{want}': {_first_line(outs[0].output or '')}")
        if _kv(ns, f"{key}_keep")[0] != 22:
            problems.append(f"{label}: updateKvConfig was applied")
        if _order_flag(ns) != before:
            problems.append(f"{label}: updateNamesrvConfig was applied")

    # Reads need no credentials.
    reads = batch("unsigned reads", _home(v, "unsigned", ""),
                  [["getNamesrvConfig", "-n", ns.addr], ["clusterList", "-n", ns.addr]])
    cfgmap = q.parse_config_output(reads[0].output or "")
    if cfgmap.get("adminAclEnable") != "true":
        problems.append(f"unsigned getNamesrvConfig: {_first_line(reads[0].output or '')}")
    if reads[1].output is None or q.error_code(reads[1].output) is not None:
        problems.append(f"unsigned clusterList: {_first_line(reads[1].output or '')}")
    # The refusals reached the log with the source address, never the secret.
    out = ns.proc.output() if ns.proc else ""
    if "refused a request from 127.0.0.1:" not in out:
        problems.append("no refusal line with the source address in nsrvd's log")
    if SECRET in out:
        problems.append("nsrvd's log contains the secret")
    log(f"scenario 9 mqadmin {v}: {'PASS' if not problems else 'FAIL: ' + '; '.join(problems)}")
    return problems, "\n".join(evidence)
