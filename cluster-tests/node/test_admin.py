"""Cluster info, topic lists, topic admin, namesrv config, unknown codes, parameterless requests
and JSON header leniency (proto/remoting.md §3, §6, proto/requests.md §1.3, §2.9, §2.11-§2.19, §3.3, §3.4)."""

import json
import signal
import struct

import pytest

from nsrv_check import assert_code, assert_envelope, register_ok, route_addrs, route_or_none, wait_until
from nsrvd_proc import scaled
from rmq import (
    ALL_REQUEST_CODES,
    Broker,
    DataVersion,
    NamesrvClient,
    RequestCode,
    SerializeType,
    TopicConfig,
    encode_frame,
    make_request,
    parse_lenient,
    parse_properties,
)

A = Broker(cluster="c1", name="broker-a", addr="127.0.0.1:10911")
B = Broker(cluster="c2", name="broker-b", addr="127.0.0.1:10912")
TA = [TopicConfig("T1", 4, 4, 6), TopicConfig("T2", 4, 4, 6)]
TB = [TopicConfig("T1", 4, 4, 6), TopicConfig("T3", 4, 4, 6)]


def topic_list(resp):
    assert_code(resp, 0, None, ext=None)
    v = json.loads(resp.body)
    assert list(v) == ["topicList"], resp.body
    return v["topicList"]


# ---------------------------------------------------------------- 106


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
def test_cluster_info_is_default_mode(nsrvd, connect, st):
    ns = NamesrvClient(connect(nsrvd, serialize_type=st))
    resp = ns.cluster_info()
    assert_envelope(resp, serialize_type=st)
    assert_code(resp, 0, None, ext=None)
    assert json.loads(resp.body) == {"brokerAddrTable": {}, "clusterAddrTable": {}}

    register_ok(ns, Broker(cluster="DefaultCluster", name="broker-a", addr="127.0.0.1:10911", zone="zone1"), TA)
    resp = ns.cluster_info()
    assert_code(
        resp,
        0,
        None,
        ext=None,
        body=b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster","enableActingMaster":false,"zoneName":"zone1"}},'
        b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}',
    )
    # Also for a new client version: no version switch here (proto/requests.md §2.9).
    resp = ns.cluster_info(version=479)
    assert parse_lenient(resp.body_text())[1] == 1


def test_cluster_info_two_clusters(ns):
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    register_ok(ns, Broker(cluster="c1", name="broker-a", addr="127.0.0.1:10921", broker_id=1), TA)
    v, bare, _ = parse_lenient(ns.cluster_info().body_text(), int_keys=True)
    assert bare == 3
    assert v["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: A.addr, 1: "127.0.0.1:10921"}
    assert v["brokerAddrTable"]["broker-b"]["cluster"] == "c2"
    assert v["clusterAddrTable"] == {"c1": ["broker-a"], "c2": ["broker-b"]}


# ---------------------------------------------------------------- 206


def test_all_topic_list(ns):
    assert topic_list(ns.all_topics()) == []
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    assert sorted(topic_list(ns.all_topics())) == ["T1", "T2", "T3"]


@pytest.mark.nsrvd_config(enableAllTopicList=False)
def test_all_topic_list_disabled(ns):
    resp = ns.all_topics()
    assert_envelope(resp)
    assert_code(resp, 1, "disable", ext=None, body=None)
    # 224 and 311-313 are gated by enableTopicList, not by enableAllTopicList.
    assert ns.topics_by_cluster("c1").code == 0


# ---------------------------------------------------------------- 216


def test_delete_topic_with_cluster_name(ns):
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    resp = ns.delete_topic("T1", "c1")
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=None)
    assert set(route_addrs(route_or_none(ns, "T1"))) == {"broker-b"}
    # Deleting the last QueueData removes the topic.
    assert_code(ns.delete_topic("T1", "c2"), 0)
    assert route_or_none(ns, "T1") is None
    assert "T1" not in topic_list(ns.all_topics())


def test_delete_topic_unknown_cluster_does_nothing(ns):
    register_ok(ns, A, TA)
    assert_code(ns.delete_topic("T1", "nope"), 0)
    assert route_or_none(ns, "T1") is not None


