"""Command line and config file (proto/requests.md §5.3, §5.4, §4 persistence, and the nsrvd contract)."""

import json
import os
import pwd
import re
import socket
import stat
import tempfile
import time
import urllib.request

import pytest

from nsrv_check import assert_code, register_ok
from pathlib import Path

from nsrvd_proc import NsrvdProcess, free_port, free_port_pair, run_cli, scaled, write_properties
from rmq import Broker, NamesrvClient, TopicConfig, parse_properties

PRINTED_DEFAULTS = {
    "scanNotActiveBrokerInterval": "10000",  # project decision: the 4.9.x period (Java 5.x: 5000)
    "serverChannelMaxIdleTimeSeconds": "120",
    "shutdownWaitTimeSeconds": "30",
    "enableShutdownGracefully": "false",
    "orderMessageEnable": "false",
    "enableAllTopicList": "true",
    "enableTopicList": "true",
    "needWaitForService": "false",
    "waitSecondsForService": "45",
    "supportActingMaster": "false",
}


def _out(cp):
    return cp.stdout.decode(errors="replace") + cp.stderr.decode(errors="replace")


def test_print_config_and_exit(nsrvd_bin, tmp_path):
    port = free_port()
    cfg = tmp_path / "p.properties"
    write_properties(cfg, {"listenPort": port, "bindAddress": "127.0.0.1", "kvConfigPath": str(tmp_path / "kv.json")})
    cp = run_cli(nsrvd_bin, ["-p", "-c", str(cfg)], workdir=tmp_path)
    out = _out(cp)
    assert cp.returncode == 0, out
    props = {}
    for line in out.splitlines():
        if "=" in line:
            k, _, v = line.strip().partition("=")
            props.setdefault(k.strip(), v.strip())
    assert props.get("listenPort") == str(port), out
    wrong = {k: props.get(k) for k, v in PRINTED_DEFAULTS.items() if props.get(k) != v}
    assert not wrong, f"defaults missing or wrong in -p output: {wrong}\n{out}"
    # -p must not have started a server.
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


@pytest.mark.parametrize("args", [["-h"], ["--help"]])
def test_help(nsrvd_bin, tmp_path, args):
    cp = run_cli(nsrvd_bin, args, workdir=tmp_path)
    assert cp.returncode == 0, _out(cp)
    assert "-c" in _out(cp)


def test_help_names_the_subcommands(nsrvd_bin, tmp_path):
    cp = run_cli(nsrvd_bin, ["--help"], workdir=tmp_path)
    assert cp.returncode == 0, _out(cp)
    text = cp.stdout.decode()
    for line in ("nsrvd status [HOST:PORT | -c <file>] [--json]",
                 "nsrvd keygen -o <secret_key_file> -n <node_id> [-k <key_id>]"):
        assert line in text, text[:2000]
    assert re.search(r"^  status +\S", text, re.M) and re.search(r"^  keygen +\S", text, re.M), text[:2000]


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("sub", ["keygen", "status"])
def test_subcommand_help_exits_0(nsrvd_bin, tmp_path, sub, flag):
    cp = run_cli(nsrvd_bin, [sub, flag], workdir=tmp_path)
    assert cp.returncode == 0, _out(cp)
    assert cp.stdout.decode().startswith(f"usage: nsrvd {sub} "), _out(cp)
    assert cp.stderr == b"", _out(cp)
    # Help is asked for, not an error: it needs no other argument and makes nothing.
    assert list(tmp_path.iterdir()) == []


def test_version(nsrvd_bin, tmp_path):
    cp = run_cli(nsrvd_bin, ["--version"], workdir=tmp_path)
    assert cp.returncode == 0, _out(cp)
    assert any(ch.isdigit() for ch in _out(cp))


def test_unknown_option_exits_1(nsrvd_bin, tmp_path):
    cp = run_cli(nsrvd_bin, ["--no-such-option"], workdir=tmp_path)
    assert cp.returncode == 1, _out(cp)


