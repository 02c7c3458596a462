"""Start-up and reload tell the truth (README "Install as a service", nsrvd(8) SIGNALS):

* the boot line (and READY=1) means serving: a node that cannot bind its status or gossip
  port, lacks gossipNodeId or has an unusable key file exits non-zero without printing it;
* one process per data: a second nsrvd on the same kvConfigPath, -c file (configStorePath) or
  gossip state file is
  refused, naming the file and the pid holding it; one config naming a file twice too;
* the node's own key is checked against its public key in gossipPeerKeys, at start
  (refused) and on SIGHUP (old keys kept); its own id and key id listed twice is an error;
* SIGHUP names the changed keys it applied and warns once about those needing a restart;
* a KV or config write that fails is answered with the error and undone in memory."""
import os
import re
import signal
import socket
import time

import pytest

from nsrv_check import assert_code
from nsrvd_proc import BOOT_RE, NsrvdProcess, free_port, free_port_pair, keygen, run_cli, scaled, write_properties
from rmq import NamesrvClient

KV_CONFIG_NOT_EXIST = 22


def wait_refused(nsrvd_factory, config, **kw):
    """Starts a node expected to refuse; returns (process, exit code)."""
    p = nsrvd_factory(config, wait_boot=False, **kw)
    rc = p.wait(15)
    p._stopped_by_test = True
    assert rc is not None, f"{p.name} still running, expected it to refuse:\n{p.tail()}"
    return p, rc


def assert_refused(p, rc, *needles):
    assert rc != 0, p.tail()
    assert not BOOT_RE.search(p.stdout()), "boot line printed by a node that exits:\n" + p.tail()
    for n in needles:
        assert n in p.stderr(), f"{n!r} not in the log:\n{p.tail()}"


def wait_log(p, pattern, timeout=10):
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        m = re.search(pattern, p.stderr())
        if m:
            return m
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} not logged within {timeout}s:\n{p.tail()}")


def gossip_config(tmp_path, node_id=1, own_key_file=None, peer_keys=None, port=None):
    """A one-peer gossip config for node_id; the peer is never started."""
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    own = keys / f"n{node_id}.key"
    if not own.exists():
        own_pub = keygen_token(own, node_id)
    else:
        own_pub = (keys / f"n{node_id}.pub").read_text()
    peer_id = 2 if node_id != 2 else 1
    peer = keys / f"n{peer_id}.key"
    peer_pub = keygen_token(peer, peer_id) if not peer.exists() else (keys / f"n{peer_id}.pub").read_text()
    return {
        "gossipEnable": "true",
        "gossipNodeId": node_id,
        "gossipListenAddress": "127.0.0.1",
        "gossipPort": port or free_port_pair(),
        "gossipPeers": f"{peer_id}@127.0.0.1:{free_port_pair()}",
        "gossipPeerKeys": peer_keys if peer_keys is not None else f"{own_pub},{peer_pub}",
        "gossipSecretKeyFile": str(own_key_file or own),
        "gossipStatePath": str(tmp_path / f"gossip{node_id}.state"),
    }


_BIN = {}


@pytest.fixture(autouse=True)
def _remember_binary(nsrvd_bin):
    _BIN["nsrvd"] = nsrvd_bin


def keygen_token(path, node_id):
    """`nsrvd keygen`: writes the secret key file, returns the public token id:keyId:base64,
    also kept as n<id>.pub beside it for the next config of the test."""
    tok = keygen(_BIN["nsrvd"], path, node_id)
    (path.parent / f"n{node_id}.pub").write_text(tok)
    return tok


# ---- the boot line means serving ----


def test_status_port_in_use_no_boot_line(nsrvd_factory):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        p, rc = wait_refused(nsrvd_factory, {"statusPort": port, "statusAddress": "127.0.0.1"})
    assert_refused(p, rc, str(port))


def test_gossip_port_in_use_no_boot_line(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as held:
        held.bind(("127.0.0.1", cfg["gossipPort"]))
        p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "cannot bind gossip on 127.0.0.1:%d" % cfg["gossipPort"])


def test_gossip_node_id_missing_no_boot_line(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    del cfg["gossipNodeId"]
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "gossipNodeId must be set")


def test_key_file_readable_by_others_no_boot_line(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    os.chmod(cfg["gossipSecretKeyFile"], 0o644)
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "lets group or others read a secret key", "chmod 600")


# ---- one process per data ----


def test_second_process_same_kv_path_refused(nsrvd_factory):
    first = nsrvd_factory({})
    p, rc = wait_refused(nsrvd_factory, {"kvConfigPath": str(first.kv_path)})
    assert_refused(p, rc, f"kvConfigPath '{first.kv_path}' is in use by process {first.pid}")
    assert first.alive()


