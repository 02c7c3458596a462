"""Hostile and unusual input: every malformed frame closes only its own connection without a
reply while a healthy connection keeps getting correct answers; oneway, pipelining, a client
that never reads, idle close (proto/remoting.md §9, §2, §4, §5)."""

import os
import random
import socket
import struct
import time

import pytest

from nsrv_check import assert_code, assert_envelope, register_ok, wait_until
from nsrvd_proc import binary_has_asan, scaled
from testenv import knob
from rmq import (
    Broker,
    NamesrvClient,
    RequestCode,
    SerializeType,
    TopicConfig,
    encode_frame,
    make_request,
)

T = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)]


@pytest.fixture
def healthy(nsrvd, connect):
    """A connection with a registered broker; check() asserts the server still answers."""
    c = connect(nsrvd)
    ns = NamesrvClient(c)
    register_ok(ns, Broker(), T)

    def check():
        resp = ns.get_route("TopicTest")
        assert_envelope(resp)
        assert resp.code == 0, resp
        assert b'"brokerName":"broker-a"' in resp.body
        # New connections are still accepted.
        with NamesrvClient(connect(nsrvd)).conn as c2:
            assert_code(c2.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
        return True

    check()
    ns.check = check
    return ns


def _json_frame(header: bytes, body: bytes = b"", st: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (st << 24) | len(header)) + header + body


def _binary_header(remark_len=0, ext_len=0, ext=b"", remark=b"") -> bytes:
    return struct.pack(">hBhiii", 106, 0, 479, 1, 0, remark_len) + remark + struct.pack(">i", ext_len) + ext


BAD_FRAMES = {
    "total-length-over-cap": struct.pack(">i", 16777213) + b"\x00" * 64,
    "total-length-int-max": struct.pack(">I", 0x7FFFFFFF) + b"\x00" * 64,
    "negative-length": struct.pack(">i", -1) + b"\x00" * 64,
    "negative-length-min": struct.pack(">I", 0x80000000) + b"\x00" * 64,
    "length-0": struct.pack(">i", 0) + b"\x00" * 8,
    "length-3": struct.pack(">i", 3) + b"\x00\x00\x00" + b"\x00" * 8,
    "header-past-frame": struct.pack(">iI", 10, 100) + b"{" * 6,
    "header-len-max": struct.pack(">iI", 10, 0x00FFFFFF) + b"{" * 6,
    "invalid-json-header": _json_frame(b'{"code":105,"opaque":'),
    "empty-json-header": struct.pack(">iI", 4, 0),
    "empty-binary-header": struct.pack(">iI", 4, 1 << 24),
    "json-not-utf8-garbage": _json_frame(b"\xff\xfe\x00{}"),
    "serialize-type-2": _json_frame(b'{"code":106,"opaque":1}', st=2),
    "serialize-type-255": _json_frame(b'{"code":106,"opaque":1}', st=255),
    "binary-truncated-header": _json_frame(b"\x00\x6a\x00\x01", st=1),
    "binary-remark-past-header": _json_frame(_binary_header(remark_len=1000), st=1),
    "binary-ext-past-header": _json_frame(_binary_header(ext_len=1000), st=1),
    "binary-negative-remark": _json_frame(_binary_header(remark_len=-1), st=1),
    "binary-key-len-past-ext": _json_frame(
        _binary_header(ext_len=7, ext=struct.pack(">h", 100) + b"topic"), st=1
    ),
    "binary-val-len-past-ext": _json_frame(
        _binary_header(ext_len=11, ext=struct.pack(">h", 1) + b"k" + struct.pack(">i", 99) + b"vvvv"), st=1
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_bad_frame_closes_connection_without_reply(nsrvd, connect, healthy, name):
    bad = connect(nsrvd)
    try:
        bad.send_raw(BAD_FRAMES[name])
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = bad.wait_closed(scaled(3))
    assert got == b"", f"{name}: the server must not reply before closing, got {got[:200]!r}"
    healthy.check()
    assert nsrvd.alive()


def test_good_frame_before_bad_frame_is_answered(nsrvd, connect, healthy):
    """A valid request followed by garbage on the same connection: the first is answered (or
    at least the connection closes without a half frame)."""
    c = connect(nsrvd)
    req = c.build(RequestCode.GET_BROKER_CLUSTER_INFO)
    c.send_raw(encode_frame(req) + struct.pack(">i", -1))
    frames, leftover = c.read_to_eof(scaled(3))
    assert leftover == b"", "half frame at close"
    assert [f.opaque for f in frames] in ([req.opaque], [])
    healthy.check()


@pytest.mark.parametrize("cut", [1, 3, 4, 7, 20, 60])
def test_truncated_frame_then_close(nsrvd, connect, healthy, cut):
    frame = encode_frame(make_request(105, {"topic": "TopicTest"}, opaque=1))
    c = connect(nsrvd)
    c.send_raw(frame[:cut])
    c.close()
    time.sleep(0.1)
    healthy.check()
    assert nsrvd.alive()


def test_truncated_frame_stays_open_until_completed(nsrvd, connect, healthy):
    frame = encode_frame(make_request(105, {"topic": "TopicTest"}, opaque=31))
    c = connect(nsrvd)
    c.send_raw(frame[:10])
    assert c.is_open(0.3)
    healthy.check()
    c.send_raw(frame[10:])
    assert_code(c.recv_for(31), 0)


@pytest.mark.parametrize("seed", range(8))
def test_random_garbage(nsrvd, connect, healthy, seed):
    rnd = random.Random(seed)
    c = connect(nsrvd)
    data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 4096)))
    if seed % 2:  # plausible length prefix, garbage inside
        data = struct.pack(">i", len(data)) + data
    try:
        c.send_raw(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    # Either closed or still waiting for the rest of a frame; anything it sent must be whole,
    # well-formed response frames (decoding raises otherwise).
    c.is_open(0.3)
    for f in c.inbox:
        assert f.is_response, f
    c.close()
    healthy.check()
    assert nsrvd.alive()


def test_many_bad_connections_do_not_leak_fds(nsrvd, connect, healthy):
    before = nsrvd.open_fds()
    for i in range(100):
        with socket.create_connection(("127.0.0.1", nsrvd.port), timeout=scaled(3)) as s:
            s.sendall(struct.pack(">i", -1))
            s.settimeout(scaled(3))
            try:
                while s.recv(100):
                    pass
            except ConnectionResetError:
                pass
    healthy.check()
    wait_until(lambda: nsrvd.open_fds() <= before + 2, scaled(3), msg=f"fds {nsrvd.open_fds()} vs {before}")


def test_max_legal_frame_is_accepted(nsrvd, connect, healthy):
    """N = 16777212 (whole frame exactly 16 MiB) is legal (proto/remoting.md §2)."""
    c = connect(nsrvd, timeout=scaled(20))
    req = make_request(101, {"namespace": "n", "key": "k"}, opaque=99)
    hdr_len = len(encode_frame(req)) - 8
    req.body = b"x" * (16777212 - 4 - hdr_len)
    frame = encode_frame(req)
    assert len(frame) == 16 * 1024 * 1024
    c.send_raw(frame)
    resp = c.recv_for(99, scaled(20))
    assert_code(resp, 22)
    healthy.check()


@pytest.mark.nsrvd_config(maxFrameLength=65536)
def test_configured_max_frame_length(nsrvd, connect, healthy):
    ok_conn = connect(nsrvd)
    req = make_request(101, {"namespace": "n", "key": "k"}, opaque=5)
    hdr_len = len(encode_frame(req)) - 8
    req.body = b"x" * (65532 - 4 - hdr_len)
    ok_conn.send(req)
    assert_code(ok_conn.recv_for(5), 22)
    bad = connect(nsrvd)
    req.body += b"x"
    bad.send_raw(encode_frame(req))
    assert bad.wait_closed(scaled(3)) == b""
    healthy.check()


# ---------------------------------------------------------------- oneway and pipelining


@pytest.mark.parametrize("st", [SerializeType.JSON, SerializeType.ROCKETMQ], ids=["json", "binary"])
def test_oneway_requests_get_no_reply(nsrvd, connect, healthy, st):
    c = connect(nsrvd, serialize_type=st)
    oneways = [
        c.build(999, None, oneway=True),  # unknown code: still no reply
        c.build(RequestCode.GET_KV_CONFIG, {"namespace": "x", "key": "y"}, oneway=True),  # error path
        c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "nope"}, oneway=True),
        c.build(RequestCode.GET_BROKER_CLUSTER_INFO, None, oneway=True),
        c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "ow", "key": "k", "value": "v"}, oneway=True),
        c.build(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"kvConfigPath=/x", oneway=True),
    ]
    normal = c.build(RequestCode.GET_KV_CONFIG, {"namespace": "ow", "key": "k"})
    c.send_many(oneways + [normal])
    first = c.recv()
    assert first.opaque == normal.opaque, f"got a reply to a oneway request: {first!r}"
    # The oneway PUT was still executed.
    assert_code(first, 0, ext={"value": "v"})
    assert c.is_open(0.3) and c.inbox == [], f"unexpected extra frames: {c.inbox!r}"


