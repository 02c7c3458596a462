"""Scenario 8: differential replay. The same request sequence (every request code, JSON and
ROCKETMQ headers, old and new client versions, error cases, oneway, connection close) goes to a
fresh Java NameServer and a fresh nsrvd in lockstep; each pair of responses is compared on:

  reply    one answered, the other did not (within 2 s)
  code, remark, ext, flag, language, version, type (serialize type of the reply)
  body     parsed (order-insensitive) equality
  bytes    byte-for-byte equality once maps and lists are put in Java's order (fastjson.py)
  config   GET_NAMESRV_CONFIG: the properties both have, and which keys only one has

Every difference must be listed in ../DIFFERENCES.md (table rows "| D<n> | case glob | aspect |
vs | reason |") with the reason it is deliberate; an unlisted difference fails the cell.
Run against Java 5.4.0 and 5.3.3 (every step) and Java 4.9.7 (steps that exist in 4.9.x).
"""

from __future__ import annotations

import fnmatch
import json
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from common import COMPAT, FAIL, KIND_OF_VERSION, PASS, RESULTS, SKIP, VERSIONS, cfg, log, rmq  # puts cluster-tests/lib on sys.path
import fastjson  # noqa: E402
from nsquery import canon, strip_5x
from servers import NameServer, make_nameserver

RC = rmq.RequestCode
JSON_T, BIN_T = rmq.SerializeType.JSON, rmq.SerializeType.ROCKETMQ
TC = rmq.TopicConfig
DV = rmq.DataVersion

# Fake broker addresses: nothing listens there and no NameServer connects to a broker. On
# 127.0.0.2, so that they can never be mistaken for the NameServer's own 127.0.0.1 address.
BA = "127.0.0.2:30911"  # broker-a master
BA1 = "127.0.0.2:30921"  # broker-a slave
BB = "127.0.0.2:31911"  # broker-b (4.9.x-style)
BC = "127.0.0.2:32911"  # broker-c (compressed, 4.9.x-style)
BD = "127.0.0.2:33911"  # broker-d (compressed, 5.x-style, labelled compressed=false)
BZ = "127.0.0.2:34911"  # broker-z (zone)
BX = "127.0.0.2:35911"  # broker-x (registered on a connection that is then closed)


@dataclass
class Step:
    name: str
    code: int
    ext: Optional[Dict[str, Any]] = None
    body: Optional[bytes] = None
    version: int = rmq.VERSION_V5_3_3
    language: Any = "JAVA"
    stype: int = JSON_T
    oneway: bool = False
    conn: str = "c"
    v5_only: bool = False  # not sent to a 4.9.x NameServer (code or feature it does not have)
    sleep: float = 0.0  # after the step (5.x unregisters asynchronously)
    action: Optional[str] = None  # "close:<conn>" instead of a request
    raw: Optional[bytes] = None  # send these bytes as they are (then expect a reply or a close)


def _reg(name: str, broker: str, addr: str, topics, *, bid: int = 0, cluster: str = "DefaultCluster",
         dv: Optional[DV] = None, version: int = rmq.VERSION_V5_3_3, v4: bool = False, compressed: bool = False,
         compressed_flag: Optional[bool] = None, crc: Optional[int] = None, acting: Optional[bool] = False,
         zone: Optional[str] = None, body: Optional[bytes] = None, conn: str = "b", drop: Tuple[str, ...] = (),
         stype: int = JSON_T, **kw) -> Step:
    dv = dv or DV(counter=1, timestamp=1700000000000, state_version=None if v4 else 0)
    if body is None:
        if compressed:
            body = rmq.register_broker_body_compressed(list(topics), dv, version=version)
        else:
            body = rmq.register_broker_body_json(topics, dv, v4=v4)
    ext = rmq.register_broker_ext(cluster=cluster, broker_name=broker, broker_addr=addr, broker_id=bid, body=body,
                                  compressed=compressed if compressed_flag is None else compressed_flag,
                                  enable_acting_master=None if v4 else acting, zone_name=zone, crc=crc)
    for k in drop:
        ext.pop(k, None)
    return Step(name, RC.REGISTER_BROKER, ext, body, version=version, conn=conn, stype=stype, **kw)


