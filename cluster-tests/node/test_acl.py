"""Who may change the cluster (docs/design/tls-and-access.md "Who may change the cluster"): adminAllowList,
brokerAllowList, signed admin writes (adminAclEnable/adminAclFile) and
updateNamesrvConfigEnable, black-box over TCP, IPv4 and IPv6.

Signatures are computed here exactly as RocketMQ's AclClientRPCHook does: HmacSHA1 keyed
with the secret over the values of the ext fields sorted by name (AccessKey included,
Signature excluded), then the body; base64. The real Java hook is exercised by the compat
harness (cluster-tests/compat).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Dict, Optional

import pytest

from nsrvd_proc import scaled
from rmq import (
    Broker,
    Connection,
    DataVersion,
    NamesrvClient,
    RequestCode,
    ResponseCode,
    SerializeType,
    TopicConfig,
)

RC = RequestCode
NO_PERMISSION = ResponseCode.NO_PERMISSION

ACCESS_KEY = "rocketmq2"
SECRET = "12345678"

QUEUE_DATA = [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": 0}]


TOPICS = [TopicConfig("BrokerTopic"), TopicConfig("BrokerTopic2")]


def java_sort_key(s: str):
    """Java's String.compareTo: UTF-16 code unit order."""
    return list(s.encode("utf-16-be"))


def sign(ext: Dict[str, str], body: Optional[bytes], secret: str = SECRET, access_key: str = ACCESS_KEY) -> Dict[str, str]:
    """ext plus AccessKey and Signature, as AclClientRPCHook.doBeforeRequest adds them."""
    signed = dict(ext)
    signed["AccessKey"] = access_key
    content = "".join(signed[k] for k in sorted(signed, key=java_sort_key) if k != "Signature")
    data = content.encode("utf-8") + (body or b"")
    mac = hmac.new(secret.encode("utf-8"), data, hashlib.sha1).digest()
    signed["Signature"] = base64.b64encode(mac).decode("ascii")
    return signed


def admin_requests():
    """(code, ext, body) for each admin-write code, valid against a fresh node."""
    topic_body = json.dumps({"queueDatas": QUEUE_DATA}).encode()
    return [
        (RC.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}, None),
        (RC.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}, None),
        (RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, None),
        (RC.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}, None),
        (RC.REGISTER_TOPIC_IN_NAMESRV, {"topic": "AclTopic"}, topic_body),
        (RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "AclTopic"}, None),
        (RC.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true"),
    ]


def broker_requests(ns: NamesrvClient):
    """Senders for each broker code; each returns the reply."""
    b = Broker()
    return {
        # Two topics: a first registration of one topic is refused (proto/route.md §3 step 7).
        "REGISTER_BROKER": lambda: ns.register_broker(b, TOPICS),
        "UNREGISTER_BROKER": lambda: ns.unregister_broker(b),
        "BROKER_HEARTBEAT": lambda: ns.heartbeat(b, oneway=False),
        "QUERY_DATA_VERSION": lambda: ns.query_data_version(b, DataVersion(1, 1, 0)),
    }


def assert_refused(resp, rule: str):
    assert resp.code == NO_PERMISSION, resp
    assert rule in (resp.remark or ""), resp.remark


def assert_reads_open(ns: NamesrvClient):
    for resp in (
        ns.get_kv("ns", "k"),
        ns.get_route("NoSuchTopic"),
        ns.cluster_info(),
        ns.get_config(),
        ns.all_topics(),
        ns.get_kvlist("ns"),
    ):
        assert resp.code != NO_PERMISSION, resp


# ---------------------------------------------------------------------------------------
# Allow lists
# ---------------------------------------------------------------------------------------


@pytest.mark.nsrvd_config(adminAllowList="10.0.0.0/8, fd00::/8")
def test_admin_allow_list_refuses_others(nsrvd, ns):
    for code, ext, body in admin_requests():
        resp = ns.conn.request(code, ext, body)
        assert_refused(resp, "is not in adminAllowList")
        assert "127.0.0.1" in resp.remark
    # Nothing was applied; reads and the brokers' requests stay open.
    assert ns.get_kv("ns", "k").code == ResponseCode.QUERY_NOT_FOUND
    assert "orderMessageEnable=false" in ns.get_config().body_text()
    for name, send in broker_requests(ns).items():
        assert send().code == ResponseCode.SUCCESS, name
    assert_reads_open(ns)
    # The refusals are logged with the source address (rate-limited: at least one line).
    deadline = time.monotonic() + scaled(5)
    while "refused a request from 127.0.0.1:" not in nsrvd.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "refused a request from 127.0.0.1:" in nsrvd.output()


