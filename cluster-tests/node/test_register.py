"""REGISTER_BROKER, UNREGISTER_BROKER, QUERY_DATA_VERSION, BROKER_HEARTBEAT and
GET_BROKER_MEMBER_GROUP (proto/requests.md §2.4-§2.7, §2.20, proto/route.md §3-§5)."""

import json

import pytest

from nsrv_check import (
    assert_code,
    assert_envelope,
    register_ok,
    route_addrs,
    route_or_none,
    route_perms,
    wait_until,
)
from nsrvd_proc import scaled
from rmq import (
    Broker,
    DataVersion,
    NamesrvClient,
    RequestCode,
    SerializeType,
    TopicConfig,
    crc32_masked,
    parse_lenient,
    register_broker_body_compressed,
    register_broker_body_json,
    topic_queue_mapping_info,
)

MASTER = Broker(cluster="DefaultCluster", name="broker-a", addr="127.0.0.1:10911", broker_id=0, ha_addr="127.0.0.1:10999")
SLAVE = Broker(cluster="DefaultCluster", name="broker-a", addr="127.0.0.1:10921", broker_id=1, ha_addr="127.0.0.1:10922")
T = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 8, 8, 6)]

STD_ROUTE = (
    '{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",'
    '"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
    '"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
def test_master_registration_reply_and_route(nsrvd, connect, st):
    ns = NamesrvClient(connect(nsrvd, serialize_type=st))
    resp = ns.register_broker(MASTER, T, DataVersion(1, 1000))
    assert_envelope(resp, serialize_type=st)
    # Master: no masterAddr/haServerAddr, ext present but empty; no ORDER_TOPIC_CONFIG -> no body.
    assert_code(resp, 0, None, ext={}, body=None)
    if st == SerializeType.JSON:
        assert resp.header_json.get("extFields") == {}
    route = ns.get_route("TopicTest")
    assert_envelope(route, serialize_type=st)
    assert_code(route, 0, None, ext=None, body=STD_ROUTE)


def test_slave_gets_master_addr_and_master_ha_addr(ns):
    register_ok(ns, MASTER, T)
    resp = register_ok(ns, SLAVE, T)
    assert_code(resp, 0, None, ext={"masterAddr": MASTER.addr, "haServerAddr": MASTER.ha_addr})
    route = route_or_none(ns, "TopicTest")
    assert route_addrs(route) == {"broker-a": {"0": MASTER.addr, "1": SLAVE.addr}}


def test_slave_without_live_master_gets_empty_ext(ns):
    resp = register_ok(ns, SLAVE, T)
    assert_code(resp, 0, None, ext={})


def test_reply_body_is_order_topic_config_table(ns):
    assert ns.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4;broker-b:4").code == 0
    resp = register_ok(ns, MASTER, T)
    assert resp.body == b'{"table":{"TopicTest":"broker-a:4;broker-b:4"}}'


def test_crc_mismatch_is_rejected(ns):
    body = register_broker_body_json(T, DataVersion(1, 1))
    resp = ns.register_broker(MASTER, body=body, crc=(crc32_masked(body) + 1) & 0x7FFFFFFF)
    assert_envelope(resp)
    assert_code(resp, 1, "crc32 not match", ext={})
    assert route_or_none(ns, "TopicTest") is None
    # A zero CRC means "no check".
    register_ok(ns, MASTER, body=body, crc=0)
    assert route_or_none(ns, "TopicTest") is not None


def test_undecodable_body_is_a_generic_error_without_ext(ns):
    # Java throws while decoding, so its reply is the generic exception one: no extFields
    # (the differential replay against the Java NameServer showed it).
    resp = ns.register_broker(MASTER, body=b"not a body at all", crc=0)
    assert_envelope(resp)
    assert resp.code == 1 and resp.remark.startswith("Failed to decode RegisterBrokerBody")
    assert resp.ext is None


def test_crc_with_no_body_mismatches(ns):
    resp = ns.register_broker(MASTER, body=b"", crc=12345)
    assert_code(resp, 1, "crc32 not match")


@pytest.mark.parametrize(
    "version,flag",
    [(479, True), (479, False), (407, True)],
    ids=["v479-compressed=true", "v479-compressed=false(sniffed)", "v407-compressed=true"],
)
def test_compressed_body(ns, version, flag):
    attrs = None if version < 413 else {}
    # Two topics: a first registration with exactly one topic is rejected (proto/route.md §3 step 7).
    topics = [TopicConfig("TopicZ", 3, 5, 6, topic_sys_flag=1, attributes=attrs),
              TopicConfig("TopicZ2", 1, 1, 6, attributes=attrs)]
    maps = [topic_queue_mapping_info("TopicZ", "broker-a", epoch=2, total_queues=8)] if version >= 413 else None
    body = register_broker_body_compressed(topics, DataVersion(4, 5), mapping_infos=maps, version=version)
    b = Broker(name="broker-a", addr=MASTER.addr, enable_acting_master=None if version < 413 else False)
    resp = ns.register_broker(b, body=body, compressed_flag=flag, version=version)
    assert_envelope(resp)
    assert_code(resp, 0, None, ext={})
    route = route_or_none(ns, "TopicZ")
    assert route is not None, "compressed registration did not create the topic"
    qd = route["queueDatas"][0]
    # topicSysFlag is not carried by the compressed form (proto/requests.md §2.5.2) -> 0.
    assert (qd["readQueueNums"], qd["writeQueueNums"], qd["perm"], qd["topicSysFlag"]) == (3, 5, 6, 0)
    if maps:
        mb = route["topicQueueMappingByBroker"]["broker-a"]
        assert mb["epoch"] == 2 and mb["currIdMap"] == {"0": 0} and mb["totalQueues"] == 8


def test_single_topic_first_registration_is_rejected(ns):
    resp = ns.register_broker(MASTER, [TopicConfig("Only", 4, 4, 6)])
    assert_envelope(resp)
    assert_code(resp, 1, "register broker failed")
    assert route_or_none(ns, "Only") is None
    # After a full registration, a single-topic incremental one is accepted.
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    register_ok(ns, MASTER, [TopicConfig("Only", 4, 4, 6)], DataVersion(2, 2))
    assert route_or_none(ns, "Only") is not None


def test_old_4_9_style_registration(ns):
    old = Broker(name="broker-old", addr="127.0.0.1:10931", enable_acting_master=None)
    topics = [TopicConfig("OldT", 2, 2, 6, attributes=None), TopicConfig("OldT2", 2, 2, 6, attributes=None)]
    body = register_broker_body_json(topics, DataVersion(7, 77, state_version=None), v4=True)
    resp = ns.register_broker(old, body=body, version=407)
    assert_envelope(resp)
    assert_code(resp, 0, None, ext={})
    route = route_or_none(ns, "OldT")
    assert route is not None
    assert route["brokerDatas"][0]["enableActingMaster"] is False
    # QUERY_DATA_VERSION with the same 4.9.x DataVersion (no stateVersion) is "unchanged".
    resp = ns.query_data_version(old, DataVersion(7, 77, state_version=None))
    assert_code(resp, 0, ext={"changed": "false"})


def test_old_version_slave_alone_does_not_create_topics(ns):
    """isPrimeSlave needs enableActingMaster present (proto/route.md §3 step 9/10)."""
    old_slave = Broker(name="broker-s", addr="127.0.0.1:10941", broker_id=1, enable_acting_master=None)
    register_ok(ns, old_slave, T)
    assert route_or_none(ns, "TopicTest") is None


def test_new_version_prime_slave_creates_topics(ns):
    slave = Broker(name="broker-s", addr="127.0.0.1:10941", broker_id=1, enable_acting_master=False)
    register_ok(ns, slave, T)
    route = route_or_none(ns, "TopicTest")
    assert route is not None
    assert route_addrs(route) == {"broker-s": {"1": slave.addr}}
    assert route_perms(route) == {"broker-s": 6}


def test_prime_slave_with_acting_master_clears_write_perm(ns):
    slave = Broker(name="broker-s", addr="127.0.0.1:10941", broker_id=1, enable_acting_master=True)
    register_ok(ns, slave, T)
    route = route_or_none(ns, "TopicTest")
    assert route_perms(route) == {"broker-s": 4}
    assert route["brokerDatas"][0]["enableActingMaster"] is True


def test_slave_does_not_change_queue_data(ns):
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    register_ok(ns, SLAVE, [TopicConfig("TopicTest", 1, 1, 2), TopicConfig("SlaveOnly", 1, 1, 6)], DataVersion(9, 9))
    route = route_or_none(ns, "TopicTest")
    qd = route["queueDatas"][0]
    assert (qd["readQueueNums"], qd["writeQueueNums"], qd["perm"]) == (4, 4, 6)
    assert route_or_none(ns, "SlaveOnly") is None


def test_address_keeps_one_id(ns):
    """Step 5: the same address re-registering with a new id drops its old id."""
    b1 = Broker(name="broker-r", addr="127.0.0.1:10951", broker_id=1)
    register_ok(ns, b1, T)
    b0 = Broker(name="broker-r", addr="127.0.0.1:10951", broker_id=0)
    register_ok(ns, b0, T, DataVersion(2, 2))
    assert route_addrs(route_or_none(ns, "TopicTest")) == {"broker-r": {"0": "127.0.0.1:10951"}}


def test_state_version_conflict_keeps_old_master(ns):
    """Step 6: a new address for an id whose live holder has a higher stateVersion is refused
    with an empty SUCCESS and is not registered."""
    register_ok(ns, MASTER, T, DataVersion(1, 1, state_version=5))
    newcomer = Broker(name="broker-a", addr="127.0.0.1:10961", broker_id=0)
    resp = register_ok(ns, newcomer, T, DataVersion(1, 1, state_version=3))
    assert_code(resp, 0, None, ext={})
    assert route_addrs(route_or_none(ns, "TopicTest")) == {"broker-a": {"0": MASTER.addr}}
    resp = ns.query_data_version(newcomer, DataVersion(1, 1, state_version=3))
    assert_code(resp, 0, ext={"changed": "true"}, body=None)


def test_topic_config_applied_only_when_data_version_changes(ns):
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    assert_code(ns.wipe_write_perm("broker-a"), 0, ext={"wipeTopicCount": "2"})
    # Same DataVersion: existing topics keep the wiped perm.
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-a": 4}
    # Same DataVersion but a topic that is missing is still added.
    register_ok(ns, MASTER, T + [TopicConfig("TopicNew", 1, 1, 6)], DataVersion(1, 1))
    assert route_perms(route_or_none(ns, "TopicNew")) == {"broker-a": 6}
    # Changed DataVersion (stateVersion alone counts): the broker's perm is applied again.
    register_ok(ns, MASTER, T, DataVersion(1, 1, state_version=1))
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-a": 6}


@pytest.mark.nsrvd_config(deleteTopicWithBrokerRegistration=True)
def test_delete_topic_with_broker_registration(ns):
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    register_ok(ns, MASTER, [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicC", 1, 1, 6)], DataVersion(2, 2))
    assert route_or_none(ns, "TopicB") is None
    assert route_or_none(ns, "TopicC") is not None


def test_without_delete_flag_missing_topics_stay(ns):
    register_ok(ns, MASTER, T, DataVersion(1, 1))
    register_ok(ns, MASTER, [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicC", 1, 1, 6)], DataVersion(2, 2))
    assert route_or_none(ns, "TopicB") is not None


def test_topic_name_comes_from_topic_config_not_map_key(ns):
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
        b'"topicConfigTable":{"MapKey":{"topicName":"RealName","perm":6,"readQueueNums":2,"writeQueueNums":2},'
        b'"Other":{"topicName":"Defaults"}}}}'
    )
    register_ok(ns, MASTER, body=body)
    assert route_or_none(ns, "MapKey") is None
    assert route_or_none(ns, "RealName") is not None
    qd = route_or_none(ns, "Defaults")["queueDatas"][0]
    # Java bean defaults for missing fields (proto/requests.md §2.5.1).
    assert (qd["readQueueNums"], qd["writeQueueNums"], qd["perm"], qd["topicSysFlag"]) == (16, 16, 6, 0)


def test_lenient_body_whitespace_unknown_keys_string_numbers(ns):
    body = (
        b'{ "topicConfigSerializeWrapper" : { "topicConfigTable" : { "A" : { "writeQueueNums" : "3", '
        b'"topicName" : "LenA", "readQueueNums" : 3, "perm" : 6, "futureField" : [1, {"x": null}] }, '
        b'"B": {"topicName": "LenB", "topicSysFlag": 2} }, "dataVersion" : { "timestamp" : 1700000000000123, '
        b'"counter" : 9007199254740993 }, "topicQueueMappingInfoMap": { "LenA": {"bname":"broker-a",'
        b'"currIdMap":{0:0, 1:3},"dirty":false,"epoch":1,"scope":"__global__","topic":"LenA","totalQueues":4} } },'
        b' "filterServerList" : null, "extra": true }'
    )
    register_ok(ns, MASTER, body=body)
    qd = route_or_none(ns, "LenA")["queueDatas"][0]
    assert (qd["readQueueNums"], qd["writeQueueNums"]) == (3, 3)
    resp = ns.query_data_version(MASTER, DataVersion(9007199254740993, 1700000000000123))
    assert_code(resp, 0, ext={"changed": "false"})


def test_pre_v3_0_11_body_is_bare_wrapper(ns):
    body = (
        b'{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"Ancient":{"topicName":"Ancient",'
        b'"perm":6,"readQueueNums":1,"writeQueueNums":1},"Ancient2":{"topicName":"Ancient2"}}}'
    )
    register_ok(ns, MASTER, body=body, version=36)
    assert route_or_none(ns, "Ancient") is not None


def test_registration_without_body_registers_broker_only(ns):
    register_ok(ns, MASTER, body=b"")
    info = ns.cluster_info().body_json()
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {"0": MASTER.addr}
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}


def test_filter_servers_and_mapping_and_zone_in_route(ns):
    b = Broker(name="broker-a", addr=MASTER.addr, zone="zone1")
    maps = [topic_queue_mapping_info("TopicTest", "broker-a", epoch=3, total_queues=8, curr_id_map={0: 0, 1: 3})]
    register_ok(ns, b, T, filter_servers=["1.1.1.1:1"], mapping_infos=maps)
    resp = ns.get_route("TopicTest")
    assert_code(resp, 0, None, ext=None)
    assert resp.body == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",'
        b'"enableActingMaster":false,"zoneName":"zone1"}],"filterServerTable":{"127.0.0.1:10911":["1.1.1.1:1"]},'
        b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}],'
        b'"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{"0":0,"1":3},"dirty":false,'
        b'"epoch":3,"scope":"__global__","topic":"TopicTest","totalQueues":8}}}'
    )
    # A JSON registration with an empty filterServerList clears the entry (step 12).
    register_ok(ns, b, T)
    assert json.loads(ns.get_route("TopicTest").body)["filterServerTable"] == {}


