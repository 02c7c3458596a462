"""KV config requests (proto/requests.md §2.1-§2.3, §2.14, §4) over JSON and ROCKETMQ binary headers, and the
kvConfig.json file the server writes."""

import json

import pytest

from nsrv_check import assert_code, assert_envelope
from rmq import NamesrvClient, RequestCode, SerializeType

BOTH = pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])


@pytest.fixture
def client(nsrvd, connect, st):
    return NamesrvClient(connect(nsrvd, serialize_type=st))


def read_kv_file(server):
    return server.kv_path.read_text(encoding="utf-8")


@BOTH
def test_put_get_delete_roundtrip(client, st):
    c = client.conn
    req = c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "NS1", "key": "k1", "value": "v1"})
    c.send(req)
    resp = c.recv_for(req.opaque)
    assert_envelope(resp, req)
    # PUT: SUCCESS, no ext (no response header class), no remark, no body.
    assert_code(resp, 0, None, ext=None, body=None)

    resp = client.get_kv("NS1", "k1")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext={"value": "v1"}, body=None)

    resp = client.delete_kv("NS1", "k1")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext=None, body=None)

    resp = client.get_kv("NS1", "k1")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 22, "No config item, Namespace: NS1 Key: k1", ext={}, body=None)


@BOTH
def test_get_unknown_namespace_and_key_is_22_with_empty_ext(client, st):
    client.put_kv("NSX", "a", "1")
    for ns_, key in (("nope", "k"), ("NSX", "missing")):
        resp = client.get_kv(ns_, key)
        assert_envelope(resp, serialize_type=st)
        assert_code(resp, 22, f"No config item, Namespace: {ns_} Key: {key}", ext={}, body=None)
        if st == SerializeType.JSON:
            # proto/remoting.md §3 / proto/requests.md §2.2: the key is present, as an empty object.
            assert resp.header_json["extFields"] == {}


@BOTH
def test_put_overwrites(client):
    assert client.put_kv("N", "k", "one").code == 0
    assert client.put_kv("N", "k", "two").code == 0
    assert client.get_kv("N", "k").ext == {"value": "two"}


def test_put_without_namespace_or_key_is_system_error(ns):
    for ext in ({"key": "k", "value": "v"}, {"namespace": "n", "value": "v"}, {}):
        resp = ns.conn.request(RequestCode.PUT_KV_CONFIG, ext)
        assert_envelope(resp)
        assert_code(resp, 1, "namespace or key is null")


def test_put_unicode_value_roundtrip(ns):
    value = "broker-中:4;b/x \"q\""
    assert ns.put_kv("ORDER_TOPIC_CONFIG", "Tö", value).code == 0
    assert ns.get_kv("ORDER_TOPIC_CONFIG", "Tö").ext == {"value": value}


def test_kv_file_written_on_put_and_delete_with_bak(nsrvd, ns):
    assert ns.put_kv("NS1", "k1", "v1").code == 0
    first = read_kv_file(nsrvd)
    # proto/requests.md §4: compact fastjson, one line, no trailing newline.
    assert first == '{"configTable":{"NS1":{"k1":"v1"}}}'

    assert ns.put_kv("NS2", "k2", "v2").code == 0
    second = read_kv_file(nsrvd)
    assert json.loads(second) == {"configTable": {"NS1": {"k1": "v1"}, "NS2": {"k2": "v2"}}}
    assert "\n" not in second and " " not in second
    bak = nsrvd.kv_path.with_name("kvConfig.json.bak")
    assert bak.exists(), "a .bak of the previous file must be written"
    assert bak.read_text(encoding="utf-8") == first

    # Delete persists, and an emptied namespace stays as {}.
    assert ns.delete_kv("NS1", "k1").code == 0
    assert json.loads(read_kv_file(nsrvd)) == {"configTable": {"NS1": {}, "NS2": {"k2": "v2"}}}
    assert json.loads(bak.read_text(encoding="utf-8")) == json.loads(second)


def test_delete_of_missing_key_succeeds_and_still_persists(nsrvd, ns):
    assert ns.put_kv("NS1", "k1", "v1").code == 0
    before = read_kv_file(nsrvd)
    resp = ns.delete_kv("NS1", "nope")
    assert_code(resp, 0, None, ext=None)
    resp = ns.delete_kv("NOPE", "nope")
    assert_code(resp, 0, None, ext=None)
    assert json.loads(read_kv_file(nsrvd)) == json.loads(before)
    bak = nsrvd.kv_path.with_name("kvConfig.json.bak")
    assert bak.exists()


@BOTH
def test_kvlist_by_namespace(client, st):
    client.put_kv("NSL", "a", "1")
    client.put_kv("NSL", "b", "2")
    resp = client.get_kvlist("NSL")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext=None)
    assert json.loads(resp.body) == {"table": {"a": "1", "b": "2"}}

    resp = client.get_kvlist("unknownNS")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 22, "No config item, Namespace: unknownNS", ext=None, body=None)


def test_kvlist_of_emptied_namespace_is_success_with_empty_table(ns):
    ns.put_kv("NSE", "a", "1")
    ns.delete_kv("NSE", "a")
    resp = ns.get_kvlist("NSE")
    assert_code(resp, 0, None)
    assert resp.body == b'{"table":{}}'


def test_put_without_value_stores_nothing_visible(nsrvd, ns):
    """proto/requests.md §2.1: a missing value stores null; the file writer drops it and GET finds nothing."""
    resp = ns.conn.request(RequestCode.PUT_KV_CONFIG, {"namespace": "NV", "key": "k"})
    assert_code(resp, 0, None, ext=None)
    assert_code(ns.get_kv("NV", "k"), 22, "No config item, Namespace: NV Key: k", ext={})
    assert json.loads(read_kv_file(nsrvd))["configTable"].get("NV", {}) == {}