@pytest.mark.nsrvd_config(adminAllowList="10.0.0.0/8")
def test_refusal_log_is_rate_limited_and_counts_every_refusal(nsrvd, ns):
    """A flood of refused requests gives at most one log line a second; each line counts the
    refusals not logged since the previous one, so none goes unaccounted."""
    burst = 300
    cmds = [ns.conn.build(RC.PUT_KV_CONFIG, {"namespace": "ns", "key": f"k{i}", "value": "v"}) for i in range(burst)]
    t0 = time.monotonic()
    replies = ns.conn.pipeline(cmds, timeout=scaled(30))
    elapsed = time.monotonic() - t0
    assert all(r.code == NO_PERMISSION for r in replies.values())
    # One more, past the one-second spacing: its line carries the count of the burst's rest.
    time.sleep(1.1)
    assert ns.put_kv("ns", "last", "v").code == NO_PERMISSION
    line = re.compile(r"refused a request from 127\.0\.0\.1:\d+: .*?(?: \(and (\d+) other refusals since the last line\))?$", re.M)
    deadline = time.monotonic() + scaled(5)
    while True:
        found = line.findall(nsrvd.output())
        if sum(1 + int(k or 0) for k in found) == burst + 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert sum(1 + int(k or 0) for k in found) == burst + 1, found
    assert len(found) <= elapsed + 1.1 + 2, (len(found), elapsed)
    assert len(found) < burst // 10


@pytest.mark.nsrvd_config(brokerAllowList="10.1.2.3")
def test_broker_allow_list_refuses_others(ns):
    for name, send in broker_requests(ns).items():
        assert_refused(send(), f"{name} refused: 127.0.0.1:")
    # Nothing registered; admin writes and reads stay open.
    assert ns.get_route("BrokerTopic").code == ResponseCode.TOPIC_NOT_EXIST
    assert ns.put_kv("ns", "k", "v").code == ResponseCode.SUCCESS
    assert_reads_open(ns)


@pytest.mark.nsrvd_config(updateNamesrvConfigEnable="false")
def test_update_namesrv_config_switched_off(ns):
    resp = ns.update_config("orderMessageEnable=true")
    assert_refused(resp, "updateNamesrvConfigEnable=false")
    assert "orderMessageEnable=false" in ns.get_config().body_text()
    # The other admin writes are not affected.
    assert ns.put_kv("ns", "k", "v").code == ResponseCode.SUCCESS


def start_dual_stack(nsrvd_factory, **props):
    """A node listening on [::] (dual-stack: IPv4 clients appear as ::ffff:a.b.c.d)."""
    cfg = {"shutdownWaitTimeSeconds": 3, "bindAddress": "::"}
    cfg.update(props)
    node = nsrvd_factory(cfg, wait_boot=False)
    boot = re.compile(r"boot success\. serializeType=JSON, address :::(\d+)")
    deadline = time.monotonic() + scaled(10)
    while not boot.search(node.output()):
        assert node.alive() and time.monotonic() < deadline, node.tail()
        time.sleep(0.02)
    return node


def client(node, host: str) -> NamesrvClient:
    return NamesrvClient(Connection(host, node.port, timeout=scaled(5)))