@pytest.mark.parametrize("cluster", [None, ""], ids=["no-clusterName", "empty-clusterName"])
def test_delete_topic_without_cluster_name(ns, cluster):
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    assert_code(ns.delete_topic("T1", cluster), 0, None, ext=None)
    assert route_or_none(ns, "T1") is None
    assert route_or_none(ns, "T2") is not None
    assert_code(ns.delete_topic("never-existed"), 0)


# ---------------------------------------------------------------- 217


def test_register_topic_in_namesrv(ns):
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    resp = ns.register_topic("NewT", [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 2, "writeQueueNums": 3,
                                      "topicSysFlag": 0}])
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=None)
    route = route_or_none(ns, "NewT")
    assert route["queueDatas"] == [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 2, "topicSysFlag": 0,
                                    "writeQueueNums": 3}]
    # Existing topic: put or replace per brokerName.
    assert_code(ns.register_topic("NewT", [{"brokerName": "broker-b", "perm": 4}]), 0)
    route = route_or_none(ns, "NewT")
    assert {q["brokerName"]: q["perm"] for q in route["queueDatas"]} == {"broker-a": 6, "broker-b": 4}


def test_register_topic_with_unknown_broker_does_nothing(ns):
    register_ok(ns, A, TA)
    resp = ns.register_topic("Ghost", [{"brokerName": "broker-a"}, {"brokerName": "broker-zzz"}])
    assert_code(resp, 0)
    assert route_or_none(ns, "Ghost") is None
    # Empty queueDatas, empty body: SUCCESS, nothing happens.
    assert_code(ns.register_topic("Ghost", []), 0)
    assert_code(ns.conn.request(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "Ghost"}), 0)
    assert route_or_none(ns, "Ghost") is None


def test_register_topic_existing_topic_partial_merge(ns):
    """proto/requests.md §2.13: for an existing topic, QueueDatas before the first unknown broker stay merged."""
    register_ok(ns, A, TA)
    register_ok(ns, Broker(cluster="c1", name="broker-c", addr="127.0.0.1:10913"), TA)
    ns.delete_topic("T1", None)
    register_ok(ns, A, TA, DataVersion(5, 5))  # re-create T1 on broker-a only
    assert set(route_addrs(route_or_none(ns, "T1"))) == {"broker-a"}
    assert_code(ns.register_topic("T1", [{"brokerName": "broker-c", "perm": 4}, {"brokerName": "zzz"}]), 0)
    assert {q["brokerName"] for q in route_or_none(ns, "T1")["queueDatas"]} == {"broker-a", "broker-c"}


# ---------------------------------------------------------------- 224


def test_topics_by_cluster(ns):
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    assert sorted(topic_list(ns.topics_by_cluster("c1"))) == ["T1", "T2"]
    assert sorted(topic_list(ns.topics_by_cluster("c2"))) == ["T1", "T3"]
    resp = ns.topics_by_cluster("unknown")
    assert_code(resp, 0, None, ext=None, body=b'{"topicList":[]}')
    # The key is "cluster", not "clusterName".
    resp = ns.conn.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"clusterName": "c1"})
    assert_code(resp, 0, body=b'{"topicList":[]}')


@pytest.mark.nsrvd_config(enableTopicList=False)
def test_topic_lists_disabled(ns):
    register_ok(ns, A, TA)
    for code, ext in ((224, {"cluster": "c1"}), (311, None), (312, None), (313, None)):
        resp = ns.conn.request(code, ext)
        assert_envelope(resp)
        assert_code(resp, 1, "disable", ext=None, body=None)
    # 206 and 304 are not gated by enableTopicList.
    assert ns.all_topics().code == 0
    assert ns.system_topics().code == 0


# ---------------------------------------------------------------- 304


def test_system_topic_list(ns):
    resp = ns.system_topics()
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=b'{"topicList":[]}')
    register_ok(ns, A, TA)
    register_ok(ns, B, TB)
    v = json.loads(ns.system_topics().body)
    assert sorted(v["topicList"]) == ["broker-a", "broker-b", "c1", "c2"]
    assert v["brokerAddr"] in (A.addr, B.addr)
    assert list(v) == ["brokerAddr", "topicList"]