def test_bad_listen_port_value(nsrvd_bin, tmp_path):
    cfg = tmp_path / "bad.properties"
    write_properties(cfg, {"listenPort": "abc", "bindAddress": "127.0.0.1", "kvConfigPath": str(tmp_path / "kv.json")})
    cp = run_cli(nsrvd_bin, ["-c", str(cfg)], workdir=tmp_path)
    assert cp.returncode == 1, _out(cp)
    assert "listenPort" in _out(cp)


def test_missing_config_file(nsrvd_bin, tmp_path):
    cp = run_cli(nsrvd_bin, ["-c", str(tmp_path / "nope.properties")], workdir=tmp_path)
    assert cp.returncode == 1, _out(cp)
    assert "nope.properties" in _out(cp)


def test_port_in_use_exits_nonzero(nsrvd_bin, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        cfg = tmp_path / "busy.properties"
        write_properties(cfg, {"listenPort": port, "bindAddress": "127.0.0.1", "kvConfigPath": str(tmp_path / "kv.json")})
        cp = run_cli(nsrvd_bin, ["-c", str(cfg)], workdir=tmp_path)
        assert cp.returncode == 1, _out(cp)
        assert "The Name Server boot success" not in _out(cp)


def test_unknown_key_is_kept_in_config(nsrvd_factory, connect):
    srv = nsrvd_factory({"fooBarUnknownKey": "xyz"})
    ns = NamesrvClient(connect(srv))
    props = parse_properties(ns.get_config().body_text())
    assert props.get("fooBarUnknownKey") == "xyz"


def test_n_option_is_tolerated(nsrvd_factory, connect):
    srv = nsrvd_factory(extra_args=["-n", "127.0.0.1:9876"])
    assert NamesrvClient(connect(srv)).cluster_info().code == 0


def test_java_properties_syntax(nsrvd_factory, connect, tmp_path):
    port = free_port()
    kv = tmp_path / "kvx" / "kvConfig.json"
    raw = (
        "# a comment\n"
        "! another comment\n"
        f"listenPort : {port}\n"
        "bindAddress 127.0.0.1\n"
        f"kvConfigPath={kv}\n"
        "   orderMessageEnable   =   true\n"
        "productEnvName=ab\\\n"
        "    cd\n"
        "unicodeKey=\\u4E2D\n"
    )
    srv = nsrvd_factory(raw_config=raw, port=port)
    props = parse_properties(NamesrvClient(connect(srv)).get_config().body_text())
    assert props["orderMessageEnable"] == "true"
    assert props["productEnvName"] == "abcd"
    assert props["kvConfigPath"] == str(kv)
    assert props["unicodeKey"] == "中"


def test_kv_persists_across_restart(nsrvd_factory, connect, tmp_path):
    kv = tmp_path / "shared" / "kvConfig.json"
    s1 = nsrvd_factory({"kvConfigPath": str(kv)}, name="first")
    ns1 = NamesrvClient(connect(s1))
    assert ns1.put_kv("PERSIST", "key", "value-1").code == 0
    assert ns1.put_kv("ORDER_TOPIC_CONFIG", "T", "broker-a:4").code == 0
    register_ok(ns1, Broker(), [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)])
    ns1.conn.close()
    assert s1.terminate(10) == 0, s1.tail()

    s2 = nsrvd_factory({"kvConfigPath": str(kv)}, name="second")
    ns2 = NamesrvClient(connect(s2))
    assert_code(ns2.get_kv("PERSIST", "key"), 0, ext={"value": "value-1"})
    assert json.loads(ns2.get_kvlist("ORDER_TOPIC_CONFIG").body) == {"table": {"T": "broker-a:4"}}
    # Routes are not persisted.
    assert ns2.get_route("TopicTest").code == 17


