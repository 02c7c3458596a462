"""GET_ROUTEINFO_BY_TOPIC's fast path (src/processor/proc_route_fast.c, docs/benchmarks.md):
route queries of the common shape are answered without the generic decode, counted in
nsrvd_route_fast_total, with the same reply and the same request metrics as the generic
path; other shapes, a missing topic and a restricted node (ACL) take the generic path."""

import random
import threading

import pytest

from nsrv_check import register_ok
from nsrvd_proc import free_port, scaled
from promtext import samples_by_line
from rmq import (
    Broker,
    Connection,
    FrameDecoder,
    NamesrvClient,
    RequestCode,
    ResponseCode,
    SerializeType,
    TopicConfig,
    encode_frame,
)

BROKER = Broker(name="broker-a", addr="127.0.0.1:10911")
TOPICS = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 8, 8, 6)]
ROUTE = 'request="GET_ROUTEINFO_BY_TOPIC"'


def _metrics(port: int) -> dict:
    return samples_by_line(port, timeout=scaled(5))


def _route_counts(m: dict) -> tuple:
    """What a route query moves: the fast path's counter, all requests, route requests,
    route SUCCESS and TOPIC_NOT_EXIST replies, route latency samples."""
    return (
        m["nsrvd_route_fast_total"],
        m["nsrvd_requests_total"],
        m[f'nsrvd_requests_by_code_total{{code="105",{ROUTE}}}'],
        m.get(f'nsrvd_request_responses_total{{{ROUTE},response="SUCCESS"}}', 0),
        m.get(f'nsrvd_request_responses_total{{{ROUTE},response="TOPIC_NOT_EXIST"}}', 0),
        m.get(f"nsrvd_request_duration_seconds_count{{{ROUTE}}}", 0),
    )


def _node(nsrvd_factory, connect, **props):
    port = free_port()
    srv = nsrvd_factory({"statusPort": port, "statusAddress": "127.0.0.1", **props})
    register_ok(NamesrvClient(connect(srv)), BROKER, TOPICS)
    return srv, port


def _client(connect, srv, st=SerializeType.ROCKETMQ) -> NamesrvClient:
    return NamesrvClient(connect(srv, serialize_type=st))


def _same_reply(a, b):
    assert (a.code, a.flag, a.version, a.language, a.remark, a.ext, a.body) == (
        b.code,
        b.flag,
        b.version,
        b.language,
        b.remark,
        b.ext,
        b.body,
    )


@pytest.mark.parametrize("st", [SerializeType.ROCKETMQ, SerializeType.JSON], ids=["binary", "json"])
def test_route_queries_take_the_fast_path(nsrvd_factory, connect, st):
    srv, port = _node(nsrvd_factory, connect)
    ns = _client(connect, srv, st)
    before = _route_counts(_metrics(port))
    replies = [ns.get_route(t.topic_name, opaque=7) for t in TOPICS for _ in range(5)]
    assert all(r.code == ResponseCode.SUCCESS and r.opaque == 7 for r in replies)
    after = _route_counts(_metrics(port))
    # Ten queries: ten fast answers, counted as requests, SUCCESS replies and latencies.
    assert [a - b for a, b in zip(after, before)] == [10, 10, 10, 10, 0, 10], (before, after)

    # The same query with a field the fast path leaves alone takes the generic path and
    # gets the same reply; so does an older client's (the other JSON form of the body).
    # The reply mirrors the request's header type either way.
    assert replies[0].serialize_type == st
    generic = ns.get_route("TopicTest", {"unusedField": "x"}, opaque=7)
    _same_reply(generic, replies[0])
    for version in (317, 401):
        fast = ns.get_route("TopicB", version=version, opaque=9)
        slow = ns.get_route("TopicB", {"unusedField": "x"}, version=version, opaque=9)
        _same_reply(fast, slow)
    m = _route_counts(_metrics(port))
    assert m[0] - after[0] == 2 and m[1] - after[1] == 5, (after, m)


def test_generic_path_for_a_missing_topic(nsrvd_factory, connect):
    srv, port = _node(nsrvd_factory, connect)
    before = _route_counts(_metrics(port))
    assert _client(connect, srv).get_route("NoSuchTopic").code == ResponseCode.TOPIC_NOT_EXIST
    after = _route_counts(_metrics(port))
    assert [a - b for a, b in zip(after, before)] == [0, 1, 1, 0, 1, 1], (before, after)


