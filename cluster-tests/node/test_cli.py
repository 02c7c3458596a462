"""Command line and config file (proto/requests.md §5.3, §5.4, §4 persistence, and the nsrvd contract)."""

import json
import socket
import time

import pytest

from nsrv_check import assert_code, register_ok
from nsrvd_proc import NsrvdProcess, free_port, run_cli, scaled, write_properties
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