# ---------------------------------------------------------------- UNREGISTER_BROKER


def test_unregister_removes_route(ns):
    register_ok(ns, MASTER, T)
    resp = ns.unregister_broker(MASTER)
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=None)
    wait_until(lambda: route_or_none(ns, "TopicTest") is None, scaled(2), msg="route still present")
    info = ns.cluster_info().body_json()
    assert info["brokerAddrTable"] == {} and info["clusterAddrTable"] == {}


def test_unregister_slave_keeps_master(ns):
    register_ok(ns, MASTER, T)
    register_ok(ns, SLAVE, T)
    assert_code(ns.unregister_broker(SLAVE), 0)
    wait_until(
        lambda: route_addrs(route_or_none(ns, "TopicTest")) == {"broker-a": {"0": MASTER.addr}},
        scaled(2),
        msg="slave still in route",
    )


def test_unregister_master_with_acting_master_clears_write(ns):
    m = Broker(name="broker-am", addr="127.0.0.1:11011", broker_id=0, enable_acting_master=True)
    s = Broker(name="broker-am", addr="127.0.0.1:11021", broker_id=1, enable_acting_master=True)
    register_ok(ns, m, T)
    register_ok(ns, s, T)
    assert route_perms(route_or_none(ns, "TopicTest")) == {"broker-am": 6}
    assert_code(ns.unregister_broker(m), 0)
    wait_until(lambda: route_perms(route_or_none(ns, "TopicTest")) == {"broker-am": 4}, scaled(2))
    assert route_addrs(route_or_none(ns, "TopicTest")) == {"broker-am": {"1": s.addr}}


