"""GET_ROUTEINFO_BY_TOPIC encodings, zone filter, order config, acting master, wait-for-service,
and WIPE/ADD_WRITE_PERM (proto/requests.md §2.8, §2.10, proto/route.md §6, §9, §5)."""

import json
import time

import pytest

from nsrv_check import (
    assert_code,
    assert_envelope,
    default_mode_json,
    register_ok,
    route_addrs,
    route_or_none,
    route_perms,
    standard_json,
)
from rmq import Broker, DataVersion, NamesrvClient, RequestCode, SerializeType, TopicConfig, topic_not_exist_remark

MASTER = Broker(name="broker-a", addr="127.0.0.1:10911")
T = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)]

STD = (
    '{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",'
    '"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
    '"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
DEFAULT = STD.replace('{"0":', "{0:")


def _route(ns, version, extra=None, st=None):
    kw = {"version": version}
    if st is not None:
        kw["serialize_type"] = st
    return ns.get_route("TopicTest", extra, **kw)


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
@pytest.mark.parametrize(
    "version,extra,expect",
    [
        (479, None, STD),
        (401, None, STD),
        (400, None, DEFAULT),
        (0, None, DEFAULT),
        (0, {"acceptStandardJsonOnly": "true"}, STD),
        (0, {"acceptStandardJsonOnly": "TRUE"}, STD),
        (0, {"acceptStandardJsonOnly": "false"}, DEFAULT),
        (0, {"acceptStandardJsonOnly": "yes"}, DEFAULT),
    ],
    ids=["v479", "v401", "v400", "v0", "v0-accept-true", "v0-accept-TRUE", "v0-accept-false", "v0-accept-yes"],
)
def test_route_encoding_depends_on_version(ns, st, version, extra, expect):
    register_ok(ns, MASTER, T)
    resp = _route(ns, version, extra, st)
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext=None, body=expect)


def test_standard_mode_sorts_ids_numerically_and_default_mode_is_bare(ns):
    register_ok(ns, MASTER, T)
    for bid, port in ((10, 10913), (2, 10914), (100, 10915), (33, 10916)):
        register_ok(ns, Broker(name="broker-a", addr=f"127.0.0.1:{port}", broker_id=bid), T)
    std = _route(ns, 479)
    assert '"brokerAddrs":{"0":"127.0.0.1:10911","2":"127.0.0.1:10914","10":"127.0.0.1:10913",' \
           '"33":"127.0.0.1:10916","100":"127.0.0.1:10915"}' in std.body_text()
    standard_json(std)
    dflt = _route(ns, 100)
    v = default_mode_json(dflt)
    assert v == json.loads(std.body)


def test_escaping_standard_vs_default(ns):
    """proto/route.md §9: non-ASCII as uppercase \\uXXXX and '/' as '\\/' in standard mode; raw in default mode."""
    b = Broker(cluster="C/1", name='broker-中/"x', addr="127.0.0.1:10911")
    register_ok(ns, b, T)
    std = _route(ns, 479).body_text()
    assert '"brokerName":"broker-\\u4E2D\\/\\"x"' in std, std
    assert '"cluster":"C\\/1"' in std, std
    assert json.loads(std)["brokerDatas"][0]["brokerName"] == 'broker-中/"x'
    dflt = _route(ns, 0).body_text()
    assert '"brokerName":"broker-中/\\"x"' in dflt, dflt
    assert '"cluster":"C/1"' in dflt, dflt


def test_control_chars_escaped_in_both_modes(ns):
    b = Broker(name="b\x7f\t\u2028", addr="127.0.0.1:10911")
    register_ok(ns, b, T)
    for v in (479, 0):
        text = _route(ns, v).body_text()
        assert '"brokerName":"b\\u007F\\t\\u2028"' in text, text


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
def test_unknown_topic_is_17_with_two_line_remark(nsrvd, connect, st):
    ns = NamesrvClient(connect(nsrvd, serialize_type=st))
    resp = ns.get_route("NoSuchTopic")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 17, topic_not_exist_remark("NoSuchTopic"), ext=None, body=None)


def test_order_topic_conf_only_with_order_message_enable(ns):
    register_ok(ns, MASTER, T)
    ns.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4")
    assert "orderTopicConf" not in json.loads(_route(ns, 479).body)


