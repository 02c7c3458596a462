"""Names are exact and text out is valid UTF-8 (docs/compatibility.md, "Names and text").

* A NUL (U+0000) in any request string -- header ext key or value, JSON body, compressed body --
  is refused with SYSTEM_ERROR and a remark that says so; two names that differ after a NUL never
  share state (a KV entry, a topic route, a broker, a cluster).
* Ill-formed UTF-8 in a request is decoded as Java decodes it: each maximal ill-formed subpart
  becomes U+FFFD. Every reply, kvConfig.json, the config file and the status pages decode as strict
  UTF-8; kvConfig.json parses with Python's json module; a long remark is cut between characters.

Raw bytes are written in Python strings as lone surrogates (U+DC80-U+DCFF, "surrogateescape"),
which the test codec turns back into those bytes.
"""

import json
import struct
import subprocess
import urllib.request
import zlib

import pytest

from nsrv_check import register_ok
from nsrvd_proc import free_port, scaled
from rmq import (
    Broker,
    DataVersion,
    NamesrvClient,
    RequestCode,
    SerializeType,
    TopicConfig,
    crc32_masked,
    fj_dumps,
    register_broker_body_json,
    topic_config_wrapper_obj,
    topic_not_exist_remark,
)

BOTH = pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
FFFD = "\ufffd"


def raw(b: bytes) -> str:
    """Bytes (possibly ill-formed UTF-8) as a str the test codec writes back as those bytes."""
    return b.decode("utf-8", "surrogateescape")


@pytest.fixture
def client(nsrvd, connect, st):
    return NamesrvClient(connect(nsrvd, serialize_type=st))


def assert_strict_utf8(resp):
    """The reply's strings and body are valid UTF-8. The test codec already decodes a JSON header
    and every binary header string strictly (a bad byte fails the test there); this states it."""
    if resp.serialize_type == SerializeType.JSON:
        resp.raw_header.decode("utf-8")
    if resp.body:
        resp.body.decode("utf-8")


def assert_nul_refused(resp):
    assert_strict_utf8(resp)
    assert resp.code == 1, resp
    assert "NUL character" in (resp.remark or ""), resp


def body_json_raw(obj) -> bytes:
    return fj_dumps(obj).encode("utf-8", "surrogateescape")


def compressed_body(topic_texts, dv=DataVersion(1, 1, 0)) -> bytes:
    """The zlib form of a registration (proto/requests.md §2.5.2) with topic texts given as bytes."""
    out = bytearray()

    def lp(b):
        out.extend(struct.pack(">i", len(b)) + b)

    lp(dv.encode())
    out += struct.pack(">i", len(topic_texts))
    for t in topic_texts:
        lp(t)
    lp(b"[]")
    out += struct.pack(">i", 0)
    return zlib.compress(bytes(out), 9)


def register_raw(ns, broker, body, *, compressed=False):
    return ns.register_broker(broker, body=body, compressed=compressed, crc=crc32_masked(body))


def route_broker_names(ns, topic):
    resp = ns.get_route(topic)
    assert_strict_utf8(resp)
    if resp.code != 0:
        return set()
    return {b["brokerName"] for b in resp.body_json()["brokerDatas"]}


# --------------------------------------------------------------------------------------------
# Names are exact: NUL is refused on every path
# --------------------------------------------------------------------------------------------


@BOTH
def test_kv_key_with_nul_does_not_overwrite_its_prefix(client):
    assert client.put_kv("NS", "victim", "original").code == 0
    assert_nul_refused(client.put_kv("NS", "victim\x00x", "evil"))
    assert_nul_refused(client.put_kv("NS\x00x", "victim", "evil"))
    assert_nul_refused(client.put_kv("NS", "other", "val\x00ue"))
    assert_nul_refused(client.get_kv("NS", "victim\x00x"))
    assert_nul_refused(client.delete_kv("NS", "victim\x00x"))
    resp = client.get_kv("NS", "victim")
    assert resp.code == 0 and resp.ext["value"] == "original", resp
    assert client.get_kv("NS", "other").code == 22
    listed = client.get_kvlist("NS").body_json()["table"]
    assert listed == {"victim": "original"}


@BOTH
def test_topic_with_nul_in_header_is_not_its_prefix(client):
    register_ok(client, Broker(name="broker-a", addr="127.0.0.1:10911"), [TopicConfig("HT_A", 4, 4, 6), TopicConfig("HT_B", 4, 4, 6)])
    assert_nul_refused(client.get_route("HT_A\x00x"))
    assert_nul_refused(client.delete_topic("HT_A\x00x"))
    assert_nul_refused(client.register_topic("HT_A\x00x", [{"brokerName": "broker-z"}]))
    # In the body (TopicRouteData.queueDatas): Java answers SUCCESS for a body it cannot use; a
    # NUL is reported on this path as on every other.
    assert_nul_refused(client.register_topic("HT_A", [{"brokerName": "broker-a\x00x"}]))
    assert route_broker_names(client, "HT_A") == {"broker-a"}