def test_loads_java_written_kv_file(nsrvd_factory, connect, tmp_path):
    kv = tmp_path / "java" / "kvConfig.json"
    kv.parent.mkdir(parents=True)
    kv.write_text(
        '{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"},"SOME_NS":{"k":"v","ü":"中"},'
        '"EMPTY":{}}}',
        encoding="utf-8",
    )
    srv = nsrvd_factory({"kvConfigPath": str(kv)})
    ns = NamesrvClient(connect(srv))
    assert_code(ns.get_kv("SOME_NS", "ü"), 0, ext={"value": "中"})
    assert_code(ns.get_kv("ORDER_TOPIC_CONFIG", "TopicTest"), 0, ext={"value": "broker-a:4;broker-b:4"})
    assert ns.get_kvlist("EMPTY").body == b'{"table":{}}'


def test_default_kv_path_is_under_home(nsrvd_bin, tmp_path, connect):
    """Without kvConfigPath the file is ${user.home}/namesrv/kvConfig.json (HOME = temp dir)."""
    port = free_port()
    p = NsrvdProcess(nsrvd_bin, tmp_path / "home", None, port=port, name="homekv",
                     raw_config=f"listenPort={port}\nbindAddress=127.0.0.1\n")
    p.start()
    try:
        ns = NamesrvClient(connect(p))
        assert ns.put_kv("H", "k", "v").code == 0
        assert (tmp_path / "home" / "namesrv" / "kvConfig.json").exists()
        ns.conn.close()
    finally:
        rc = p.terminate(10)
    assert rc == 0, p.tail()
    assert not p.sanitizer_errors(), p.tail()


def test_boot_line_names_port(nsrvd):
    assert f"The Name Server boot success. serializeType=JSON, address 127.0.0.1:{nsrvd.port}" in nsrvd.output()


def test_two_servers_are_independent(nsrvd_factory, connect):
    a = NamesrvClient(connect(nsrvd_factory()))
    b = NamesrvClient(connect(nsrvd_factory()))
    a.put_kv("N", "k", "a")
    assert b.get_kv("N", "k").code == 22
    time.sleep(0)  # nothing shared


def test_kv_special_characters_survive_restart(nsrvd_factory, connect, tmp_path):
    kv = tmp_path / "sp" / "kvConfig.json"
    pairs = [("NS\"q", 'k\\b', 'v"\\\n\t中\u2028/\x7f'), ("ns", "key with spaces", "")]
    s1 = nsrvd_factory({"kvConfigPath": str(kv)}, name="sp1")
    ns1 = NamesrvClient(connect(s1))
    for n, k, v in pairs:
        assert ns1.put_kv(n, k, v).code == 0
    json.loads(kv.read_text(encoding="utf-8"))  # the file must stay valid JSON
    ns1.conn.close()
    assert s1.terminate(10) == 0, s1.tail()
    s2 = nsrvd_factory({"kvConfigPath": str(kv)}, name="sp2")
    ns2 = NamesrvClient(connect(s2))
    n, k, v = pairs[0]
    assert_code(ns2.get_kv(n, k), 0, ext={"value": v})


def test_config_file_rewritten_by_update_still_boots(nsrvd_factory, connect):
    """UPDATE_NAMESRV_CONFIG rewrites the -c file with every key; that file must load again."""
    s1 = nsrvd_factory({"fooBarUnknownKey": "xyz"}, name="cfg1")
    ns1 = NamesrvClient(connect(s1))
    assert_code(ns1.update_config("waitSecondsForService=7\norderMessageEnable=true"), 0)
    text1 = ns1.get_config().body_text()
    ns1.conn.close()
    assert s1.terminate(10) == 0, s1.tail()
    rewritten = s1.config_path.read_text()
    assert "waitSecondsForService=7" in rewritten.splitlines()

    from nsrvd_proc import NsrvdProcess  # same port and file, new process
    s2 = NsrvdProcess(s1.binary, s1.workdir, None, port=s1.port, raw_config=rewritten, name="cfg1")
    nsrvd_factory.procs.append(s2)
    s2.start()
    props = parse_properties(NamesrvClient(connect(s2)).get_config().body_text())
    assert props["waitSecondsForService"] == "7"
    assert props["orderMessageEnable"] == "true"
    assert props["fooBarUnknownKey"] == "xyz"
    assert props == parse_properties(text1)