@pytest.mark.nsrvd_config(orderMessageEnable=True)
def test_order_topic_conf_with_order_message_enable(ns):
    register_ok(ns, MASTER, T)
    assert_code(_route(ns, 479), 0, body=STD)  # no KV entry -> field omitted
    ns.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4")
    want = STD.replace('"filterServerTable":{},', '"filterServerTable":{},"orderTopicConf":"broker-a:4",')
    assert_code(_route(ns, 479), 0, None, ext=None, body=want)


def test_zone_filter(ns):
    za = Broker(name="broker-a", addr="127.0.0.1:10911", zone="zoneA")
    zb = Broker(name="broker-b", addr="127.0.0.1:10912", zone="zoneB")
    # A slave-only group (prime slave creates the topic): no master -> always kept.
    zc = Broker(name="broker-c", addr="127.0.0.1:10913", broker_id=1, zone="zoneC")
    register_ok(ns, za, T, filter_servers=["10.0.0.1:1"])
    register_ok(ns, zb, T, filter_servers=["10.0.0.2:1"])
    register_ok(ns, zc, T)
    full = json.loads(_route(ns, 479).body)
    assert set(route_addrs(full)) == {"broker-a", "broker-b", "broker-c"}
    assert full["filterServerTable"] == {za.addr: ["10.0.0.1:1"], zb.addr: ["10.0.0.2:1"]}

    resp = _route(ns, 479, {"__ZONE_MODE": "true", "__ZONE_NAME": "ZONEa"})
    assert_code(resp, 0, None, ext=None)
    v = default_mode_json(resp)  # re-encoded in fastjson default mode: bare keys even for v479
    assert set(route_addrs(v)) == {"broker-a", "broker-c"}
    assert {q["brokerName"] for q in v["queueDatas"]} == {"broker-a", "broker-c"}
    assert v["filterServerTable"] == {za.addr: ["10.0.0.1:1"]}

    # Zone mode off, or blank zone name: no filtering, standard JSON.
    for extra in ({"__ZONE_MODE": "false", "__ZONE_NAME": "zoneA"}, {"__ZONE_MODE": "true", "__ZONE_NAME": " "},
                  {"__ZONE_NAME": "zoneA"}):
        resp = _route(ns, 479, extra)
        assert set(route_addrs(standard_json(resp))) == {"broker-a", "broker-b", "broker-c"}, extra


@pytest.mark.nsrvd_config(supportActingMaster=True)
def test_acting_master_rewrite(ns):
    s = Broker(name="broker-s", addr="127.0.0.1:10941", broker_id=1, enable_acting_master=True)
    s2 = Broker(name="broker-s", addr="127.0.0.1:10942", broker_id=2, enable_acting_master=True)
    register_ok(ns, s2, T)
    register_ok(ns, s, T)
    route = json.loads(_route(ns, 479).body)
    # Prime slave cleared WRITE, so the smallest id is presented as master 0 (a copy).
    assert route_perms(route) == {"broker-s": 4}
    assert route_addrs(route) == {"broker-s": {"0": s.addr, "2": s2.addr}}
    # The sync-member topic is never rewritten.
    register_ok(ns, s, T + [TopicConfig("rmq_sys_SYNC_BROKER_MEMBER_broker-s", 1, 1, 1)], DataVersion(2, 2))
    r2 = route_or_none(ns, "rmq_sys_SYNC_BROKER_MEMBER_broker-s")
    assert route_addrs(r2) == {"broker-s": {"1": s.addr, "2": s2.addr}}
    # The table itself is unchanged.
    mg = ns.member_group("DefaultCluster", "broker-s").body_json()
    assert mg["brokerMemberGroup"]["brokerAddrs"] == {"1": s.addr, "2": s2.addr}


def test_no_acting_master_rewrite_by_default(ns):
    s = Broker(name="broker-s", addr="127.0.0.1:10941", broker_id=1, enable_acting_master=True)
    register_ok(ns, s, T)
    assert route_addrs(json.loads(_route(ns, 479).body)) == {"broker-s": {"1": s.addr}}


@pytest.mark.nsrvd_config(needWaitForService=True, waitSecondsForService=2)
def test_need_wait_for_service(ns):
    t0 = time.monotonic()
    register_ok(ns, MASTER, T)
    resp = _route(ns, 479)
    assert_code(resp, 1, "name server not ready")
    while time.monotonic() - t0 < 3.5:
        time.sleep(0.25)
        resp = _route(ns, 479)
        if resp.code == 0:
            break
    assert_code(resp, 0, body=STD)