def test_unregister_keeps_topics_of_other_brokers(ns):
    b = Broker(name="broker-b", addr="127.0.0.1:10912")
    register_ok(ns, MASTER, T)
    register_ok(ns, b, [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("OnlyB", 4, 4, 6)])
    assert_code(ns.unregister_broker(MASTER), 0)
    wait_until(lambda: set(route_addrs(route_or_none(ns, "TopicTest"))) == {"broker-b"}, scaled(2))
    assert route_or_none(ns, "TopicB") is None


# ---------------------------------------------------------------- QUERY_DATA_VERSION


def test_query_data_version(ns):
    dv = DataVersion(3, 1000, 0)
    register_ok(ns, MASTER, T, dv)
    resp = ns.query_data_version(MASTER, dv)
    assert_envelope(resp)
    assert_code(resp, 0, None, ext={"changed": "false"}, body=b'{"counter":3,"stateVersion":0,"timestamp":1000}')
    resp = ns.query_data_version(MASTER, DataVersion(4, 1000, 0))
    assert_code(resp, 0, None, ext={"changed": "true"}, body=b'{"counter":3,"stateVersion":0,"timestamp":1000}')
    resp = ns.query_data_version(MASTER, None)
    assert_code(resp, 0, ext={"changed": "true"})
    unknown = Broker(name="broker-x", addr="127.0.0.1:19999")
    resp = ns.query_data_version(unknown, dv)
    assert_code(resp, 0, None, ext={"changed": "true"}, body=None)


