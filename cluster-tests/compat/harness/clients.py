"""Runners for the real client programs: mqadmin, the Java, Go and ali-ons test programs."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from common import J17_OPTS, SHORT_JVM, VERSION_OF_KIND, Proc, cfg, run
from servers import rocketmq_home

_seq = itertools.count(1)


@dataclass(frozen=True)
class Peer:
    key: str
    label: str
    oracle: str  # Java NameServer version used as the oracle for this peer


PEERS: Dict[str, Peer] = {
    "java540": Peer("java540", "Java client 5.4.0", "5.4.0"),
    "java533": Peer("java533", "Java client 5.3.3", "5.3.3"),
    "java497": Peer("java497", "Java client 4.9.7", "4.9.7"),
    "go": Peer("go", "Go client v2.1.2", "5.3.3"),
    "go211": Peer("go211", "Go client v2.1.1", "5.3.3"),
    "node": Peer("node", "ali-ons 3.12.0", "5.3.3"),
}


def _workdir(kind: str) -> Path:
    d = cfg().logdir / "clients" / f"{next(_seq):04d}-{kind}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _java_args(version: str, cp: str, main: str, work: Path, argv: Sequence[str], heap: str = "256m",
               home: Optional[Path] = None, props: Sequence[str] = ()) -> List[str]:
    return ["java", f"-Xmx{heap}", *SHORT_JVM, *J17_OPTS, f"-Duser.home={work}",
            f"-Drocketmq.home.dir={home or rocketmq_home(version)}", *props,
            f"-Drocketmq.client.logRoot={work}/logs", f"-Drocketmq.log.root={work}/logs",
            "-Drocketmq.client.logLevel=WARN", "-cp", cp, main, *argv]


# --------------------------------------------------------------------------------------------
# mqadmin
# --------------------------------------------------------------------------------------------


@dataclass
class AdminOut:
    args: List[str]
    output: Optional[str]  # None if the command never ran to its end marker

    @property
    def ok(self) -> bool:
        return self.output is not None and "Exception" not in self.output


def mqadmin(version: str, cmds: Sequence[Sequence[str]], timeout: float = 180, *, home: Optional[Path] = None,
            props: Sequence[str] = ()) -> List[AdminOut]:
    """Run these mqadmin commands (each a list of arguments) in one JVM with the real
    mqadmin sub-commands of ``version``; returns one AdminOut per command, in order.
    home: another $ROCKETMQ_HOME (its conf/tools.yml holds mqadmin's ACL credentials);
    props: extra -D options (e.g. -Drocketmq.serialize.type=ROCKETMQ)."""
    work = _workdir(f"mqadmin-{version}")
    (work / "commands.txt").write_text("".join("\t".join(c) + "\n" for c in cmds), encoding="utf-8")
    cp = cfg().compat_jar("5.3.3") + ":" + cfg().cp(version, "tools")
    argv = [str(work / "commands.txt")]
    args = _java_args(version, cp, "nsrvd.compat.AdminBatch", work, argv, home=home, props=props)
    rc, out = run(f"mqadmin-{version}", args, work / "output.log", timeout)
    return split_admin_output(cmds, out)


def split_admin_output(cmds: Sequence[Sequence[str]], out: str) -> List[AdminOut]:
    res: List[AdminOut] = []
    for i, c in enumerate(cmds):
        m = re.search(rf"@@@CMD {i}\n(.*?)\n@@@END {i} \d+\n", out, re.S)
        res.append(AdminOut(list(c), m.group(1) if m else None))
    if any(r.output is None for r in res):
        tail = out[-3000:]
        for r in res:
            if r.output is None:
                r.output = None
                r.args = r.args + [f"[harness: no output; batch tail: {tail!r}]"]
    return res


# --------------------------------------------------------------------------------------------
# Test programs
# --------------------------------------------------------------------------------------------


def client_args(peer: str, argv: Sequence[str], props: Sequence[str] = ()) -> "tuple[List[str], Path, Optional[Path]]":
    """The command line that runs the test program of ``peer`` with CompatClient-style argv
    (produce|consume|pulse, then --key value pairs)."""
    work = _workdir(peer)
    if peer in VERSION_OF_KIND:
        version = VERSION_OF_KIND[peer]
        return (_java_args(version, cfg().cp(version, "client"), "nsrvd.compat.CompatClient", work, argv,
                           props=props), work, None)
    if peer in ("go", "go211"):
        variant = "v212" if peer == "go" else "v211"
        goargs = [argv[0]]
        for a in argv[1:]:
            goargs.append("-" + a[2:] if a.startswith("--") else a)
        return [cfg().go_binary(variant), *goargs], work, work
    if peer == "node":
        return ["node", str(Path(cfg().node_dir()) / "client.js"), *argv], work, work
    raise ValueError(peer)


def run_client(peer: str, argv: Sequence[str], timeout: float, props: Sequence[str] = ()) -> "tuple[Optional[int], str]":
    """props: extra -D options of a Java peer (e.g. -Dtls.enable=true)."""
    args, work, cwd = client_args(peer, argv, props)
    env = {"HOME": str(work)}
    return run(f"{peer}-{argv[0]}", args, work / "output.log", timeout, env=env, cwd=cwd)


def start_client(peer: str, argv: Sequence[str]) -> Proc:
    args, work, cwd = client_args(peer, argv)
    return Proc(f"{peer}-{argv[0]}", args, work / "output.log", env={"HOME": str(work)}, cwd=cwd)