@BOTH
@pytest.mark.parametrize("field", ["brokerName", "clusterName", "brokerAddr", "__ZONE_NAME"])
def test_broker_identity_with_nul_is_refused(client, field):
    good = Broker(cluster="C1", name="broker-a", addr="127.0.0.1:10911")
    register_ok(client, good, [TopicConfig("T1", 4, 4, 6), TopicConfig("T2", 4, 4, 6)])
    evil = Broker(cluster="C1", name="broker-a", addr="127.0.0.1:10911")
    if field == "brokerName":
        evil.name = "broker-a\x00x"
    elif field == "clusterName":
        evil.cluster = "C1\x00x"
    elif field == "brokerAddr":
        evil.addr = "127.0.0.1:10911\x00x"
    else:
        evil.zone = "zone\x00x"
    resp = client.register_broker(evil, [TopicConfig("T_EVIL", 4, 4, 6), TopicConfig("T_EVIL2", 4, 4, 6)])
    assert_nul_refused(resp)
    assert route_broker_names(client, "T_EVIL") == set()
    assert_nul_refused(client.wipe_write_perm("broker-a\x00x"))
    info = client.cluster_info()
    assert_strict_utf8(info)
    body = info.body_json()
    assert set(body["clusterAddrTable"]) == {"C1"} and body["clusterAddrTable"]["C1"] == ["broker-a"]


@pytest.mark.parametrize("form", ["json_key", "json_field", "compressed"])
def test_registered_topic_with_nul_joins_no_other_route(ns, form):
    register_ok(ns, Broker(name="broker-a", addr="127.0.0.1:10911"), [TopicConfig("HT_A", 4, 4, 6), TopicConfig("HT_B", 4, 4, 6)])
    evil = Broker(name="broker-b", addr="127.0.0.1:10921")
    dv = DataVersion(1, 1, 0)
    if form == "compressed":
        body = compressed_body([b"HT_A\x00x 16 16 6 SINGLE_TAG {}", b"T\x00nul 16 16 6 SINGLE_TAG {}"])
        resp = register_raw(ns, evil, body, compressed=True)
    else:
        wrapper = topic_config_wrapper_obj([TopicConfig("HT_A\x00x"), TopicConfig("T\x00nul")], dv)
        if form == "json_field":
            # The table key is clean; the bean's own topicName holds the NUL.
            table = wrapper["topicConfigTable"]
            wrapper["topicConfigTable"] = {k.replace("\x00", "_"): v for k, v in table.items()}
        body = body_json_raw({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})
        resp = register_raw(ns, evil, body)
    assert_strict_utf8(resp)
    assert resp.code == 1 and "NUL character" in resp.remark, resp
    assert route_broker_names(ns, "HT_A") == {"broker-a"}
    topics = ns.all_topics().body_json()["topicList"]
    assert "T" not in topics and "HT_A" in topics


def test_kv_file_loading_keeps_nul_entries_exact_and_replaces_ill_formed_bytes(nsrvd_factory, connect, tmp_path):
    """A kvConfig.json written by a Java NameServer may hold \\u0000: such entries are kept
    exactly (never merged into their prefix) and written back as they were. Ill-formed bytes in a
    hand-edited file are read as U+FFFD, so nothing invalid is served or written back."""
    path = tmp_path / "kv" / "kvConfig.json"
    path.parent.mkdir()
    path.write_bytes(b'{"configTable":{"NS":{"victim":"original","victim\\u0000x":"other","bad":"v\xff"}}}')
    node = nsrvd_factory({"shutdownWaitTimeSeconds": 3, "kvConfigPath": str(path)})
    ns = NamesrvClient(connect(node))
    assert ns.get_kv("NS", "victim").ext["value"] == "original"
    resp = ns.get_kv("NS", "bad")
    assert_strict_utf8(resp)
    assert resp.ext["value"] == "v" + FFFD
    resp = ns.get_kvlist("NS")
    assert_strict_utf8(resp)
    want = {"victim": "original", "victim\x00x": "other", "bad": "v" + FFFD}
    assert resp.body_json()["table"] == want
    assert ns.put_kv("NS", "new", "v").code == 0
    table = json.loads(path.read_bytes().decode("utf-8"))["configTable"]["NS"]
    assert table == dict(want, new="v")


# --------------------------------------------------------------------------------------------
# Valid UTF-8 out, whatever came in
# --------------------------------------------------------------------------------------------


@BOTH
def test_route_miss_remark_is_valid_utf8(client):
    resp = client.get_route(raw(b"\xff\xfe"))
    assert_strict_utf8(resp)
    assert resp.code == 17
    assert resp.remark == topic_not_exist_remark(FFFD + FFFD)
    # Java's decoder: one U+FFFD per maximal ill-formed subpart.
    resp = client.get_route(raw(b"a\xf0\x9f\x98b\xed\xa0\x80"))
    assert resp.remark == topic_not_exist_remark("a" + FFFD + "b" + FFFD * 3)