# ---------------------------------------------------------------- 311 / 312 / 313


def test_unit_topic_lists(ns):
    topics = [
        TopicConfig("Plain", 1, 1, 6, topic_sys_flag=0),
        TopicConfig("Unit", 1, 1, 6, topic_sys_flag=1),
        TopicConfig("UnitSub", 1, 1, 6, topic_sys_flag=2),
        TopicConfig("Both", 1, 1, 6, topic_sys_flag=3),
    ]
    register_ok(ns, A, topics)
    assert sorted(topic_list(ns.unit_topics(311))) == ["Both", "Unit"]
    assert sorted(topic_list(ns.unit_topics(312))) == ["Both", "UnitSub"]
    assert sorted(topic_list(ns.unit_topics(313))) == ["UnitSub"]


# ---------------------------------------------------------------- 318 / 319


DEFAULTS = {
    "clientRequestThreadPoolNums": "8",
    "clientRequestThreadPoolQueueCapacity": "50000",
    "clusterTest": "false",
    "configBlackList": "configBlackList;configStorePath;kvConfigPath",
    "defaultThreadPoolNums": "16",
    "defaultThreadPoolQueueCapacity": "10000",
    "deleteTopicWithBrokerRegistration": "false",
    "enableAllTopicList": "true",
    "enableControllerInNamesrv": "false",
    "enableShutdownGracefully": "false",
    "enableTopicList": "true",
    "needWaitForService": "false",
    "notifyMinBrokerIdChanged": "false",
    "orderMessageEnable": "false",
    "productEnvName": "center",
    "returnOrderTopicConfigToBroker": "true",
    "scanNotActiveBrokerInterval": "10000",  # project decision: the 4.9.x period (Java 5.x: 5000)
    "serverAsyncSemaphoreValue": "64",
    "serverCallbackExecutorThreads": "0",
    "serverChannelMaxIdleTimeSeconds": "120",
    "serverNettyWorkerGroupEnable": "true",
    "serverOnewaySemaphoreValue": "256",
    "serverPooledByteBufAllocatorEnable": "true",
    "serverSelectorThreads": "3",
    "serverSocketBacklog": "1024",
    "serverSocketRcvBufSize": "0",
    "serverSocketSndBufSize": "0",
    "serverWorkerThreads": "8",
    "supportActingMaster": "false",
    "unRegisterBrokerQueueCapacity": "3000",
    "useEpollNativeSelector": "false",
    "waitSecondsForService": "45",
    "writeBufferHighWaterMark": "0",
    "writeBufferLowWaterMark": "0",
}


def get_config(ns):
    resp = ns.get_config()
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None)
    text = resp.body_text()
    assert text, "GET_NAMESRV_CONFIG must always send a body"
    return text


def test_get_namesrv_config(nsrvd, ns):
    text = get_config(ns)
    lines = text.splitlines()
    assert text.endswith("\n")
    keys = [ln.split("=", 1)[0] for ln in lines]
    assert all("=" in ln for ln in lines), lines
    assert keys == sorted(keys), "lines must be sorted by key"
    props = dict(ln.split("=", 1) for ln in lines)
    assert props["listenPort"] == str(nsrvd.port)
    assert props["bindAddress"] == "127.0.0.1"
    assert props["kvConfigPath"] == str(nsrvd.kv_path)
    assert props["configStorePath"] == str(nsrvd.config_path)
    assert props["shutdownWaitTimeSeconds"] == "3"
    missing = {k for k in DEFAULTS if k not in props}
    assert not missing, f"keys missing from GET_NAMESRV_CONFIG: {sorted(missing)}"
    wrong = {k: (props[k], v) for k, v in DEFAULTS.items() if props[k] != v}
    assert not wrong, f"default values differ (got, want): {wrong}"