@pytest.mark.parametrize(
    "rule, from_v6, from_v4",
    [
        ("::1", True, False),
        ("::1/128,10.0.0.0/8", True, False),
        ("127.0.0.1", False, True),  # an IPv4 rule admits the IPv4-mapped peer
        ("::ffff:127.0.0.0/104", False, True),  # a mapped rule too
        ("fd00::/8,10.0.0.0/8", False, False),
    ],
    ids=["v6-only", "v6-and-other-v4", "v4-rule-mapped-peer", "mapped-rule", "neither"],
)
def test_ipv6_and_mapped_peers(nsrvd_factory, rule, from_v6, from_v4):
    """Every admin and broker code, from ::1 and from 127.0.0.1 (seen as ::ffff:127.0.0.1)."""
    node = start_dual_stack(nsrvd_factory, adminAllowList=rule, brokerAllowList=rule)
    for host, allowed in (("::1", from_v6), ("127.0.0.1", from_v4)):
        ns = client(node, host)
        shown = "[::1]" if host == "::1" else "[::ffff:127.0.0.1]"
        try:
            for code, ext, body in admin_requests():
                resp = ns.conn.request(code, ext, body)
                if allowed:
                    assert resp.code != NO_PERMISSION, (host, code, resp)
                else:
                    assert_refused(resp, "is not in adminAllowList")
                    assert shown in resp.remark, resp.remark
            for name, send in broker_requests(ns).items():
                resp = send()
                if allowed:
                    assert resp.code == ResponseCode.SUCCESS, (host, name, resp)
                else:
                    assert_refused(resp, f"{name} refused: {shown}")
            assert_reads_open(ns)
        finally:
            ns.conn.close()


def start_refused(nsrvd_factory, cfg):
    """A node whose configuration must stop it before it listens: exit code 1."""
    node = nsrvd_factory(cfg, wait_boot=False)
    node._stopped_by_test = True  # its exit is the expected outcome
    assert node.wait(10) == 1, node.tail()
    return node


@pytest.mark.parametrize(
    "value, message",
    [
        ("10.0.0.0/33", "adminAllowList: entry '10.0.0.0/33': the prefix length must be 0..32"),
        ("10.0.0.1/8", "adminAllowList: entry '10.0.0.1/8' has address bits set past its prefix"),
        ("localhost", "adminAllowList: entry 'localhost' is not an IPv4 or IPv6 address"),
    ],
    ids=["prefix", "host-bits", "name"],
)
def test_bad_allow_list_stops_the_start(nsrvd_factory, value, message):
    node = start_refused(nsrvd_factory, {"adminAllowList": value})
    assert message in node.output(), node.tail()
    assert "boot success" not in node.output()


# ---------------------------------------------------------------------------------------
# Signed admin writes
# ---------------------------------------------------------------------------------------


def write_keys(path: Path, text: str, mode: int = 0o600) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)


@pytest.fixture
def acl_node(nsrvd_factory, tmp_path):
    keys = tmp_path / "acl.keys"
    write_keys(keys, f"# admins\n{ACCESS_KEY}={SECRET}\nops=other-secret\n")
    node = nsrvd_factory({"shutdownWaitTimeSeconds": 3, "adminAclEnable": "true", "adminAclFile": str(keys)})
    node.keys_path = keys
    return node


@pytest.mark.parametrize("ser", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "rocketmq"])
def test_signed_admin_writes_accepted(acl_node, ser):
    ns = client(acl_node, "127.0.0.1")
    ns.conn.serialize_type = ser
    try:
        for code, ext, body in admin_requests():
            resp = ns.conn.request(code, sign({k: v for k, v in (ext or {}).items()}, body), body)
            assert resp.code != NO_PERMISSION, (code, resp)
        put = {"namespace": "ns", "key": "k", "value": "signed"}
        assert ns.conn.request(RC.PUT_KV_CONFIG, sign(put, None)).code == ResponseCode.SUCCESS
        assert ns.get_kv("ns", "k").ext.get("value") == "signed"
        # The second key of the file works as well.
        ext = sign({"namespace": "ns", "key": "k2", "value": "x"}, None, "other-secret", "ops")
        assert ns.conn.request(RC.PUT_KV_CONFIG, ext).code == ResponseCode.SUCCESS
        # The same request unsigned is refused on this connection.
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, put), "not signed")
    finally:
        ns.conn.close()


