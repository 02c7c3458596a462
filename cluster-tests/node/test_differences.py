"""Where cluster-tests/compat/DIFFERENCES.md excuses nsrvd from matching the Java NameServer,
nsrvd's own reply is pinned by a node test: the differential replay only checks that a
difference is *listed*, so without these a listed row would accept any reply at all.

PINNED maps every row id of DIFFERENCES.md to the node tests that pin nsrvd's side of it;
test_every_listed_difference_is_pinned fails when a row is added without a test, or when a
test named here disappears. The tests below pin the rows no other node test covered."""

import re
from pathlib import Path

from nsrv_check import assert_code, assert_envelope, register_ok
from nsrvd_proc import run_cli
from rmq import Broker, DataVersion, RequestCode, SerializeType, TopicConfig, parse_properties

DIFFERENCES = Path(__file__).resolve().parent.parent / "compat" / "DIFFERENCES.md"

# assert_envelope (nsrv_check.py) pins D1 (the reply's serialize type is the request's) and
# D19 (version 479) on every reply of every test that calls it.
ENVELOPE = "test_differences.py::test_reply_type_and_version_mirror_request"
PINNED = {
    "D1": [ENVELOPE],
    "D2": ["test_differences.py::test_binary_registration_reply_has_no_ext"],
    "D3": ["test_differences.py::test_config_keys_are_nsrvd_own"],
    "D4": ["test_cli.py::test_print_config_and_exit", "test_admin.py::test_get_namesrv_config"],
    "D5": ["test_differences.py::test_update_with_bad_value_is_refused_whole"],
    "D6": ["test_differences.py::test_update_with_bad_value_is_refused_whole"],
    "D7": ["test_register.py::test_undecodable_body_is_a_generic_error_without_ext"],
    "D8": ["test_register.py::test_compressed_body"],
    "D9": ["test_differences.py::test_compressed_body_labelled_false_registers"],
    "D10": ["test_differences.py::test_compressed_body_labelled_false_registers"],
    "D11": ["test_differences.py::test_compressed_body_labelled_false_registers"],
    "D12": ["test_differences.py::test_compressed_body_labelled_false_registers"],
    "D13": ["test_differences.py::test_compressed_body_labelled_false_registers"],
    "D14": ["test_differences.py::test_registration_without_broker_name_is_refused"],
    "D15": ["test_differences.py::test_registration_without_broker_name_is_refused"],
    "D16": ["test_differences.py::test_registration_without_broker_name_is_refused"],
    "D17": ["test_differences.py::test_registration_without_broker_name_is_refused"],
    "D18": ["test_admin.py::test_system_topic_list"],
    "D19": [ENVELOPE],
    "D20": ["test_route.py::test_unknown_topic_is_17_with_two_line_remark"],
    "D21": ["test_admin.py::test_unknown_code_is_3", "test_differences.py::test_unknown_code_from_4_9_client_is_3"],
    "D22": ["test_admin.py::test_update_blacklisted_key_is_rejected"],
    "D23": ["test_admin.py::test_update_blacklisted_key_is_rejected",
            "test_admin.py::test_configured_blacklist_entries_are_enforced"],
    "D24": ["test_admin.py::test_update_blacklisted_key_is_rejected"],
    "D25": ["test_register.py::test_query_data_version"],
    "D26": ["test_register.py::test_query_data_version"],
    "D27": ["test_register.py::test_query_data_version"],
    "D28": ["test_register.py::test_query_data_version"],
    "D29": ["test_register.py::test_single_topic_first_registration_is_rejected"],
    "D30": ["test_register.py::test_single_topic_first_registration_is_rejected"],
    "D31": ["test_register.py::test_single_topic_first_registration_is_rejected"],
    "D32": ["test_differences.py::test_single_topic_first_registration_routes_nothing"],
    "D33": ["test_differences.py::test_single_topic_first_registration_routes_nothing"],
    "D34": ["test_differences.py::test_single_topic_first_registration_routes_nothing"],
}

A = Broker(cluster="DefaultCluster", name="broker-a", addr="127.0.0.1:10911")


def test_every_listed_difference_is_pinned():
    rows = re.findall(r"^\| (D\d+) \|", DIFFERENCES.read_text(encoding="utf-8"), re.M)
    assert rows, f"no rows found in {DIFFERENCES}"
    unpinned = [r for r in rows if r not in PINNED]
    assert not unpinned, f"DIFFERENCES.md rows without a node test pinning nsrvd's reply: {unpinned}"
    stale = [r for r in PINNED if r not in rows]
    assert not stale, f"PINNED names rows DIFFERENCES.md no longer has: {stale}"
    # Every named test must still exist (a module-level "def test_...(" in that file).
    here = Path(__file__).resolve().parent
    missing = []
    for t in sorted({t for ts in PINNED.values() for t in ts}):
        module, name = t.split("::")
        text = (here / module).read_text(encoding="utf-8") if (here / module).is_file() else ""
        if not re.search(rf"^def {re.escape(name)}\(", text, re.M):
            missing.append(t)
    assert not missing, f"tests named in PINNED do not exist: {missing}"