def test_query_data_version_is_keyed_by_cluster_and_addr(ns):
    dv = DataVersion(3, 1000, 0)
    register_ok(ns, MASTER, T, dv)
    other_cluster = Broker(cluster="OtherCluster", name="broker-a", addr=MASTER.addr)
    resp = ns.query_data_version(other_cluster, dv)
    assert_code(resp, 0, ext={"changed": "true"}, body=None)


# ---------------------------------------------------------------- BROKER_HEARTBEAT


def test_broker_heartbeat_oneway_has_no_reply_and_sync_is_success(ns):
    register_ok(ns, MASTER, T)
    c = ns.conn
    hb = c.build(RequestCode.BROKER_HEARTBEAT, MASTER.heartbeat_ext(), oneway=True)
    ci = c.build(RequestCode.GET_BROKER_CLUSTER_INFO)
    c.send_many([hb, ci])
    first = c.recv()
    assert first.opaque == ci.opaque, f"a oneway heartbeat must not be answered: {first!r}"
    resp = c.request(RequestCode.BROKER_HEARTBEAT, MASTER.heartbeat_ext())
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=None)
    # Unknown broker: still SUCCESS, nothing happens.
    resp = c.request(RequestCode.BROKER_HEARTBEAT, {"clusterName": "x", "brokerAddr": "1.1.1.1:1", "brokerName": "y"})
    assert_code(resp, 0)