def _t(name: str, r: int = 4, w: int = 4, perm: int = 6, flag: int = 0, v4: bool = False) -> TC:
    return TC(name, r, w, perm, flag, attributes=None if v4 else {})


def _unreg(name: str, broker: str, addr: str, bid: int = 0, cluster: str = "DefaultCluster", **kw) -> Step:
    return Step(name, RC.UNREGISTER_BROKER, {"brokerAddr": addr, "brokerId": str(bid), "brokerName": broker,
                                             "clusterName": cluster}, sleep=0.5, **kw)


def _route(name: str, topic: str, version: int = rmq.VERSION_V5_3_3, **kw) -> Step:
    ext = {"topic": topic}
    ext.update(kw.pop("extra", {}))
    return Step(name, RC.GET_ROUTEINFO_BY_TOPIC, ext, version=version, **kw)


def steps() -> List[Step]:
    S: List[Step] = []
    # ---- empty NameServer -----------------------------------------------------------------
    S += [
        Step("empty/cluster-info", RC.GET_BROKER_CLUSTER_INFO),
        Step("empty/all-topics", RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        _route("empty/route-unknown-v479", "NoSuchTopic"),
        _route("empty/route-unknown-v317-go", "NoSuchTopic", 317, language="GO"),
        _route("empty/route-unknown-binary", "NoSuchTopic", stype=BIN_T),
        Step("empty/get-kv-unknown", RC.GET_KV_CONFIG, {"namespace": "NS_X", "key": "k"}),
        Step("empty/kvlist-unknown", RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS_X"}),
        Step("empty/topics-by-cluster-unknown", RC.GET_TOPICS_BY_CLUSTER, {"cluster": "NoCluster"}),
        Step("empty/system-topics", RC.GET_SYSTEM_TOPIC_LIST_FROM_NS),
        Step("empty/unit-topics", RC.GET_UNIT_TOPIC_LIST),
        Step("empty/has-unit-sub", RC.GET_HAS_UNIT_SUB_TOPIC_LIST),
        Step("empty/has-unit-sub-ununit", RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST),
        Step("empty/get-config", RC.GET_NAMESRV_CONFIG),
        Step("empty/unknown-code-999", 999),
        Step("empty/unknown-code-999-binary", 999, stype=BIN_T),
        Step("empty/query-data-version-unknown", RC.QUERY_DATA_VERSION,
             {"brokerName": "nob", "brokerAddr": "1.1.1.1:1", "clusterName": "c", "brokerId": "0"},
             DV(1, 1, 0).encode()),
        Step("empty/heartbeat-unknown", RC.BROKER_HEARTBEAT,
             {"clusterName": "c", "brokerAddr": "1.1.1.1:1", "brokerName": "nob"}, v5_only=True),
        Step("empty/member-group-unknown", RC.GET_BROKER_MEMBER_GROUP, {"clusterName": "c", "brokerName": "nob"},
             v5_only=True),
        _unreg("empty/unregister-unknown", "nob", "1.1.1.1:1"),
        Step("empty/delete-topic-unknown", RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "NoSuchTopic"}),
        Step("empty/wipe-unknown", RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nob"}),
        Step("empty/add-unknown", RC.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "nob"}),
        Step("empty/register-topic-no-broker", RC.REGISTER_TOPIC_IN_NAMESRV, {"topic": "T217"},
             rmq.topic_route_body_for_register("T217", [{"brokerName": "nob"}]), v5_only=True),
        Step("empty/route-after-217", RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "T217"}),
        Step("empty/no-ext-route", RC.GET_ROUTEINFO_BY_TOPIC, None),
    ]
    # ---- KV config --------------------------------------------------------------------------
    S += [
        Step("kv/put", RC.PUT_KV_CONFIG, {"namespace": "NS1", "key": "k1", "value": "v1"}),
        Step("kv/get", RC.GET_KV_CONFIG, {"namespace": "NS1", "key": "k1"}),
        Step("kv/put-overwrite", RC.PUT_KV_CONFIG, {"namespace": "NS1", "key": "k1", "value": "v1b"}),
        Step("kv/put-unicode", RC.PUT_KV_CONFIG, {"namespace": "NS1", "key": "k2", "value": "värde/中\"q"}),
        Step("kv/get-binary", RC.GET_KV_CONFIG, {"namespace": "NS1", "key": "k1"}, stype=BIN_T),
        Step("kv/list", RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS1"}),
        Step("kv/delete", RC.DELETE_KV_CONFIG, {"namespace": "NS1", "key": "k1"}),
        Step("kv/get-deleted", RC.GET_KV_CONFIG, {"namespace": "NS1", "key": "k1"}),
        Step("kv/delete-again", RC.DELETE_KV_CONFIG, {"namespace": "NS1", "key": "k1"}),
        Step("kv/list-after-delete", RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS1"}),
        Step("kv/put-empty-value-binary", RC.PUT_KV_CONFIG, {"namespace": "NS1", "key": "k3", "value": ""},
             stype=BIN_T),
        Step("kv/get-empty-value", RC.GET_KV_CONFIG, {"namespace": "NS1", "key": "k3"}),
        Step("kv/list-with-empty-value", RC.GET_KVLIST_BY_NAMESPACE, {"namespace": "NS1"}),
        Step("kv/put-missing-key", RC.PUT_KV_CONFIG, {"namespace": "NS1", "value": "v"}),
        Step("kv/put-no-ext", RC.PUT_KV_CONFIG, None),
        Step("kv/order-conf", RC.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA",
                                                 "value": "broker-a:4"}),
    ]
    # ---- registrations ------------------------------------------------------------------------
    ta = [_t("TopicA"), _t("TopicShared", 8, 8), _t("TopicUnit", flag=1), _t("TopicUnitSub", flag=2),
          _t("TopicBoth", flag=3), _t("主题/x", 2, 2)]
    S += [
        _reg("reg/master-a-v479", "broker-a", BA, ta),
        _reg("reg/master-a-again-same-version", "broker-a", BA, ta),
        _reg("reg/slave-a", "broker-a", BA1, ta, bid=1),
        _reg("reg/broker-b-v407-json", "broker-b", BB, [_t("TopicB", v4=True), _t("TopicShared", 4, 4, v4=True)],
             cluster="C2", version=rmq.VERSION_V4_9_7, v4=True),
        _reg("reg/broker-c-v407-compressed", "broker-c", BC, [_t("TopicC", 3, 5, v4=True), _t("TopicC2", v4=True)],
             cluster="C2", version=rmq.VERSION_V4_9_7, v4=True, compressed=True),
        _reg("reg/crc-mismatch", "broker-e", "127.0.0.2:36911", [_t("TopicE"), _t("TopicE2")], crc=12345),
        _reg("reg/bad-body", "broker-h", "127.0.0.2:39911", [], body=b"{not json"),
        _reg("reg/no-body", "broker-i", "127.0.0.2:40911", [], body=b""),
        _reg("reg/broker-m-5x-compressed-labelled-true", "broker-m", "127.0.0.2:42911",
             [_t("TopicM", 2, 3), _t("TopicM2")], compressed=True, v5_only=True),
        _reg("reg/broker-s-static-topic", "broker-s", "127.0.0.2:43911", [_t("TopicS", 2, 2), _t("TopicS2")],
             v5_only=True, body=rmq.register_broker_body_json(
                 [_t("TopicS", 2, 2), _t("TopicS2")], DV(1, 1700000000000, 0),
                 mapping_infos=[rmq.topic_queue_mapping_info("TopicS", "broker-s", total_queues=4, epoch=2,
                                                             curr_id_map={0: 0, 1: 2})])),
        _reg("reg/zone", "broker-z", BZ, [_t("TopicZ"), _t("TopicA")], zone="zone1", v5_only=True),
        # what a 5.4.0 broker sends: its own version (493, V5_4_0) in the request header
        _reg("reg/broker-v-version-493", "broker-v", "127.0.0.2:44911", [_t("TopicV"), _t("TopicV2")], version=493),
        _reg("reg/binary-header", "broker-k", "127.0.0.2:41911", [_t("TopicK"), _t("TopicK2")], stype=BIN_T),
        _reg("reg/on-closing-conn", "broker-x", BX, [_t("TopicX"), _t("TopicX2")], conn="x"),
    ]
    # ---- queries on the registered state ---------------------------------------------------
    for v, tag in ((rmq.VERSION_V5_3_3, "v479"), (317, "v317"), (121, "v121"), (0, "v0"), (401, "v401"),
                   (400, "v400"), (493, "v493")):
        S.append(_route(f"route/TopicA-{tag}", "TopicA", v))
    S.append(_route("route/TopicV-v493", "TopicV", 493))
    S += [
        _route("route/TopicA-v317-acceptStandardJsonOnly", "TopicA", 317, extra={"acceptStandardJsonOnly": "true"}),
        _route("route/TopicA-binary-v479", "TopicA", stype=BIN_T),
        _route("route/TopicA-binary-v317", "TopicA", 317, stype=BIN_T),
        _route("route/TopicShared-v479", "TopicShared"),
        _route("route/TopicShared-v317", "TopicShared", 317),
        _route("route/TopicC-compressed-v479", "TopicC"),
        _route("route/TopicM-5x-compressed", "TopicM", v5_only=True),
        _route("route/TopicS-static-v479", "TopicS", v5_only=True),
        _route("route/TopicS-static-v317", "TopicS", 317, v5_only=True),
        _route("route/unicode-v479", "主题/x"),
        _route("route/unicode-v317", "主题/x", 317),
        _route("route/TopicZ-zone-mode", "TopicA", extra={"__ZONE_MODE": "true", "__ZONE_NAME": "zone1"},
               v5_only=True),
        Step("query/cluster-info", RC.GET_BROKER_CLUSTER_INFO),
        Step("query/cluster-info-binary", RC.GET_BROKER_CLUSTER_INFO, stype=BIN_T),
        Step("query/all-topics", RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        Step("query/topics-by-cluster", RC.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}),
        Step("query/topics-by-cluster-C2", RC.GET_TOPICS_BY_CLUSTER, {"cluster": "C2"}),
        Step("query/system-topics", RC.GET_SYSTEM_TOPIC_LIST_FROM_NS),
        Step("query/unit-topics", RC.GET_UNIT_TOPIC_LIST),
        Step("query/has-unit-sub", RC.GET_HAS_UNIT_SUB_TOPIC_LIST),
        Step("query/has-unit-sub-ununit", RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST),
        Step("query/data-version-same", RC.QUERY_DATA_VERSION,
             {"brokerName": "broker-a", "brokerAddr": BA, "clusterName": "DefaultCluster", "brokerId": "0"},
             DV(1, 1700000000000, 0).encode()),
        Step("query/data-version-changed", RC.QUERY_DATA_VERSION,
             {"brokerName": "broker-a", "brokerAddr": BA, "clusterName": "DefaultCluster", "brokerId": "0"},
             DV(2, 1700000000001, 0).encode()),
        Step("query/data-version-no-body", RC.QUERY_DATA_VERSION,
             {"brokerName": "broker-a", "brokerAddr": BA, "clusterName": "DefaultCluster", "brokerId": "0"}),
        Step("query/heartbeat", RC.BROKER_HEARTBEAT,
             {"clusterName": "DefaultCluster", "brokerAddr": BA, "brokerName": "broker-a"}, v5_only=True),
        Step("query/member-group", RC.GET_BROKER_MEMBER_GROUP, {"clusterName": "DefaultCluster",
                                                                 "brokerName": "broker-a"}, v5_only=True),
        Step("oneway/route", RC.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, oneway=True),
        Step("oneway/unknown-code", 999, oneway=True),
        Step("oneway/heartbeat", RC.BROKER_HEARTBEAT,
             {"clusterName": "DefaultCluster", "brokerAddr": BA, "brokerName": "broker-a"}, oneway=True,
             v5_only=True),
    ]
    # ---- admin changes -------------------------------------------------------------------------
    S += [
        Step("perm/wipe-broker-a", RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
        _route("perm/route-after-wipe", "TopicShared"),
        Step("perm/wipe-again", RC.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
        Step("perm/add-broker-a", RC.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
        _route("perm/route-after-add", "TopicShared"),
        _reg("perm/re-register-same-version", "broker-a", BA, ta),
        _route("perm/route-after-reregister", "TopicShared"),
        Step("t217/register-topic", RC.REGISTER_TOPIC_IN_NAMESRV, {"topic": "T217b"},
             rmq.topic_route_body_for_register("T217b", [{"brokerName": "broker-a", "readQueueNums": 2,
                                                           "writeQueueNums": 2}]), v5_only=True),
        _route("t217/route", "T217b", v5_only=True),
        Step("delete/topic-in-cluster", RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicShared",
                                                                     "clusterName": "C2"}),
        _route("delete/route-after-cluster-delete", "TopicShared"),
        Step("delete/topic-other-cluster", RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicShared",
                                                                        "clusterName": "NoCluster"}),
        Step("delete/topic", RC.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicShared"}),
        _route("delete/route-after-delete", "TopicShared"),
    ]
    # ---- NameServer config ----------------------------------------------------------------------
    S += [
        Step("config/update-orderMessageEnable", RC.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n"),
        _route("config/route-with-order-conf-v479", "TopicA"),
        _route("config/route-with-order-conf-v317", "TopicA", 317),
        Step("config/update-blacklisted-kvConfigPath", RC.UPDATE_NAMESRV_CONFIG, None,
             b"kvConfigPath=/tmp/nsrvd-compat-evil\n"),
        Step("config/update-blacklisted-configStorePath", RC.UPDATE_NAMESRV_CONFIG, None,
             b"configStorePath=/tmp/nsrvd-compat-evil\n"),
        Step("config/update-blacklisted-configBlackList", RC.UPDATE_NAMESRV_CONFIG, None, b"configBlackList=x\n"),
        Step("config/update-rocketmqHome", RC.UPDATE_NAMESRV_CONFIG, None, b"rocketmqHome=/tmp/x\n"),
        Step("config/update-unknown-key", RC.UPDATE_NAMESRV_CONFIG, None, b"noSuchKey=1\n"),
        Step("config/update-no-body", RC.UPDATE_NAMESRV_CONFIG),
        Step("config/update-bad-value", RC.UPDATE_NAMESRV_CONFIG, None, b"scanNotActiveBrokerInterval=abc\n"),
        Step("config/get", RC.GET_NAMESRV_CONFIG),
        Step("config/update-back", RC.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=false\n"),
    ]
    # ---- unregistration and connection close --------------------------------------------------
    S += [
        _unreg("unreg/slave-a", "broker-a", BA1, bid=1),
        _route("unreg/route-after-slave", "TopicA"),
        Step("close/cluster-before", RC.GET_BROKER_CLUSTER_INFO),
        Step("close/x", 0, action="close:x", sleep=1.5),
        Step("close/cluster-after", RC.GET_BROKER_CLUSTER_INFO),
        _route("close/route-TopicX", "TopicX"),
        _unreg("unreg/master-a", "broker-a", BA),
        _route("unreg/route-TopicA-after-master", "TopicA"),
        Step("unreg/cluster-info", RC.GET_BROKER_CLUSTER_INFO),
        Step("unreg/all-topics", RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
    ]
    # ---- malformed frames: Java closes the connection without a reply ----------------------------
    good = rmq.encode_frame(rmq.make_request(RC.GET_BROKER_CLUSTER_INFO, None, opaque=1))
    S += [
        Step("raw/serialize-type-2", 0, conn="r1", raw=good[:4] + bytes([2]) + good[5:]),
        Step("raw/header-longer-than-frame", 0, conn="r2",
             raw=good[:4] + (len(good)).to_bytes(4, "big") + good[8:]),
        Step("raw/json-header-garbage", 0, conn="r3",
             raw=(4 + 5).to_bytes(4, "big") + (5).to_bytes(4, "big") + b"{nope"),
        Step("raw/negative-length", 0, conn="r4", raw=(0xFFFFFFF0).to_bytes(4, "big") + b"\0" * 8),
        Step("raw/frame-over-16MiB", 0, conn="r5", raw=(16777213).to_bytes(4, "big") + b"\0" * 8),
        Step("raw/binary-header-truncated", 0, conn="r6", raw=(4 + 10).to_bytes(4, "big")
             + (0x01000000 | 10).to_bytes(4, "big") + b"\0" * 10),
        Step("raw/cluster-info-after", RC.GET_BROKER_CLUSTER_INFO),
    ]
    # ---- requests where nsrvd deliberately leaves a different state from Java's; last, so that
    # the state they leave cannot make the earlier comparisons differ -------------------------
    S += [
        _reg("quirk/broker-d-5x-compressed-labelled-false", "broker-d", BD, [_t("TopicD"), _t("TopicD2")],
             compressed=True, compressed_flag=False),
        _route("quirk/route-TopicD", "TopicD"),
        _unreg("quirk/unregister-broker-d", "broker-d", BD),
        _route("quirk/route-TopicD-after-unregister", "TopicD"),
        _reg("quirk/single-topic-first", "broker-f", "127.0.0.2:37911", [_t("TopicF")]),
        _route("quirk/route-TopicF", "TopicF"),
        Step("quirk/cluster-info-after-single-topic", RC.GET_BROKER_CLUSTER_INFO),
        _reg("quirk/missing-brokerName", "broker-g", "127.0.0.2:38911", [_t("TopicG"), _t("TopicG2")],
             drop=("brokerName",)),
        Step("quirk/system-topics-after-missing-brokerName", RC.GET_SYSTEM_TOPIC_LIST_FROM_NS),
        Step("quirk/cluster-info-after-missing-brokerName", RC.GET_BROKER_CLUSTER_INFO),
    ]
    return S


# --------------------------------------------------------------------------------------------
# Running and comparing
# --------------------------------------------------------------------------------------------


@dataclass
class Reply:
    cmd: Optional[rmq.Command]  # None: no reply
    note: str = ""  # "closed", "timeout", "extra frame for oneway", ...


class Session:
    """Connections to one NameServer, by name."""

    def __init__(self, ns: NameServer) -> None:
        self.ns = ns
        self.conns: Dict[str, rmq.Connection] = {}

    def conn(self, name: str) -> rmq.Connection:
        c = self.conns.get(name)
        if c is None or c.closed_by_peer:
            c = self.ns.conn(timeout=5.0)
            self.conns[name] = c
        return c

    def close(self, name: str) -> None:
        c = self.conns.pop(name, None)
        if c is not None:
            c.close()

    def close_all(self) -> None:
        for n in list(self.conns):
            self.close(n)

    def run(self, st: Step) -> Reply:
        if st.action and st.action.startswith("close:"):
            self.close(st.action.split(":", 1)[1])
            return Reply(None, "closed")
        c = self.conn(st.conn)
        if st.raw is not None:
            # malformed bytes: the server must close the connection without replying
            try:
                c.send_raw(st.raw)
                frames, _rest = c.read_to_eof(timeout=3.0)
                self.conns.pop(st.conn, None)
                return Reply(frames[0] if frames else None, "connection closed by the server")
            except socket.timeout:
                return Reply(None, "connection left open (3 s)")
            except (ConnectionError, OSError) as e:
                self.conns.pop(st.conn, None)
                return Reply(None, f"connection closed by the server ({e.__class__.__name__})")
        cmd = c.build(st.code, st.ext, st.body, version=st.version, serialize_type=st.stype, oneway=st.oneway,
                      language=st.language)
        try:
            c.send(cmd)
            if st.oneway:
                # a reply must not come: a request after it gets the first frame
                probe = c.build(RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None)
                c.send(probe)
                first = c.recv(timeout=5.0)
                if first.opaque == probe.opaque:
                    return Reply(None, "no reply (oneway)")
                return Reply(first, "reply to a oneway request")
            return Reply(c.recv_for(cmd.opaque, timeout=2.0))
        except socket.timeout:
            return Reply(None, "no reply within 2 s")
        except (rmq.ConnectionClosed, ConnectionError, OSError) as e:
            self.conns.pop(st.conn, None)
            return Reply(None, f"connection closed ({e.__class__.__name__})")


def _norm_text(s: Optional[str], ns: NameServer) -> Optional[str]:
    """Masks what differs between the two NameServers by construction: address, paths, port."""
    if s is None:
        return None
    s = s.replace(ns.addr, "<ns>").replace(str(ns.workdir), "<workdir>")
    return re.sub(r"(?m)^listenPort=" + str(ns.port) + "$", "listenPort=<port>", s)


def _parse_body(text: str) -> Tuple[str, Any]:
    try:
        return "json", rmq.loads_lenient(text)
    except rmq.LenientJSONError:
        return "text", text


def compare(step: Step, a: Reply, b: Reply, nsa: NameServer, nsb: NameServer, for_497: bool) -> List[Tuple[str, str]]:
    """Differences (aspect, description) between nsrvd's reply a and Java's reply b."""
    if a.cmd is None or b.cmd is None:
        if (a.cmd is None) != (b.cmd is None) or a.note != b.note:
            return [("reply", f"nsrvd: {a.note or 'replied code ' + str(a.cmd.code)}; "
                              f"Java: {b.note or 'replied code ' + str(b.cmd.code)}")]
        return []
    x, y = a.cmd, b.cmd
    d: List[Tuple[str, str]] = []
    if x.code != y.code:
        d.append(("code", f"{x.code} vs Java {y.code}"))
    rx, ry = _norm_text(x.remark, nsa), _norm_text(y.remark, nsb)
    if (rx or None) != (ry or None):
        d.append(("remark", f"{rx!r} vs Java {ry!r}"))
    if x.ext != y.ext:
        d.append(("ext", f"{x.ext!r} vs Java {y.ext!r}"))
    if x.flag != y.flag:
        d.append(("flag", f"{x.flag} vs Java {y.flag}"))
    if x.language_name != y.language_name:
        d.append(("language", f"{x.language_name} vs Java {y.language_name}"))
    if x.version != y.version:
        d.append(("version", f"{x.version} vs Java {y.version}"))
    if x.serialize_type != y.serialize_type:
        d.append(("type", f"{rmq.SERIALIZE_NAMES.get(x.serialize_type)} vs Java {rmq.SERIALIZE_NAMES.get(y.serialize_type)}"))
    bx = _norm_text(x.body_text(), nsa) if x.body else None
    by = _norm_text(y.body_text(), nsb) if y.body else None
    if step.code == RC.GET_NAMESRV_CONFIG and bx is not None and by is not None and x.code == 0 and y.code == 0:
        px, py = rmq.parse_properties(bx), rmq.parse_properties(by)
        only_x, only_y = sorted(set(px) - set(py)), sorted(set(py) - set(px))
        if only_x or only_y:
            d.append(("config-keys", f"only nsrvd: {only_x}; only Java: {only_y}"))
        diff = {k: (px[k], py[k]) for k in sorted(set(px) & set(py)) if px[k] != py[k]}
        if diff:
            d.append(("config-values", f"{diff}"))
        return d
    if (bx is None) != (by is None):
        d.append(("body", f"nsrvd {'no body' if bx is None else repr(bx[:200])} vs Java "
                          f"{'no body' if by is None else repr(by[:200])}"))
        return d
    if bx is None:
        return d
    kx, vx = _parse_body(bx)
    ky, vy = _parse_body(by)
    if for_497 and kx == "json":
        vx = strip_5x(vx)
    if canon(vx) != canon(vy):
        d.append(("body", f"{bx[:600]!r} vs Java {by[:600]!r}"))
    elif kx == "json" and ky == "json" and not for_497:
        why = fastjson.compare_bytes(bx, by)
        if why:
            d.append(("bytes", why))
    return d


@dataclass
class Allowed:
    did: str
    case: str
    aspect: str
    vs: str
    reason: str
    used: bool = False


def load_allowed() -> List[Allowed]:
    """Rows "| D<n> | `glob`, `glob` | aspect | vs | reason |" of ../DIFFERENCES.md."""
    out = []
    path = COMPAT / "DIFFERENCES.md"
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 5 or not re.fullmatch(r"D\d+", cols[0]):
            continue
        for glob in cols[1].split(","):
            glob = glob.strip().strip("`")
            if glob:
                out.append(Allowed(cols[0], glob, cols[2], cols[3], "|".join(cols[4:])))
    return out


def _applies(a: Allowed, version: str) -> bool:
    """`vs` is one Java version, several separated by spaces, or `both` (every version)."""
    return a.vs == "both" or version in a.vs.split()


def _allowed(allowed: List[Allowed], case: str, aspect: str, vs: str) -> Optional[Allowed]:
    for a in allowed:
        if fnmatch.fnmatchcase(case, a.case) and (a.aspect == aspect or a.aspect == "*") and _applies(a, vs):
            return a
    return None


def run_pair(java_version: str) -> None:
    oracle_kind = KIND_OF_VERSION[java_version]
    peer = f"differential replay vs Java {java_version}"
    if not cfg().has_nsrvd() or "nsrvd" not in cfg().targets:
        RESULTS.set(8, peer, java_version, "nsrvd", SKIP, f"no nsrvd binary at {cfg().nsrvd}")
        return
    tag = f"D{java_version.replace('.', '')}"
    mine, ref = make_nameserver("nsrvd", tag), make_nameserver(oracle_kind, tag)
    mine.start()
    ref.start()
    try:
        if not ref.wait_ready(60):
            RESULTS.set(8, peer, java_version, "java", FAIL, "harness: Java NameServer did not start")
            return
        if not mine.wait_ready(30):
            RESULTS.set(8, peer, java_version, "nsrvd", FAIL, "nsrvd did not start",
                        mine.proc.output()[-3000:] if mine.proc else "")
            return
        sa, sb = Session(mine), Session(ref)
        allowed = load_allowed()
        for494 = java_version == "4.9.7"
        log_lines: List[str] = []
        unlisted: List[str] = []
        listed: List[str] = []
        n = 0
        for st in steps():
            if for494 and st.v5_only:
                continue
            n += 1
            ra, rb = sa.run(st), sb.run(st)
            if st.sleep:
                time.sleep(st.sleep)
            diffs = compare(st, ra, rb, mine, ref, for494)
            log_lines.append(f"## {st.name} (code {st.code}, version {st.version}, "
                             f"{'binary' if st.stype == BIN_T else 'json'}{', oneway' if st.oneway else ''})")
            log_lines.append(f"   nsrvd: {ra.cmd!r} {ra.note}")
            log_lines.append(f"   Java:  {rb.cmd!r} {rb.note}")
            for aspect, desc in diffs:
                a = _allowed(allowed, st.name, aspect, java_version)
                if a:
                    a.used = True
                    listed.append(f"{st.name} [{aspect}] ({a.did}): {desc}")
                    log_lines.append(f"   DIFF {aspect} (listed {a.did}): {desc}")
                else:
                    unlisted.append(f"{st.name} [{aspect}]: {desc}")
                    log_lines.append(f"   DIFF {aspect} (NOT LISTED): {desc}")
            if not mine.proc.alive():
                unlisted.append(f"{st.name}: nsrvd exited (code {mine.proc.popen.poll()})")
                break
        sa.close_all()
        sb.close_all()
        record = cfg().logdir / f"differential-{java_version}.txt"
        record.write_text("\n".join(log_lines) + "\n", encoding="utf-8")
        # The Java column: the oracle answered the whole sequence.
        RESULTS.set(8, peer, java_version, "java", PASS, f"{n} requests replayed", f"record: {record}")
        detail = (f"{n} requests, {len(listed)} listed differences, {len(unlisted)} unlisted"
                  + (": " + "; ".join(unlisted[:6]) if unlisted else ""))
        RESULTS.set(8, peer, java_version, "nsrvd", FAIL if unlisted else PASS, detail,
                    f"record: {record}\n\nUNLISTED:\n" + "\n".join(unlisted) + "\n\nLISTED:\n" + "\n".join(listed))
        used = {a.did for a in allowed if a.used}
        stale = sorted({a.did for a in allowed if a.did not in used and _applies(a, java_version)})
        if stale:
            log(f"scenario 8 vs {java_version}: DIFFERENCES.md entries not observed this run: {', '.join(stale)}")
    finally:
        mine.stop()
        ref.stop()


def s8() -> None:
    versions = [v for v in VERSIONS if KIND_OF_VERSION[v] in cfg().peers] or ["5.3.3"]
    for v in versions:
        run_pair(v)