def test_topic_whose_brokers_are_unknown_has_no_route(ns):
    """proto/route.md §6 step 3: queue data pointing only at unknown broker names -> TOPIC_NOT_EXIST."""
    register_ok(ns, MASTER, T)
    ns.register_topic("Orphan", [{"brokerName": "broker-a"}])
    assert route_or_none(ns, "Orphan") is not None
    assert_code(ns.unregister_broker(MASTER), 0)
    deadline = time.monotonic() + 2
    while route_or_none(ns, "Orphan") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert route_or_none(ns, "Orphan") is None


# ---------------------------------------------------------------- WIPE / ADD write perm


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
def test_wipe_and_add_write_perm(nsrvd, connect, st):
    ns = NamesrvClient(connect(nsrvd, serialize_type=st))
    register_ok(ns, MASTER, T + [TopicConfig("Inherit", 4, 4, 7)])
    register_ok(ns, Broker(name="broker-b", addr="127.0.0.1:10912"), [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("X", 1, 1, 6)])

    resp = ns.wipe_write_perm("broker-a")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext={"wipeTopicCount": "3"}, body=None)
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-a": 4, "broker-b": 6}
    assert route_perms(route_or_none(ns, "Inherit")) == {"broker-a": 5}
    # Already read-only topics still count.
    assert_code(ns.wipe_write_perm("broker-a"), 0, ext={"wipeTopicCount": "3"})

    resp = ns.add_write_perm("broker-a")
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext={"addTopicCount": "3"}, body=None)
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-a": 6, "broker-b": 6}
    # "Add" sets exactly 6, dropping INHERIT.
    assert route_perms(route_or_none(ns, "Inherit")) == {"broker-a": 6}

    assert_code(ns.wipe_write_perm("nobody"), 0, ext={"wipeTopicCount": "0"})
    assert_code(ns.add_write_perm("nobody"), 0, ext={"addTopicCount": "0"})


def test_standard_mode_sorts_string_keyed_maps(ns):
    from rmq import topic_queue_mapping_info

    bb = Broker(name="broker-b", addr="127.0.0.1:10912")
    ba = Broker(name="broker-a", addr="127.0.0.1:10911")
    for b in (bb, ba):  # register b first so insertion order is not already sorted
        register_ok(ns, b, T, filter_servers=[f"9.9.9.9:{b.addr[-1]}"],
                    mapping_infos=[topic_queue_mapping_info("TopicTest", b.name, epoch=1)])
    text = _route(ns, 479).body_text()
    assert text.index('"127.0.0.1:10911":["9.9.9.9:1"]') < text.index('"127.0.0.1:10912":["9.9.9.9:2"]'), text
    tq = text[text.index('"topicQueueMappingByBroker"'):]
    assert tq.index('"broker-a":{') < tq.index('"broker-b":{'), text


def test_standard_mode_quotes_longs_beyond_2_53(ns):
    """BrowserCompatible: longs outside +-(2^53-1) are written as strings in standard mode
    only (proto/requests.md §2.8)."""
    from rmq import topic_queue_mapping_info

    big = 2**53 + 1
    register_ok(ns, MASTER, T, mapping_infos=[topic_queue_mapping_info("TopicTest", "broker-a", epoch=big)])
    std = _route(ns, 479).body_text()
    assert f'"epoch":"{big}"' in std, std
    dflt = _route(ns, 0).body_text()
    assert f'"epoch":{big}' in dflt, dflt
    register_ok(ns, MASTER, T, DataVersion(2, 2),
                mapping_infos=[topic_queue_mapping_info("TopicTest", "broker-a", epoch=2**53 - 1)])
    assert f'"epoch":{2**53 - 1}' in _route(ns, 479).body_text()


def test_master_gone_without_acting_master_keeps_queue_perm(ns):
    m = Broker(name="broker-a", addr="127.0.0.1:10911")
    s = Broker(name="broker-a", addr="127.0.0.1:10921", broker_id=1)
    register_ok(ns, m, T)
    register_ok(ns, s, T)
    assert_code(ns.unregister_broker(m), 0)
    deadline = time.monotonic() + 2
    while route_addrs(route_or_none(ns, "TopicTest")) != {"broker-a": {"1": s.addr}}:
        assert time.monotonic() < deadline, "master not removed"
        time.sleep(0.05)
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-a": 6}