# ---------------------------------------------------------------- GET_BROKER_MEMBER_GROUP


def test_broker_member_group(ns):
    register_ok(ns, MASTER, T)
    s2 = Broker(name="broker-a", addr="127.0.0.1:10922", broker_id=2)
    register_ok(ns, s2, T)
    resp = ns.member_group("EchoedCluster", "broker-a")
    assert_envelope(resp)
    # Java's createResponseCommand(null) leaves this remark on the SUCCESS reply (the
    # differential replay against the Java NameServer showed it).
    assert_code(resp, 0, "not set any response code", ext=None)
    v, bare, _ = parse_lenient(resp.body_text(), int_keys=True)
    assert bare == 2, f"ids must be bare numbers: {resp.body!r}"
    assert v == {
        "brokerMemberGroup": {
            "brokerAddrs": {0: MASTER.addr, 2: s2.addr},
            "brokerName": "broker-a",
            "cluster": "EchoedCluster",
        }
    }
    assert resp.body_text().startswith('{"brokerMemberGroup":{"brokerAddrs":{')

    resp = ns.member_group("c", "nob")
    assert_code(resp, 0, "not set any response code", ext=None,
                body=b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"nob","cluster":"c"}}')


def test_oneway_registration_is_processed_without_reply(ns):
    c = ns.conn
    ns.register_broker(MASTER, T, oneway=True)
    resp = c.request(RequestCode.GET_BROKER_CLUSTER_INFO)  # the first frame back is this reply
    assert_code(resp, 0)
    assert route_or_none(ns, "TopicTest") is not None
    assert c.inbox == []


@pytest.mark.nsrvd_config(returnOrderTopicConfigToBroker=False)
def test_no_reply_body_when_return_order_topic_config_is_off(ns):
    ns.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4")
    resp = register_ok(ns, MASTER, T)
    assert_code(resp, 0, None, ext={}, body=None)


def test_unregister_removes_by_address_not_id(ns):
    """proto/route.md §5 step 2: every entry whose value equals brokerAddr is removed, whatever the id."""
    register_ok(ns, MASTER, T)
    register_ok(ns, SLAVE, T)
    wrong_id = Broker(cluster=SLAVE.cluster, name=SLAVE.name, addr=SLAVE.addr, broker_id=7)
    assert_code(ns.unregister_broker(wrong_id), 0)
    wait_until(lambda: route_addrs(route_or_none(ns, "TopicTest")) == {"broker-a": {"0": MASTER.addr}}, scaled(2))