@BOTH
def test_long_remark_is_cut_between_characters(client):
    for pad in range(3):
        topic = "a" * pad + "\u4e2d" * 700
        full = topic_not_exist_remark(topic).encode("utf-8")
        try:
            full[:1023].decode("utf-8")
        except UnicodeDecodeError:
            break  # a byte cut at 1023 would split a character: the case to test
    resp = client.get_route(topic)
    assert_strict_utf8(resp)
    assert resp.code == 17
    got = resp.remark.encode("utf-8")
    assert 1020 <= len(got) <= 1023 and full.startswith(got)


@BOTH
def test_kv_with_ill_formed_bytes_is_stored_as_replacement(client, nsrvd):
    assert client.put_kv("NS" + raw(b"\xc3"), "k" + raw(b"\xff"), "v" + raw(b"\xe4\xb8")).code == 0
    resp = client.get_kv("NS" + FFFD, "k" + FFFD)
    assert_strict_utf8(resp)
    assert resp.code == 0 and resp.ext["value"] == "v" + FFFD
    resp = client.get_kvlist("NS" + raw(b"\xc3"))
    assert_strict_utf8(resp)
    assert resp.body_json()["table"] == {"k" + FFFD: "v" + FFFD}
    resp = client.get_kv("NS", raw(b"\xff"))  # a miss echoes both names in the remark
    assert_strict_utf8(resp)
    assert resp.remark == "No config item, Namespace: NS Key: " + FFFD
    text = nsrvd.kv_path.read_bytes().decode("utf-8")
    assert json.loads(text)["configTable"] == {"NS" + FFFD: {"k" + FFFD: "v" + FFFD}}


@pytest.mark.parametrize("form", ["json", "compressed"])
def test_registered_topic_with_ill_formed_bytes_is_listed_as_valid_utf8(ns, form):
    b = Broker(name="broker" + raw(b"\xfe"), cluster="C" + raw(b"\xff"), addr="127.0.0.1:10911")
    if form == "compressed":
        body = compressed_body([b"X\xff\xfe 16 16 6 SINGLE_TAG {}", b"T2 16 16 6 SINGLE_TAG {}"])
        resp = register_raw(ns, b, body, compressed=True)
    else:
        body = register_broker_body_json([TopicConfig("placeholder"), TopicConfig("T2")], DataVersion(1, 1, 0))
        body = body.replace(b"placeholder", b"X\xff\xfe")
        resp = register_raw(ns, b, body)
    assert_strict_utf8(resp)
    assert resp.code == 0, resp
    for resp in (ns.all_topics(), ns.cluster_info(), ns.topics_by_cluster("C" + FFFD), ns.get_route("X" + FFFD * 2)):
        assert_strict_utf8(resp)
        assert resp.code == 0, resp
    assert "X" + FFFD * 2 in ns.all_topics().body_json()["topicList"]
    assert route_broker_names(ns, "X" + FFFD * 2) == {"broker" + FFFD}


def test_config_update_with_ill_formed_bytes(ns, nsrvd):
    resp = ns.conn.request(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"productEnvName=env\xff\xc3\n")
    assert_strict_utf8(resp)
    assert resp.code == 0, resp
    resp = ns.get_config()
    assert_strict_utf8(resp)
    assert "productEnvName=env" + FFFD + FFFD in resp.body_text()
    nsrvd.config_path.read_bytes().decode("utf-8")
    resp = ns.conn.request(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"productEnvName=a\\u0000b\n")
    assert_strict_utf8(resp)
    assert resp.code == 1, resp
    assert "productEnvName=env" + FFFD + FFFD in ns.get_config().body_text()


def test_status_pages_are_valid_utf8(nsrvd_factory, connect, nsrvd_bin):
    port = free_port()
    node = nsrvd_factory({"shutdownWaitTimeSeconds": 3, "statusPort": port, "statusAddress": "127.0.0.1"})
    ns = NamesrvClient(connect(node))
    b = Broker(name="b" + raw(b"\xfe\x80"), cluster="C" + raw(b"\xff"), addr="127.0.0.1:10911", zone="z" + raw(b"\xc0"))
    resp = ns.register_broker(b, [TopicConfig("T1", 4, 4, 6), TopicConfig("T2", 4, 4, 6)])
    assert resp.code == 0, resp
    for path in ("/status", "/metrics", "/health"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=scaled(5)) as r:
            text = r.read().decode("utf-8")
        if path == "/status":
            brokers = json.loads(text)["brokers"]
            assert brokers[0]["brokerName"] == "b" + FFFD * 2 and brokers[0]["cluster"] == "C" + FFFD
    for args in (["status"], ["status", "--json"]):
        out = subprocess.run([nsrvd_bin, *args, f"127.0.0.1:{port}"], capture_output=True, timeout=scaled(10))
        assert out.returncode == 0, out.stderr
        out.stdout.decode("utf-8")
        assert ("b" + FFFD * 2).encode() in out.stdout