def test_second_process_same_config_file_refused(nsrvd_factory, nsrvd_bin, tmp_path):
    """The -c file is configStorePath (UPDATE_NAMESRV_CONFIG rewrites it): two nodes started from
    one file in two directories (a relative kvConfigPath, so their KV files differ) would both
    rewrite it; the second is refused, naming the file and the first one's pid."""
    port = free_port()
    conf = tmp_path / "shared.properties"
    conf.write_text(f"listenPort={port}\nkvConfigPath=kv/kvConfig.json\n")
    first = NsrvdProcess(nsrvd_bin, tmp_path / "a", None, port=port, raw_config=conf.read_text(),
                         name="a")
    first.config_path = conf
    nsrvd_factory.procs.append(first)
    first.start()
    (tmp_path / "b").mkdir()
    r = run_cli(nsrvd_bin, ["-c", str(conf)], workdir=tmp_path / "b", timeout=15)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode != 0, err
    assert not BOOT_RE.search(out), "boot line printed by a node that exits:\n" + out
    assert f"configStorePath '{conf}' is in use by process {first.pid}" in err, err
    assert first.alive(), "the first node must keep running"


def test_second_process_same_gossip_state_refused(nsrvd_factory, tmp_path):
    first = nsrvd_factory(gossip_config(tmp_path))
    cfg = gossip_config(tmp_path)  # same node's keys and state file, other ports
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, f"gossipStatePath '{cfg['gossipStatePath']}' is in use by process {first.pid}")


def test_one_config_naming_a_file_twice_refused(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    same = tmp_path / "data" / "shared.json"
    cfg["kvConfigPath"] = str(same)
    cfg["gossipStatePath"] = str(tmp_path / "data" / "." / "shared.json")
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "kvConfigPath and gossipStatePath are the same file")


# ---- the node's own key ----


def test_own_secret_key_of_another_node_refused(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    cfg["gossipSecretKeyFile"] = str(tmp_path / "keys" / "n2.key")  # node 2's secret
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "gossipSecretKeyFile does not match this node's public key 1:1")


def test_own_key_listed_twice_refused(nsrvd_factory, tmp_path):
    cfg = gossip_config(tmp_path)
    other = keygen_token(tmp_path / "keys" / "spare.key", 1)
    cfg["gossipPeerKeys"] += "," + other  # node 1, key 1 again with another key
    p, rc = wait_refused(nsrvd_factory, cfg)
    assert_refused(p, rc, "gossipPeerKeys: key 1 of node 1 listed twice")


def test_sighup_with_another_nodes_secret_keeps_old_keys(nsrvd_factory, tmp_path, connect):
    cfg = gossip_config(tmp_path)
    p = nsrvd_factory(cfg)
    cfg2 = dict(cfg, gossipSecretKeyFile=str(tmp_path / "keys" / "n2.key"))
    p.config.update(cfg2)
    write_properties(p.config_path, p.config)
    p.signal(signal.SIGHUP)
    wait_log(p, r"SIGHUP: keeping the running peers and keys: gossipSecretKeyFile does not match")
    text = NamesrvClient(connect(p)).get_config().body_text()
    assert f"gossipSecretKeyFile={cfg['gossipSecretKeyFile']}\n" in text


# ---- SIGHUP says what it did ----


def test_sighup_names_applied_keys_and_warns_restart_keys(nsrvd_factory):
    p = nsrvd_factory({"logLevel": "notice"})
    p.config.update({"logLevel": "info", "listenPort": p.port + 1, "maxFrameLength": 2000000})
    write_properties(p.config_path, p.config)
    p.signal(signal.SIGHUP)
    wait_log(p, r"SIGHUP: reloaded '[^']+'; changed keys applied: logLevel\n")
    warns = re.findall(r"WARN.*SIGHUP: changed keys not applied, they need a restart: (.*)", p.stderr())
    assert warns == ["listenPort, maxFrameLength"], p.tail()


# ---- a failed durable write changes nothing ----


def block_writes(path):
    """The writer writes '<path>.tmp' and renames it: a directory there fails every write
    (EISDIR), for root too."""
    os.mkdir(str(path) + ".tmp")


def unblock_writes(path):
    os.rmdir(str(path) + ".tmp")


def test_failed_kv_write_is_undone(nsrvd_factory, connect):
    p = nsrvd_factory({})
    ns = NamesrvClient(connect(p))
    assert_code(ns.put_kv("NS", "kept", "1"), 0, None)
    block_writes(p.kv_path)
    resp = ns.put_kv("NS", "lost", "2")
    assert resp.code != 0 and "persist kv config failed" in (resp.remark or ""), resp
    resp = ns.delete_kv("NS", "kept")
    assert resp.code != 0, resp
    assert ns.get_kv("NS", "lost").code == KV_CONFIG_NOT_EXIST
    assert ns.get_kv("NS", "kept").ext.get("value") == "1"
    unblock_writes(p.kv_path)
    assert_code(ns.put_kv("NS", "later", "3"), 0, None)
    assert ns.get_kv("NS", "lost").code == KV_CONFIG_NOT_EXIST
    assert '"lost"' not in p.kv_path.read_text()


def test_failed_config_write_is_undone(nsrvd_factory, connect):
    p = nsrvd_factory({})
    ns = NamesrvClient(connect(p))
    block_writes(p.config_path)
    resp = ns.update_config("orderMessageEnable=true\n")
    assert resp.code != 0 and "persist config failed" in (resp.remark or ""), resp
    assert "orderMessageEnable=false\n" in ns.get_config().body_text()
    unblock_writes(p.config_path)
    assert_code(ns.update_config("enableTopicList=false\n"), 0, None)
    text = ns.get_config().body_text()
    assert "orderMessageEnable=false\n" in text and "enableTopicList=false\n" in text
    assert "orderMessageEnable=true" not in p.config_path.read_text()