def test_unsigned_or_wrong_signature_refused(acl_node):
    ns = client(acl_node, "127.0.0.1")
    try:
        put = {"namespace": "ns", "key": "k", "value": "v"}
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, put), "not signed")
        only_key = dict(put, AccessKey=ACCESS_KEY)
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, only_key), "not signed")
        wrong = sign(put, None, secret="not-the-secret")
        resp = ns.conn.request(RC.PUT_KV_CONFIG, wrong)
        assert_refused(resp, "Signature does not match")
        assert SECRET not in resp.remark
        unknown = sign(put, None, access_key="intruder")
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, unknown), "AccessKey is not in adminAclFile")
        # Tampering after signing: a value, an added field, the body.
        tampered = sign(put, None)
        tampered["value"] = "evil"
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, tampered), "does not match")
        added = sign(put, None)
        added["extra"] = "x"
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, added), "does not match")
        body = b"orderMessageEnable=true"
        assert_refused(
            ns.conn.request(RC.UPDATE_NAMESRV_CONFIG, sign({}, body), b"orderMessageEnable=fals"),
            "does not match",
        )
        assert ns.get_kv("ns", "k").code == ResponseCode.QUERY_NOT_FOUND
        assert "orderMessageEnable=false" in ns.get_config().body_text()
        # Reads and brokers need no signature.
        assert_reads_open(ns)
        for name, send in broker_requests(ns).items():
            assert send().code == ResponseCode.SUCCESS, name
    finally:
        ns.conn.close()
    out = acl_node.output()
    assert "refused a request from 127.0.0.1:" in out
    assert SECRET not in out and "other-secret" not in out


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604], ids=["0644", "0640", "0604"])
def test_acl_file_mode_refused_at_start(nsrvd_factory, tmp_path, mode):
    keys = tmp_path / "acl.keys"
    write_keys(keys, f"{ACCESS_KEY}={SECRET}\n", mode)
    node = start_refused(nsrvd_factory, {"adminAclEnable": "true", "adminAclFile": str(keys)})
    out = node.output()
    assert f"has mode {mode:04o}" in out and "chmod 600" in out, node.tail()
    assert SECRET not in out


def test_acl_enabled_without_file_refused_at_start(nsrvd_factory):
    node = start_refused(nsrvd_factory, {"adminAclEnable": "true"})
    assert "adminAclEnable=true needs adminAclFile" in node.output()


def wait_for(pred, what: str, node, timeout: float = 10.0):
    deadline = time.monotonic() + scaled(timeout)
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{node.tail()}"
        time.sleep(0.05)


def test_sighup_reloads_keys_and_keeps_them_on_error(acl_node):
    ns = client(acl_node, "127.0.0.1")
    put = {"namespace": "ns", "key": "k", "value": "v"}
    try:
        # A file others can read is refused on reload: the running keys stay.
        write_keys(acl_node.keys_path, "newkey=newsecret\n", 0o644)
        acl_node.signal(signal.SIGHUP)
        wait_for(lambda: "SIGHUP: keeping the running access rules" in acl_node.output(), "the refusal", acl_node)
        assert ns.conn.request(RC.PUT_KV_CONFIG, sign(put, None)).code == ResponseCode.SUCCESS
        # Mode fixed: the new key replaces the old one.
        os.chmod(acl_node.keys_path, 0o600)
        acl_node.signal(signal.SIGHUP)
        new = sign(put, None, "newsecret", "newkey")
        wait_for(
            lambda: ns.conn.request(RC.PUT_KV_CONFIG, new).code == ResponseCode.SUCCESS, "the new key", acl_node
        )
        assert_refused(ns.conn.request(RC.PUT_KV_CONFIG, sign(put, None)), "AccessKey is not in adminAclFile")
        assert "newsecret" not in acl_node.output()
    finally:
        ns.conn.close()


def test_sighup_changes_allow_lists(nsrvd):
    ns = client(nsrvd, "127.0.0.1")
    try:
        assert ns.put_kv("ns", "k", "v").code == ResponseCode.SUCCESS
        with open(nsrvd.config_path, "a", encoding="utf-8") as f:
            f.write("\nadminAllowList=10.0.0.0/8\nupdateNamesrvConfigEnable=false\n")
        nsrvd.signal(signal.SIGHUP)
        wait_for(lambda: ns.put_kv("ns", "k", "v").code == NO_PERMISSION, "the new list", nsrvd)
        assert_refused(ns.update_config("orderMessageEnable=true"), "updateNamesrvConfigEnable=false")
    finally:
        ns.conn.close()