def test_reply_type_and_version_mirror_request(ns):
    # D1: a binary (ROCKETMQ) request gets a binary reply, a JSON one a JSON reply.
    # D19: every reply says version 479, whatever the request said (here a 4.9.x client, 317).
    for st in (SerializeType.ROCKETMQ, SerializeType.JSON):
        req = ns.conn.build(RequestCode.GET_BROKER_CLUSTER_INFO, serialize_type=st, version=317)
        ns.conn.send(req)
        resp = ns.conn.recv_for(req.opaque)
        assert_envelope(resp, req)
        assert resp.serialize_type == st and resp.version == 479, resp


def test_binary_registration_reply_has_no_ext(ns):
    # D2: in a binary reply an empty ext map is no map (length 0).
    resp = ns.register_broker(A, [TopicConfig("TopicA", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)],
                              DataVersion(1, 1), serialize_type=SerializeType.ROCKETMQ)
    assert_envelope(resp, serialize_type=SerializeType.ROCKETMQ)
    assert resp.code == 0 and not resp.ext, resp


def test_config_keys_are_nsrvd_own(ns):
    # D3: nsrvd's own keys are there, Java's rocketmqHome is not.
    props = parse_properties(ns.get_config().body_text())
    for key in ("gossipEnable", "connOutputLimitBytes", "maxFrameLength", "logLevel", "statusPort"):
        assert key in props, f"{key} missing from GET_NAMESRV_CONFIG: {sorted(props)}"
    assert "rocketmqHome" not in props


def test_update_with_bad_value_is_refused_whole(ns):
    # D5/D6: one bad value refuses the whole update (Java: SUCCESS, ignored) and says why.
    before = ns.get_config().body_text()
    resp = ns.update_config("orderMessageEnable=true\nscanNotActiveBrokerInterval=abc\n")
    assert_envelope(resp)
    assert_code(resp, 1, "invalid value 'abc' for key 'scanNotActiveBrokerInterval': expected an integer in "
                "1..2147483647", ext=None, body=None)
    assert ns.get_config().body_text() == before, "a refused update changed the configuration"


def test_compressed_body_labelled_false_registers(ns):
    # D9-D13: a zlib body sent with compressed=false registers; the reply has the response
    # header ({}) and the order-config table, and the topic is routed.
    from rmq import register_broker_body_compressed, register_broker_ext

    assert ns.put_kv("ORDER_TOPIC_CONFIG", "TopicD", "broker-d:4").code == 0
    topics = [TopicConfig("TopicD", 4, 4, 6), TopicConfig("TopicD2", 4, 4, 6)]
    b = Broker(name="broker-d", addr="127.0.0.1:10941")
    body = register_broker_body_compressed(topics, DataVersion(1, 1), version=479)
    ext = register_broker_ext(cluster=b.cluster, broker_name=b.name, broker_addr=b.addr, body=body, compressed=False)
    resp = ns.conn.request(RequestCode.REGISTER_BROKER, ext, body, version=479)
    assert_envelope(resp)
    assert_code(resp, 0, None, ext={}, body=b'{"table":{"TopicD":"broker-d:4"}}')
    route = ns.get_route("TopicD")
    assert route.code == 0 and b"broker-d" in route.body, route


def test_registration_without_broker_name_is_refused(ns):
    # D14-D17: SYSTEM_ERROR naming the required fields, no body, and no null name anywhere.
    ext = {"brokerAddr": "127.0.0.1:10951", "clusterName": "DefaultCluster", "brokerId": "0"}
    resp = ns.conn.request(RequestCode.REGISTER_BROKER, ext, b"")
    assert_envelope(resp)
    assert_code(resp, 1, "register broker failed: brokerName, brokerAddr and clusterName are required", body=None)
    assert_code(ns.cluster_info(), 0, body=b'{"brokerAddrTable":{},"clusterAddrTable":{}}')
    assert_code(ns.system_topics(), 0, body=b'{"topicList":[]}')


def test_unknown_code_from_4_9_client_is_3(ns):
    # D21: 4.9.x sends no reply to an unknown code; nsrvd answers 3 to every client version.
    req = ns.conn.build(999, version=317)
    ns.conn.send(req)
    resp = ns.conn.recv_for(req.opaque)
    assert_envelope(resp, req)
    assert resp.code == 3, resp


def test_single_topic_first_registration_routes_nothing(ns):
    # D32-D34: after the refused single-topic first registration the topic has no route and
    # the cluster table holds broker-f without an address.
    b = Broker(name="broker-f", addr="127.0.0.1:10961")
    resp = ns.register_broker(b, [TopicConfig("TopicF", 4, 4, 6)], DataVersion(1, 1))
    assert_code(resp, 1, "register broker failed")
    route = ns.get_route("TopicF")
    assert route.code == 17, route
    info = ns.cluster_info()
    assert b"127.0.0.1:10961" not in (info.body or b""), info.body
    register_ok(ns, b, [TopicConfig("TopicF", 4, 4, 6), TopicConfig("TopicF2", 4, 4, 6)], DataVersion(2, 1))
    assert ns.get_route("TopicF").code == 0


def test_cli_exit_code_unchanged_by_differences(nsrvd_bin, tmp_path):
    # D4's printed default, through the CLI (exact exit code, no sanitizer report).
    cp = run_cli(nsrvd_bin, ["-p"], workdir=tmp_path)
    assert cp.returncode == 0
    assert "scanNotActiveBrokerInterval=10000" in cp.stdout.decode() + cp.stderr.decode()
