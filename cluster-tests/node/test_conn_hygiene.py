"""Connection hygiene: memory and sockets that clients hold are bounded by configuration.

A connection that stops reading its replies is reset after serverChannelMaxIdleTimeSeconds
(a slow reader that still drains is not), maxConnections refuses connections past it,
totalOutputLimitBytes resets the connection holding the most queued replies, and the status
port answers probes while many silent sockets are held open."""

import socket
import struct
import time
import urllib.request

import pytest

from nsrv_check import assert_code, register_ok, wait_until
from nsrvd_proc import free_port, scaled
from rmq import Broker, ConnectionClosed, NamesrvClient, RequestCode, TopicConfig, encode_frame, make_request

TCP_ESTABLISHED = 1
BIG_TOPICS = [TopicConfig(f"BigTopic-{i:05d}", 4, 4, 6) for i in range(1000)]


def tcp_state(sock) -> int:
    """The kernel's TCP state of our end, read without consuming anything."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def closed_by_server(sock) -> bool:
    return tcp_state(sock) != TCP_ESTABLISHED


def metrics(node) -> dict:
    url = f"http://127.0.0.1:{node.status_port}/metrics"
    with urllib.request.urlopen(url, timeout=scaled(5)) as r:
        text = r.read().decode()
    # Integer samples only (counters and gauges here); uptime and histogram sums are fractional.
    return {k: int(v) for k, v in (line.split(" ", 1) for line in text.splitlines() if line and line[0] != "#")
            if v.strip().isdigit()}


@pytest.fixture
def node(nsrvd_factory, request):
    cfg = {"shutdownWaitTimeSeconds": 3, "statusPort": free_port(), "statusAddress": "127.0.0.1"}
    for m in request.node.iter_markers("nsrvd_config"):
        cfg.update(m.kwargs)
    n = nsrvd_factory(cfg)
    n.status_port = cfg["statusPort"]
    return n


def make_stuck(connect, node, blocked_for=1.0):
    """A client that pipelines requests with ~30 KB replies and never reads, until the server
    stops reading it (its sends block for `blocked_for` seconds)."""
    c = connect(node)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    frame = encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1))
    chunk = memoryview(frame * 200)
    c.sock.setblocking(False)
    blocked_since = None
    off = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < scaled(20):
        try:
            off = (off + c.sock.send(chunk[off:])) % len(chunk)  # whole frames, in order
            blocked_since = None
        except BlockingIOError:
            blocked_since = blocked_since or time.monotonic()
            if time.monotonic() - blocked_since >= blocked_for:
                break
            time.sleep(0.01)
        except (ConnectionResetError, BrokenPipeError):
            break  # the server reset it already (output cap)
    c.sock.setblocking(True)
    return c


@pytest.mark.slow
@pytest.mark.nsrvd_config(serverChannelMaxIdleTimeSeconds=3, connOutputLimitBytes=1048576)
def test_connection_that_stops_reading_is_reset_after_idle_time(node, connect):
    register_ok(NamesrvClient(connect(node)), Broker(name="broker-big", addr="127.0.0.1:12000"), BIG_TOPICS)
    # A slow reader: lots queued, but it drains a little all the time, so it is not idle.
    slow = connect(node)
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    frame = encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1))
    slow.sock.sendall(frame * 100)
    stuck, stuck_at, held = [], [], []
    for _ in range(4):
        before = metrics(node).get("nsrvd_output_queued_bytes", 0)
        stuck.append(make_stuck(connect, node, blocked_for=0.5))
        stuck_at.append(time.monotonic())
        # The client's sends block before the server has answered all it read (slowly under
        # a sanitizer): wait for its queue to reach the limit.
        t = time.monotonic()
        while time.monotonic() - t < scaled(2):
            held_now = metrics(node).get("nsrvd_output_queued_bytes", 0) - before
            if held_now >= 1048576:
                break
            slow.sock.recv(8192)
            time.sleep(0.1)
        held.append(held_now)
        slow.sock.recv(8192)
    closed_after = {}
    while time.monotonic() - stuck_at[-1] < scaled(8) and len(closed_after) < len(stuck):
        slow.sock.recv(8192)
        for i, c in enumerate(stuck):
            if i not in closed_after and closed_by_server(c.sock):
                closed_after[i] = time.monotonic() - stuck_at[i]
        time.sleep(0.2)
    assert len(closed_after) == len(stuck), f"non-reading connections still open: {closed_after}"
    assert min(held) >= 512 * 1024, held  # the server did hold their replies until then
    # Idle for 3 s (checked every second) after the last reply byte drained.
    assert min(closed_after.values()) >= 1.5, closed_after
    for c in stuck:
        assert tcp_state(c.sock) == 7, "reset (TCP_CLOSE), not a FIN that leaves the bytes queued"
    # The slow reader made progress all along and is still served.
    t = time.monotonic()
    while time.monotonic() - t < 3:
        slow.sock.recv(8192)
        time.sleep(0.2)
    assert not closed_by_server(slow.sock), "a connection that drains slowly was closed"
    m = metrics(node)
    assert m["nsrvd_connections_stalled_total"] == len(stuck), m
    assert m["nsrvd_output_queued_bytes"] < 200 * 1024 * 1024
    print(f"reply bytes held per stuck connection: {[h // 1024 for h in held]} KiB, released "
          f"{sorted(round(v, 1) for v in closed_after.values())} s after the client's sends blocked")


@pytest.mark.nsrvd_config(maxConnections=5)
def test_connections_past_max_are_refused(node, connect):
    conns = [connect(node) for _ in range(5)]
    for c in conns:
        assert_code(c.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
    extra = connect(node)
    with pytest.raises((ConnectionClosed, ConnectionResetError, BrokenPipeError)):
        extra.request(RequestCode.GET_BROKER_CLUSTER_INFO)
    m = metrics(node)
    assert m["nsrvd_connections_refused_total"] >= 1 and m["nsrvd_connections"] == 5, m
    # The open ones are unaffected, and a slot freed is usable again.
    assert_code(conns[0].request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
    conns[1].close()
    wait_until(lambda: metrics(node)["nsrvd_connections"] == 4, scaled(3), msg="close not seen")
    assert_code(connect(node).request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)
    assert "maxConnections=5 reached" in node.output()


@pytest.mark.nsrvd_config(totalOutputLimitBytes=1048576, connOutputLimitBytes=786432)
def test_total_output_limit_resets_the_connection_holding_most(node, connect):
    healthy = NamesrvClient(connect(node))
    register_ok(healthy, Broker(name="broker-big", addr="127.0.0.1:12000"), BIG_TOPICS)
    stuck = []
    for _ in range(4):
        stuck.append(make_stuck(connect, node, blocked_for=0.5))
        assert metrics(node)["nsrvd_output_queued_bytes"] <= 1048576
    wait_until(lambda: metrics(node)["nsrvd_output_limit_resets_total"] >= 1, scaled(5),
               msg="totalOutputLimitBytes never enforced")
    m = metrics(node)
    assert any(closed_by_server(c.sock) for c in stuck)
    assert healthy.all_topics().code == 0  # a client that reads is served throughout
    assert "totalOutputLimitBytes=1048576 reached" in node.output()


def http_get(port, path, timeout):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return data


@pytest.mark.slow
def test_status_probes_answered_while_silent_sockets_are_held(node):
    silent = [socket.create_connection(("127.0.0.1", node.status_port)) for _ in range(200)]
    try:
        worst = 0.0
        for _ in range(10):
            t = time.monotonic()
            reply = http_get(node.status_port, "/health", timeout=scaled(5))
            worst = max(worst, time.monotonic() - t)
            assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"ok\n"), reply[:80]
        assert worst < scaled(1), f"a /health probe took {worst:.2f}s"
        # Silent sockets are closed by the server after the request timeout (2 s).
        held = silent[-1]
        held.settimeout(scaled(5))
        t = time.monotonic()
        assert held.recv(1) == b""
        assert 1.0 <= time.monotonic() - t + 0.0 < scaled(5)
        print(f"worst /health latency with 200 silent sockets held: {worst * 1000:.1f} ms")
    finally:
        for s in silent:
            s.close()


def test_status_request_must_complete_within_timeout(node):
    with socket.create_connection(("127.0.0.1", node.status_port), timeout=scaled(6)) as s:
        s.sendall(b"GET /health HTTP/1.1\r\n")  # never finished
        t = time.monotonic()
        assert s.recv(1) == b""
        assert 1.5 <= time.monotonic() - t < scaled(4)
    assert metrics(node)["nsrvd_status_timeouts_total"] >= 1


@pytest.mark.nsrvd_config(totalInputLimitBytes=1048576)
def test_total_input_limit_resets_the_connection_holding_most(node, connect):
    """Clients that send most of a large frame and never finish it: the node buffers what they
    sent; past totalInputLimitBytes the connection holding the most is reset."""
    healthy = NamesrvClient(connect(node))
    senders = []
    for sent in (100000, 300000, 700000):
        c = connect(node)
        c.sock.sendall(struct.pack(">iI", 2000000, 16) + b"x" * sent)
        senders.append(c)
        time.sleep(0.3)
    wait_until(lambda: any(closed_by_server(c.sock) for c in senders), scaled(3),
               msg="no partial-request holder was reset")
    assert closed_by_server(senders[2].sock), "the largest holder is the one reset"
    assert not closed_by_server(senders[0].sock)
    m = metrics(node)
    assert m["nsrvd_input_limit_resets_total"] >= 1 and m["nsrvd_input_buffered_bytes"] <= 1048576, m
    assert_code(healthy.cluster_info(), 0)
    assert "totalInputLimitBytes=1048576 reached" in node.output()