def test_1000_pipelined_requests(nsrvd, connect, healthy):
    c = healthy.conn
    healthy.put_kv("ns", "k", "v")
    kinds = [
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, 0),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Missing"}, 17),
        (RequestCode.GET_BROKER_CLUSTER_INFO, None, 0),
        (RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}, 0),
        (RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "zz"}, 22),
        (999, None, 3),
    ]
    reqs, want = [], {}
    for i in range(1000):
        code, ext, expect = kinds[i % len(kinds)]
        st = SerializeType.ROCKETMQ if i % 3 == 0 else SerializeType.JSON  # mixed on one connection
        r = c.build(code, ext, serialize_type=st)
        reqs.append(r)
        want[r.opaque] = (expect, st)
    got = c.pipeline(reqs, timeout=scaled(20))
    assert set(got) == set(want)
    for op, resp in got.items():
        assert_envelope(resp, serialize_type=want[op][1])
        assert resp.code == want[op][0], resp
    assert c.is_open(0.2) and c.inbox == []


@pytest.mark.slow
@pytest.mark.nsrvd_config(connOutputLimitBytes=1048576)
def test_client_that_never_reads(nsrvd, connect, healthy):
    """A client that pipelines ~50k requests with big replies and never reads: the server must
    stop reading it (back-pressure), keep memory bounded and keep serving others."""
    limit_mb = float(knob("NSRV_TEST_RSS_LIMIT_MB", "600" if binary_has_asan(nsrvd.binary) else "200"))
    topics = [TopicConfig(f"BigTopic-{i:05d}", 4, 4, 6) for i in range(1000)]
    register_ok(healthy, Broker(name="broker-big", addr="127.0.0.1:12000"), topics)
    reply_size = len(healthy.all_topics().body)
    assert reply_size > 10000

    pusher = connect(nsrvd)
    pusher.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    pad = "p" * 1000
    frame = encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {"pad": pad}, opaque=1))
    chunk = frame * 100
    pusher.sock.setblocking(False)
    sent_bytes = 0
    blocked_since = None
    blocked = False
    max_rss = 0
    t0 = last_rss_check = time.monotonic()
    total = len(frame) * 50000
    view = memoryview(chunk)
    off = 0
    while sent_bytes < total and time.monotonic() - t0 < scaled(30):
        try:
            n = pusher.sock.send(view[off:])
            sent_bytes += n
            off = (off + n) % len(chunk)
            blocked_since = None
        except BlockingIOError:
            now = time.monotonic()
            if blocked_since is None:
                blocked_since = now
            elif now - blocked_since > 1.5:
                blocked = True
                break
            time.sleep(0.01)
        if time.monotonic() - last_rss_check > 0.2:
            last_rss_check = time.monotonic()
            rss = nsrvd.rss_kb() / 1024
            max_rss = max(max_rss, rss)
            assert rss < limit_mb, f"server RSS {rss:.0f} MB while a client does not read"
    requests_pushed = sent_bytes // len(frame)
    rss = nsrvd.rss_kb() / 1024
    max_rss = max(max_rss, rss)
    assert rss < limit_mb, f"server RSS {rss:.0f} MB (limit {limit_mb})"
    assert blocked, (
        f"server kept reading a non-reading client: {requests_pushed} requests pushed "
        f"({reply_size} byte replies) without back-pressure"
    )
    # Others are still served promptly.
    t = time.monotonic()
    healthy.check()
    assert time.monotonic() - t < scaled(2)
    assert nsrvd.rss_kb() / 1024 < limit_mb
    pusher.sock.setblocking(True)
    pusher.close()
    time.sleep(0.2)
    healthy.check()
    print(f"non-reader pushed {requests_pushed} requests before blocking; max RSS {max_rss:.0f} MB")