def test_update_namesrv_config_takes_effect_and_persists(nsrvd, ns):
    original = nsrvd.config_path.read_text()
    register_ok(ns, A, TA)
    ns.put_kv("ORDER_TOPIC_CONFIG", "T1", "broker-a:4")
    assert "orderTopicConf" not in json.loads(ns.get_route("T1").body)

    resp = ns.update_config("orderMessageEnable=true\n")
    assert_envelope(resp)
    assert_code(resp, 0, None, ext=None, body=None)
    assert json.loads(ns.get_route("T1").body)["orderTopicConf"] == "broker-a:4"

    text = get_config(ns)
    assert parse_properties(text)["orderMessageEnable"] == "true"
    # Persisted to configStorePath (= the -c file): the same sorted text, with a .bak.
    stored = nsrvd.config_path.read_text()
    assert parse_properties(stored) == parse_properties(text)
    assert stored == text
    bak = nsrvd.config_path.with_name(nsrvd.config_path.name + ".bak")
    assert bak.exists(), "a .bak of the previous config file must be written"
    assert bak.read_text() == original


def test_sighup_reload_shows_in_config_and_survives_update(nsrvd, ns):
    """What a SIGHUP applies live is what GET_NAMESRV_CONFIG shows and what a later
    UPDATE_NAMESRV_CONFIG writes back to the file; a part that failed keeps showing its old values."""
    with open(nsrvd.config_path, "a", encoding="utf-8") as f:
        f.write("\nlogLevel=info\nadminAllowList=127.0.0.0/8\nadminAclEnable=true\n")
    nsrvd.signal(signal.SIGHUP)
    wait_until(lambda: "SIGHUP: keeping the running access rules" in nsrvd.output(), scaled(10),
               msg="the ACL part must fail: adminAclEnable=true without adminAclFile")
    props = parse_properties(get_config(ns))
    assert props["logLevel"] == "info", "the log level applied, so it shows"
    assert props["adminAllowList"] == "" and props["adminAclEnable"] == "false", "the ACL part kept its values"

    with open(nsrvd.config_path, "a", encoding="utf-8") as f:
        f.write("adminAclEnable=false\n")
    nsrvd.signal(signal.SIGHUP)
    wait_until(lambda: "SIGHUP: reloaded" in nsrvd.output(), scaled(10), msg="no reload line")
    props = parse_properties(get_config(ns))
    assert props["adminAllowList"] == "127.0.0.0/8" and props["logLevel"] == "info"

    assert_code(ns.update_config("orderMessageEnable=true\n"), 0, None, ext=None, body=None)
    stored = parse_properties(nsrvd.config_path.read_text())
    assert stored["adminAllowList"] == "127.0.0.0/8" and stored["logLevel"] == "info", (
        "UPDATE_NAMESRV_CONFIG must not write back the values from before the SIGHUP"
    )
    assert stored["orderMessageEnable"] == "true"


def test_update_topic_list_switches(ns):
    assert_code(ns.update_config("enableAllTopicList=false\nenableTopicList=false"), 0)
    assert_code(ns.all_topics(), 1, "disable")
    assert_code(ns.topics_by_cluster("c1"), 1, "disable")
    assert_code(ns.update_config("enableAllTopicList=true\nenableTopicList=true"), 0)
    assert ns.all_topics().code == 0 and ns.topics_by_cluster("c1").code == 0


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"])
def test_update_blacklisted_key_is_rejected(nsrvd, ns, key):
    before = get_config(ns)
    file_before = nsrvd.config_path.read_text()
    resp = ns.update_config(f"orderMessageEnable=true\n{key}=/tmp/evil\n")
    assert_envelope(resp)
    assert_code(resp, 16, "Can not update config in black list.", ext=None, body=None)
    assert get_config(ns) == before, "nothing may be applied when a key is blacklisted"
    assert nsrvd.config_path.read_text() == file_before


@pytest.mark.nsrvd_config(configBlackList="configBlackList;configStorePath;kvConfigPath;enableTopicList")
def test_configured_blacklist_entries_are_enforced(ns):
    assert_code(ns.update_config("enableTopicList=false"), 16, "Can not update config in black list.")
    assert ns.topics_by_cluster("c1").code == 0
    # rocketmqHome is always blacklisted, configured list or not.
    assert_code(ns.update_config("rocketmqHome=/x"), 16, "Can not update config in black list.")


def test_update_with_no_body_is_noop_success(ns):
    before = get_config(ns)
    resp = ns.update_config(None)
    assert_code(resp, 0, None, ext=None)
    assert get_config(ns) == before