@pytest.mark.parametrize("props", [{"adminAllowList": "10.0.0.0/8"}, {"updateNamesrvConfigEnable": "false"}])
def test_restricted_node_takes_the_generic_path(nsrvd_factory, connect, props):
    """A node with an access policy runs every request through the policy's check."""
    srv, port = _node(nsrvd_factory, connect, **props)
    ns = _client(connect, srv)
    before = _route_counts(_metrics(port))
    assert all(ns.get_route("TopicTest").code == ResponseCode.SUCCESS for _ in range(3))
    after = _route_counts(_metrics(port))
    assert [a - b for a, b in zip(after, before)] == [0, 3, 3, 3, 0, 3], (before, after)


def test_split_and_pipelined_frames(nsrvd_factory, connect):
    """The connection's side of the fast path: fast and generic queries (both header types,
    versions on both sides of 4.9.4, a missing topic) interleaved, first cut into random
    pieces (frames split across reads, kept in the connection's buffer), then 20,000 sent at
    once without reading (batches cut at their budget, output back-pressure): every reply
    comes back in request order, and a fast reply is the generic one byte for byte."""
    srv, port = _node(nsrvd_factory, connect)
    rnd = random.Random(12)

    def build(c, n):
        cmds, fast = [], 0
        for i in range(n):
            topic = rnd.choice(["TopicTest", "TopicB", "NoSuchTopic"])
            ext = {"topic": topic}
            if rnd.random() < 0.3:
                ext["unusedField"] = "x"  # the generic path
            elif topic != "NoSuchTopic":
                fast += 1
            st = rnd.choice([SerializeType.ROCKETMQ, SerializeType.JSON])
            version = rnd.choice([317, 401, 453])
            cmds.append(
                c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, version=version, serialize_type=st, opaque=i + 1)
            )
        return cmds, fast

    def check(cmds, replies):
        assert [r.opaque for r in replies] == [c.opaque for c in cmds]
        seen = {}
        for c, r in zip(cmds, replies):
            missing = c.ext["topic"] == "NoSuchTopic"
            assert r.code == (ResponseCode.TOPIC_NOT_EXIST if missing else ResponseCode.SUCCESS)
            key = (c.ext["topic"], c.version, c.serialize_type)
            got = (r.code, r.remark, r.body, r.serialize_type)
            assert seen.setdefault(key, got) == got, key

    def read_replies(c, n):
        dec, out = FrameDecoder(), []
        c.sock.settimeout(scaled(60))
        while len(out) < n:
            data = c.sock.recv(1 << 20)
            assert data, "connection closed"
            out.extend(dec.feed(data))
        return out

    before = _metrics(port)
    c = connect(srv)
    cmds, fast_split = build(c, 400)
    data = b"".join(encode_frame(x) for x in cmds)
    i = 0
    while i < len(data):
        n = rnd.randint(1, 200)
        c.send_raw(data[i : i + n])
        i += n
    check(cmds, read_replies(c, len(cmds)))

    c2 = connect(srv)
    cmds, fast_bulk = build(c2, 20000)
    sender = threading.Thread(target=c2.sock.sendall, args=(b"".join(encode_frame(x) for x in cmds),))
    sender.start()
    replies = read_replies(c2, len(cmds))
    sender.join(scaled(60))
    check(cmds, replies)
    after = _metrics(port)
    assert after["nsrvd_route_fast_total"] - before["nsrvd_route_fast_total"] == fast_split + fast_bulk
    assert after["nsrvd_read_batch_yields_total"] > before["nsrvd_read_batch_yields_total"]


@pytest.mark.parametrize("st", [SerializeType.ROCKETMQ, SerializeType.JSON], ids=["binary", "json"])
def test_route_replies_keep_their_place_behind_deferred_replies(nsrvd_factory, connect, st):
    """KV writes reply once on disk (a deferred reply); route queries pipelined behind them
    take the fast path and their replies still wait behind the deferred ones, in request
    order."""
    srv, port = _node(nsrvd_factory, connect)
    c = connect(srv, serialize_type=st, timeout=scaled(30))
    reqs = []
    for i in range(50):
        reqs.append(c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "FP", "key": f"k{i % 5}", "value": f"v{i}"}))
        for t in TOPICS:
            reqs.append(c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": t.topic_name}))
    before = _route_counts(_metrics(port))
    c.send_many(reqs)
    got = [c.recv(timeout=scaled(30)) for _ in reqs]
    assert [r.opaque for r in got] == [q.opaque for q in reqs]
    for q, r in zip(reqs, got):
        assert r.code == ResponseCode.SUCCESS, (q, r)
        if q.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            assert r.body_json()["queueDatas"][0]["brokerName"] == "broker-a"
    after = _route_counts(_metrics(port))
    assert [a - b for a, b in zip(after, before)][:4] == [100, 150, 100, 100], (before, after)