# ---------------------------------------------------------------- idle close


@pytest.mark.slow
@pytest.mark.nsrvd_config(serverChannelMaxIdleTimeSeconds=2)
def test_idle_connection_is_closed(nsrvd, connect):
    idle = connect(nsrvd)
    busy = NamesrvClient(connect(nsrvd))
    bconn = connect(nsrvd)
    register_ok(NamesrvClient(bconn), Broker(), T)  # a broker that then goes silent
    assert_code(idle.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.2:
        assert_code(busy.cluster_info(), 0)
        time.sleep(0.3)
    assert idle.is_open(0), "closed before the idle timeout"
    closed_at = None
    while time.monotonic() - t0 < scaled(6):
        assert_code(busy.cluster_info(), 0)
        if not idle.is_open(0.3):
            closed_at = time.monotonic() - t0
            break
    assert closed_at is not None, "idle connection not closed within the timeout"
    assert closed_at >= 1.5, f"closed after {closed_at:.2f}s, before serverChannelMaxIdleTimeSeconds=2"
    # The busy connection survived, and the idle broker's channel close unregistered it.
    wait_until(lambda: busy.get_route("TopicTest").code == 17, scaled(3), msg="idle broker not unregistered")
    assert not bconn.is_open(0.5)
    assert busy.conn.is_open(0)


def test_response_frame_from_client_is_ignored(nsrvd, connect, healthy):
    """A frame with the RESPONSE flag matches no pending request: dropped, no reply, the
    connection stays usable (Java logs a warning)."""
    c = connect(nsrvd)
    stray = c.build(RequestCode.GET_BROKER_CLUSTER_INFO)
    stray.flag = 1
    normal = c.build(RequestCode.GET_BROKER_CLUSTER_INFO)
    c.send_many([stray, normal])
    first = c.recv()
    assert first.opaque == normal.opaque, f"a response frame was answered: {first!r}"
    assert c.is_open(0.2) and c.inbox == []


def test_many_concurrent_connections(nsrvd, connect, healthy):
    before = nsrvd.open_fds()
    conns = [connect(nsrvd) for _ in range(200)]
    reqs = []
    for c in conns:
        r = c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"})
        c.send(r)
        reqs.append(r)
    for c, r in zip(conns, reqs):
        assert_code(c.recv_for(r.opaque), 0)
    # (before may still count a just-closed socket, hence the slack)
    assert nsrvd.open_fds() >= before + 190
    for c in conns:
        c.close()
    healthy.check()
    wait_until(lambda: nsrvd.open_fds() <= before + 2, scaled(3), msg="connection fds not released")


@pytest.mark.parametrize("depth", [1000, 200000])
def test_deeply_nested_json_does_not_crash(nsrvd, connect, healthy, depth):
    """Deep nesting in a header or a JSON body must be refused, never overflow the server's
    stack. A header that does not parse closes the connection (nothing sent back); a body that
    matters (REGISTER_BROKER) is refused with SYSTEM_ERROR, and the codes that ignore their body
    answer normally: each valid request gets its reply."""
    deep = "[" * depth + "]" * depth
    c = connect(nsrvd)
    hdr = ('{"code":106,"opaque":1,"x":' + deep + "}").encode()
    c.send_raw(struct.pack(">ii", 4 + len(hdr), len(hdr)) + hdr)
    assert c.wait_closed(scaled(3)) == b"", "a header nested too deep must close the connection, no reply"
    assert nsrvd.alive()
    body = ('{"x":' + deep + "}").encode()
    reg_ext = {"brokerName": "b", "brokerAddr": "1.1.1.1:1", "clusterName": "c", "brokerId": "0",
               "haServerAddr": "1.1.1.1:2", "bodyCrc32": "0", "compressed": "false"}
    for code, ext, want in ((103, reg_ext, 1), (217, {"topic": "T"}, 0), (322, reg_ext, 0), (318, None, 0)):
        c = connect(nsrvd)
        resp = c.request(code, ext, body, timeout=scaled(5))
        assert_envelope(resp)
        assert resp.code == want, f"code {code} with a deeply nested body: {resp!r}"
        if code == 103:
            assert resp.remark.startswith("Failed to decode RegisterBrokerBody"), resp
        assert nsrvd.alive(), f"server died on a deeply nested body for code {code}\n{nsrvd.tail()}"
    healthy.check()