def test_config_store_path_is_replaced_by_c_file(nsrvd_factory, tmp_path, connect):
    """proto/requests.md §5.3: configStorePath is set to the -c file, so an update rewrites the operator's file."""
    other = tmp_path / "elsewhere.properties"
    srv = nsrvd_factory({"configStorePath": str(other)})
    ns = NamesrvClient(connect(srv))
    props = parse_properties(get_config(ns))
    assert props["configStorePath"] == str(srv.config_path)
    assert_code(ns.update_config("orderMessageEnable=true"), 0)
    assert parse_properties(srv.config_path.read_text())["orderMessageEnable"] == "true"
    assert not other.exists()


# ---------------------------------------------------------------- unknown codes, no ext


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
@pytest.mark.parametrize("code", [999, 0, 905, 10, 32767, -5])
def test_unknown_code_is_3(nsrvd, connect, st, code):
    c = connect(nsrvd, serialize_type=st)
    req = c.build(code, {"x": "y"})
    c.send(req)
    resp = c.recv_for(req.opaque)
    assert_envelope(resp, req)
    assert_code(resp, 3, f" request type {code} not supported", ext=None, body=None)


@pytest.mark.parametrize("code", [106, 206, 304, 311, 312, 313, 318, 319])
def test_parameterless_requests_without_ext_fields(ns, code):
    req = ns.conn.build(code, None)
    assert req.ext is None
    raw = encode_frame(req)
    assert b"extFields" not in raw
    ns.conn.send_raw(raw)
    resp = ns.conn.recv_for(req.opaque)
    assert_envelope(resp, req)
    assert_code(resp, 0, None, ext=None)
    if code == 318:
        assert resp.body is None  # no body: a no-op
    else:
        assert resp.body, f"code {code} must answer with a body"


def test_every_request_code_is_answered(ns):
    """One request of each proto/requests.md §1.1 code with plausible ext fields: all answered, none with code 3."""
    register_ok(ns, A, TA)
    ext_for = {
        100: {"namespace": "n", "key": "k", "value": "v"},
        101: {"namespace": "n", "key": "k"},
        102: {"namespace": "n", "key": "k"},
        103: None,
        104: A.unregister_ext(),
        105: {"topic": "T1"},
        205: {"brokerName": "broker-a"},
        216: {"topic": "T9"},
        217: {"topic": "T9"},
        219: {"namespace": "n"},
        224: {"cluster": "c1"},
        322: A.unregister_ext(),
        327: {"brokerName": "broker-a"},
        901: {"clusterName": "c1", "brokerName": "broker-a"},
        904: A.heartbeat_ext(),
    }
    assert len(ALL_REQUEST_CODES) == 23
    for code in ALL_REQUEST_CODES:
        if code == 103:
            resp = ns.register_broker(A, TA)
        else:
            resp = ns.conn.request(code, ext_for.get(code))
        assert_envelope(resp)
        assert resp.code != 3, f"code {code} not supported: {resp!r}"


# ---------------------------------------------------------------- JSON header leniency


def _raw_json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


def test_json_header_any_order_whitespace_unknown_keys_numeric_ext(ns):
    ns.put_kv("ns1", "7", "seven")
    hdr = (
        b' { "version" : 479 , "extFields" : { "key" : 7 , "namespace" : "ns1", "nullish": null } ,'
        b' "someFutureKey" : [1, {"a": 2}], "opaque" : 4242, "code" : 101, "language" : "GO", "flag" : 0 } '
    )
    ns.conn.send_raw(_raw_json_frame(hdr))
    resp = ns.conn.recv_for(4242)
    assert_envelope(resp)
    assert_code(resp, 0, ext={"value": "seven"})


def test_json_header_missing_opaque_is_zero_and_defaults(ns):
    ns.conn.send_raw(_raw_json_frame(b'{"code":106}'))
    resp = ns.conn.recv()
    assert resp.opaque == 0
    assert_envelope(resp)
    assert_code(resp, 0)
    # version defaults to 0 -> route in default mode.
    register_ok(ns, A, TA)
    ns.conn.send_raw(_raw_json_frame(b'{"code":105,"opaque":5,"extFields":{"topic":"T1"}}'))
    resp = ns.conn.recv_for(5)
    assert parse_lenient(resp.body_text())[1] > 0