# --- gossip keys: what `nsrvd keygen` prints is what the docs tell the operator to join ---

PEER_KEY_ITEM = re.compile(r"([1-9][0-9]{0,2}):([1-9][0-9]{0,2}):[A-Za-z0-9+/]{43}=\n")


def _status(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=scaled(5)) as r:
        return json.loads(r.read())


def _gossip_config(node_id, key_file, items, workdir):
    ids = sorted(int(item.split(":")[0]) for item in items)
    peers = [f"{i}@127.0.0.1:{free_port_pair()}" for i in ids if i != node_id]
    return {
        "gossipEnable": "true",
        "gossipNodeId": node_id,
        "gossipListenAddress": "127.0.0.1",
        "gossipPort": free_port_pair(),
        "gossipPeers": ",".join(peers),
        "gossipPeerKeys": ",".join(items),
        "gossipSecretKeyFile": str(key_file),
        "gossipStatePath": str(workdir / "gossip.state"),
        "statusPort": free_port(),
        "statusAddress": "127.0.0.1",
        "shutdownWaitTimeSeconds": 3,
    }


def test_keygen_prints_one_peer_key_item_that_joins_into_gossip_peer_keys(nsrvd_bin, nsrvd_factory, tmp_path):
    """The README's three-node procedure, by copy and paste: item=$(nsrvd keygen ...) per node,
    gossipPeerKeys=$k1,$k2,$k3 on every node; a node started that way knows both peers' keys."""
    items = []
    for i in (1, 2, 3):
        d = tmp_path / f"n{i}"
        d.mkdir()
        cp = run_cli(nsrvd_bin, ["keygen", "-o", str(d / "gossip.key"), "-n", str(i)], workdir=tmp_path)
        assert cp.returncode == 0, _out(cp)
        out = cp.stdout.decode()
        m = PEER_KEY_ITEM.fullmatch(out)
        assert m and m.groups() == (str(i), "1"), f"stdout must be one {i}:1:PUBLIC item, got {out!r}"
        # The explanation is for a person, on stderr, naming the file and the keys to set.
        err = cp.stderr.decode()
        assert str(d / "gossip.key") in err and "gossipPeerKeys" in err and f"gossipNodeId={i}" in err, err
        assert stat.S_IMODE(os.stat(d / "gossip.key").st_mode) == 0o600
        items.append(out.strip())
    cfg = _gossip_config(1, tmp_path / "n1" / "gossip.key", items, tmp_path / "n1")
    node = nsrvd_factory(cfg)
    g = _status(cfg["statusPort"])["gossip"]
    assert g["nodeId"] == 1, g
    assert sorted(p["id"] for p in g["peers"]) == [2, 3], g
    # A key id other than 1 shows in the item too (rotation).
    cp = run_cli(nsrvd_bin, ["keygen", "-o", str(tmp_path / "n1" / "next.key"), "-n", "1", "-k", "2"], workdir=tmp_path)
    m = PEER_KEY_ITEM.fullmatch(cp.stdout.decode())
    assert cp.returncode == 0 and m and m.groups() == ("1", "2"), _out(cp)
    assert node.alive()


SERVICE_UID = 65534  # nobody: stands in for the package's nsrvd user


def _service_dir() -> Path:
    """A directory outside the test's private temp tree (pytest's is 0700 root), which a
    process running as SERVICE_UID can enter."""
    d = Path(tempfile.mkdtemp(prefix="nsrvd-svc-"))
    d.chmod(0o755)
    return d


def _as_service_user(nsrvd_bin: str, d: Path) -> str:
    """A wrapper that runs nsrvd as SERVICE_UID, as the unit's User= does (setpriv execs, so
    the process the test signals is nsrvd itself)."""
    w = d / "nsrvd-as-service"
    w.write_text("#!/bin/sh\nexec setpriv --reuid=%d --regid=%d --clear-groups -- %s \"$@\"\n"
                 % (SERVICE_UID, SERVICE_UID, os.path.abspath(nsrvd_bin)))
    w.chmod(0o755)
    return str(w)