@pytest.mark.parametrize("language", [b'"FOO"', b"3", b'"PYTHON"'])
def test_json_header_odd_language_still_answered(ns, language):
    ns.conn.send_raw(_raw_json_frame(b'{"code":106,"opaque":9,"language":' + language + b',"version":479}'))
    resp = ns.conn.recv_for(9)
    assert_envelope(resp)
    assert resp.code == 0


def test_binary_request_with_remark_and_unknown_language(nsrvd, connect):
    c = connect(nsrvd, serialize_type=SerializeType.ROCKETMQ)
    req = make_request(106, None, opaque=77, remark="hello", language=200, serialize_type=SerializeType.ROCKETMQ)
    c.send(req)
    resp = c.recv_for(77)
    assert_envelope(resp, req)
    assert resp.code == 0


def test_update_with_unparsable_properties(ns):
    """java.util.Properties.load rejects a malformed \\uXXXX escape (proto/requests.md §2.18)."""
    before = get_config(ns)
    resp = ns.update_config("orderMessageEnable=true\nbad=\\u12G4\n")
    assert_envelope(resp)
    assert_code(resp, 1, "string2Properties error", ext=None)
    assert get_config(ns) == before


def test_update_unknown_key_is_not_added(ns):
    """Configuration.update merges only keys that already exist (proto/requests.md §2.18 step 1)."""
    assert_code(ns.update_config("brandNewKey=1\nwaitSecondsForService=7"), 0)
    props = parse_properties(get_config(ns))
    assert "brandNewKey" not in props
    assert props["waitSecondsForService"] == "7"


def test_deleted_topic_comes_back_on_same_data_version(ns):
    """A topic missing from topicQueueTable counts as changed even with an unchanged
    DataVersion (proto/route.md §3 step 10b)."""
    register_ok(ns, A, TA, DataVersion(1, 1))
    assert_code(ns.delete_topic("T1"), 0)
    assert route_or_none(ns, "T1") is None
    register_ok(ns, A, TA, DataVersion(1, 1))
    assert route_or_none(ns, "T1") is not None


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
@pytest.mark.parametrize("opaque", [0, -1, -2147483648, 2147483647])
def test_opaque_extremes_echoed(nsrvd, connect, st, opaque):
    c = connect(nsrvd, serialize_type=st)
    req = c.build(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=opaque)
    c.send(req)
    resp = c.recv()
    assert_envelope(resp, req)
    assert resp.opaque == opaque


def test_json_header_numbers_as_strings_and_escaped_keys(ns):
    """fastjson accepts "106" for an int and \\uXXXX escapes in keys (proto/remoting.md §3, proto/requests.md §3.7)."""
    ns.conn.send_raw(_raw_json_frame(b'{"code":"106","opaque":"11","version":"479"}'))
    resp = ns.conn.recv_for(11)
    assert_envelope(resp)
    assert_code(resp, 0)
    ns.conn.send_raw(_raw_json_frame(b'{"\\u0063ode":106,"opaque":12}'))
    assert_code(ns.conn.recv_for(12), 0)


def test_topic_not_exist_remark_keeps_unicode_and_control_chars(ns):
    topic = '主题/"x\n'
    resp = ns.get_route(topic)
    assert_code(resp, 17, "No topic route info in name server for the topic: " + topic
                + "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")


def test_binary_empty_string_ext_is_null(nsrvd, connect):
    """proto/remoting.md §4: an empty string in a binary header decodes to null."""
    ns = NamesrvClient(connect(nsrvd, serialize_type=SerializeType.ROCKETMQ))
    resp = ns.conn.request(RequestCode.PUT_KV_CONFIG, {"namespace": "a", "key": "", "value": "v"})
    assert_code(resp, 1, "namespace or key is null")
    resp = ns.get_kv("a", "")
    assert_code(resp, 22, "No config item, Namespace: a Key: null")


def test_rpc_header_extra_fields_are_ignored(ns):
    register_ok(ns, A, TA)
    resp = ns.get_route("T1", {"ns": "x", "nsd": "y", "bname": "z", "oway": "true", "lo": "1",
                               "AccessKey": "ak", "Signature": "sig"})
    assert_code(resp, 0)