def test_keygen_as_root_gives_the_key_to_the_directory_owner(nsrvd_bin, tmp_path):
    """The package's procedure: root makes the key in /var/lib/nsrvd (owned by the service user);
    the key is that user's and the service, running as that user, starts gossip with it."""
    if os.geteuid() != 0:
        pytest.fail("needs root (keygen hands the key over only when run as root; CI runs as root)")
    import shutil

    d = _service_dir()
    try:
        data = d / "data"
        data.mkdir()
        os.chown(data, SERVICE_UID, SERVICE_UID)
        data.chmod(0o750)
        key = data / "gossip.key"
        cp = run_cli(nsrvd_bin, ["keygen", "-o", str(key), "-n", "1"], workdir=tmp_path)
        assert cp.returncode == 0, _out(cp)
        st = os.stat(key)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (SERVICE_UID, SERVICE_UID, 0o600), st
        assert f"the owner of {data}" in cp.stderr.decode(), _out(cp)
        item = cp.stdout.decode().strip()
        # A root-owned directory keeps root's key root's (nothing to hand over).
        cp2 = run_cli(nsrvd_bin, ["keygen", "-o", str(d / "root.key"), "-n", "2"], workdir=tmp_path)
        assert cp2.returncode == 0 and os.stat(d / "root.key").st_uid == 0, _out(cp2)

        port = free_port()
        cfg = {"listenPort": port, "bindAddress": "127.0.0.1", "kvConfigPath": str(data / "kvConfig.json"),
               **_gossip_config(1, key, [item, cp2.stdout.decode().strip()], data)}
        node = NsrvdProcess(_as_service_user(nsrvd_bin, d), d / "run", None, port=port, name="svc",
                            raw_config="".join(f"{k}={v}\n" for k, v in cfg.items()), env={"HOME": str(data)})
        (d / "run").chmod(0o755)
        node.config_path.chmod(0o644)
        node.start()
        try:
            # Up and staying up: the gossip engine runs with the key (the loop would have exited).
            time.sleep(scaled(0.5))
            assert node.alive(), node.tail()
            g = _status(cfg["statusPort"])["gossip"]
            assert g["nodeId"] == 1 and [p["id"] for p in g["peers"]] == [2], g
        finally:
            rc = node.terminate(10)
        assert rc == 0, node.tail()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_unreadable_key_names_the_file_the_user_and_the_fix(nsrvd_bin, tmp_path):
    """A key the node's user cannot read (made by root per habit) stops the node with the file,
    the user it runs as and the fix, never a bare 'Permission denied'."""
    import shutil

    d = _service_dir()
    try:
        key = d / "gossip.key"
        cp = run_cli(nsrvd_bin, ["keygen", "-o", str(key), "-n", "1"], workdir=tmp_path)
        assert cp.returncode == 0, _out(cp)
        data = d / "data"
        data.mkdir()
        if os.geteuid() == 0:
            binary, user = _as_service_user(nsrvd_bin, d), pwd.getpwuid(SERVICE_UID).pw_name
            os.chown(data, SERVICE_UID, SERVICE_UID)
        else:  # mode 0 keeps the file from its own owner too (but not from root)
            binary, user = nsrvd_bin, pwd.getpwuid(os.geteuid()).pw_name
            key.chmod(0)
        cfg = _gossip_config(1, key, [cp.stdout.decode().strip()], data)
        conf = d / "node.properties"
        conf.write_text(f"listenPort={free_port()}\nbindAddress=127.0.0.1\nkvConfigPath={data}/kv.json\n"
                        + "".join(f"{k}={v}\n" for k, v in cfg.items()))
        conf.chmod(0o644)
        run = run_cli(binary, ["-c", str(conf)], workdir=data, timeout=20)
        out = _out(run)
        assert run.returncode != 0, out
        assert f"gossipSecretKeyFile '{key}'" in out, out
        assert f"runs as user {user}" in out and f"chown {user}: '{key}'" in out, out
    finally:
        shutil.rmtree(d, ignore_errors=True)
