"""SIGTERM with requests in flight: every request the server had received gets a whole reply,
connections end on a frame boundary, late requests get a normal reply or GO_AWAY, the exit
code is 0 within shutdownWaitTimeSeconds, and a second SIGTERM forces a quick exit
(proto/requests.md §1.5, §5.6 and the nsrvd contract)."""

import signal
import socket
import time

import pytest

from nsrv_check import assert_envelope, register_ok
from nsrvd_proc import scaled
from rmq import (
    Broker,
    Connection,
    DataVersion,
    NamesrvClient,
    RequestCode,
    SerializeType,
    TopicConfig,
    register_broker_body_json,
    register_broker_ext,
)

N_CONNS = 20
PER_CONN = 150


def _build_batch(c: Connection, i: int):
    """A mix of small and large replies plus (on every 4th connection, first in its pipeline)
    a ~600 KB REGISTER_BROKER. Only one PUT per connection, since every PUT rewrites the KV
    file."""
    reqs = []
    if i % 4 == 0:
        pad = {"pad": "x" * 2000}
        topics = [TopicConfig(f"Reg{i}-{k:04d}", 4, 4, 6, attributes=pad) for k in range(300)]
        body = register_broker_body_json(topics, DataVersion(1, 1))
        assert len(body) > 500_000
        b = Broker(name=f"broker-big-{i}", addr=f"127.0.0.1:{13000 + i}")
        ext = register_broker_ext(cluster="DefaultCluster", broker_name=b.name, broker_addr=b.addr, body=body)
        reqs.append(c.build(RequestCode.REGISTER_BROKER, ext, body))
    reqs.append(c.build(RequestCode.PUT_KV_CONFIG, {"namespace": f"n{i}", "key": "k", "value": "v"}))
    for k in range(PER_CONN):
        m = k % 10
        st = SerializeType.ROCKETMQ if (i + k) % 7 == 0 else SerializeType.JSON
        if k % 9 == 8:
            # An old client (version <= 475): never GO_AWAY, always processed (proto/requests.md §1.5).
            reqs.append(c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, version=400))
        elif m == 0:
            reqs.append(c.build(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, serialize_type=st))
        elif m in (1, 2, 3):
            reqs.append(c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, serialize_type=st))
        elif m in (4, 5):
            reqs.append(c.build(RequestCode.GET_KV_CONFIG, {"namespace": f"n{i}", "key": "k"}, serialize_type=st))
        elif m in (6, 7):
            reqs.append(c.build(RequestCode.GET_BROKER_CLUSTER_INFO, serialize_type=st))
        else:
            reqs.append(c.build(RequestCode.GET_NAMESRV_CONFIG, serialize_type=st))
    return reqs


def _run_in_flight_shutdown(nsrvd_factory, connect, graceful: bool):
    wait_s = 2
    srv = nsrvd_factory(
        {
            "enableShutdownGracefully": graceful,
            "shutdownWaitTimeSeconds": wait_s,
            "connOutputLimitBytes": 256 * 1024 * 1024,  # no read back-pressure in this test
        }
    )
    setup = NamesrvClient(connect(srv))
    register_ok(setup, Broker(), [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)])
    register_ok(setup, Broker(name="broker-many", addr="127.0.0.1:12001"),
                [TopicConfig(f"Many-{k:04d}", 4, 4, 6) for k in range(500)])
    # (setup stays open: closing it would unregister the brokers registered on it)

    conns = [connect(srv, timeout=scaled(15)) for _ in range(N_CONNS)]
    for c in conns:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    # idle: nothing in flight at SIGTERM, so nsrvd closes it at once (docs/compatibility.md, "Graceful
    # shutdown") without a byte.
    idle = connect(srv, timeout=scaled(15))
    batches = [_build_batch(c, i) for i, c in enumerate(conns)]
    for c, reqs in zip(conns, batches):
        c.send_many(reqs)
    # Give the server a moment to read what was sent (replies are not read yet, so many are
    # still queued in the server when SIGTERM arrives).
    time.sleep(0.1)
    t_term = time.monotonic()
    srv.signal(signal.SIGTERM)

    frames, leftover = idle.read_to_eof(scaled(wait_s + 10))
    assert frames == [] and leftover == b"", f"idle connection at shutdown: {frames!r} {leftover!r}"

    problems = []
    for i, (c, reqs) in enumerate(zip(conns, batches)):
        try:
            frames, leftover = c.read_to_eof(scaled(wait_s + 10))
        except socket.timeout:
            problems.append(f"conn {i}: not closed after shutdown")
            continue
        if leftover:
            problems.append(f"conn {i}: half frame of {len(leftover)} bytes at EOF")
        want = {r.opaque: r for r in reqs}
        got = {}
        for f in frames:
            if f.opaque not in want:
                problems.append(f"conn {i}: reply with unknown opaque {f!r}")
                continue
            req = want[f.opaque]
            assert_envelope(f, req)
            got[f.opaque] = f
            if f.code == 1500:
                # GO_AWAY: a whole reply, but only for version > 475 and with its remark.
                if req.version <= 475 or f.remark != "please go away":
                    problems.append(f"conn {i}: bad GO_AWAY for version {req.version}: {f!r}")
            elif f.code != 0:
                problems.append(f"conn {i}: request {req.code} got {f!r}")
        missing = set(want) - set(got)
        if missing:
            problems.append(f"conn {i}: {len(missing)} of {len(want)} requests sent before SIGTERM got no reply")

    rc = srv.wait(wait_s + 8)
    elapsed = time.monotonic() - t_term
    assert rc is not None, f"no exit within {scaled(wait_s + 8):.0f}s of SIGTERM\n{srv.tail()}"
    srv._stopped_by_test = True
    assert rc == 0, f"exit code {rc}\n{srv.tail()}"
    assert not problems, "\n".join(problems[:20])
    assert elapsed < scaled(wait_s + 5), f"shutdown took {elapsed:.1f}s (shutdownWaitTimeSeconds={wait_s})"
    return elapsed


@pytest.mark.slow
def test_late_requests_during_graceful_wait_are_answered(nsrvd_factory, connect):
    """Requests that arrive after SIGTERM on a connection that is still open (its replies are
    not drained yet) must be answered: v479 with a normal reply or GO_AWAY, v400 (<= 475)
    processed normally (Java keeps serving during the wait). A server that closed the
    connection, or stopped reading it, fails. Once drained the node exits, well before the
    wait is over."""
    wait_s = 10
    srv = nsrvd_factory({"enableShutdownGracefully": True, "shutdownWaitTimeSeconds": wait_s,
                         "connOutputLimitBytes": 256 * 1024 * 1024})
    setup = NamesrvClient(connect(srv))
    register_ok(setup, Broker(name="broker-many", addr="127.0.0.1:12001"),
                [TopicConfig(f"Many-{k:04d}", 4, 4, 6) for k in range(1000)])
    busy = connect(srv, timeout=scaled(15))
    # A 64 KiB receive buffer and ~15 KB per reply, 600 of them (9 MB): far more than the
    # socket buffers hold, yet read at full speed once the client reads.
    busy.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    reqs = [busy.build(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) for _ in range(600)]
    busy.send_many(reqs)
    # Time to queue more replies than the socket buffers hold, scaled for slow builds (a read
    # batch yields after 1 ms, so the 600 are not answered in one go).
    time.sleep(scaled(0.3))
    t_term = time.monotonic()
    srv.signal(signal.SIGTERM)
    time.sleep(0.3)
    assert srv.alive(), f"exited although replies were still queued\n{srv.tail()}"
    r479 = busy.build(RequestCode.GET_BROKER_CLUSTER_INFO, version=479)
    r400 = busy.build(RequestCode.GET_BROKER_CLUSTER_INFO, version=400)
    busy.send_many([r479, r400])
    frames, leftover = busy.read_to_eof(scaled(wait_s + 5))
    assert leftover == b"", "half frame at EOF"
    by_op = {f.opaque: f for f in frames}
    missing = [r.opaque for r in reqs if r.opaque not in by_op]
    assert not missing, f"{len(missing)} of {len(reqs)} requests sent before SIGTERM got no reply"
    assert r479.opaque in by_op, "late v479 request got no reply (want a reply or GO_AWAY)"
    f = by_op[r479.opaque]
    assert_envelope(f, r479)
    assert (f.code, f.remark) in ((0, None), (1500, "please go away")), f
    assert r400.opaque in by_op, "late v400 request got no reply (it must be processed)"
    f = by_op[r400.opaque]
    assert_envelope(f, r400)
    assert f.code == 0, f"a version-400 request must be processed during the wait: {f!r}"
    setup.conn.close()
    rc = srv.wait(wait_s + 5)
    srv._stopped_by_test = True
    assert rc == 0, f"exit code {rc}\n{srv.tail()}"
    assert time.monotonic() - t_term < scaled(wait_s), "the node waited for the deadline although drained"


@pytest.mark.slow
def test_sigterm_graceful_with_requests_in_flight(nsrvd_factory, connect):
    elapsed = _run_in_flight_shutdown(nsrvd_factory, connect, graceful=True)
    # Java sleeps the whole wait while serving (proto/requests.md §1.5); nsrvd may finish sooner once drained.
    assert elapsed >= 0


@pytest.mark.slow
def test_sigterm_default_with_requests_in_flight(nsrvd_factory, connect):
    _run_in_flight_shutdown(nsrvd_factory, connect, graceful=False)


@pytest.mark.slow
def test_second_sigterm_forces_quick_exit(nsrvd_factory, connect):
    """A client that never reads keeps replies queued, so the drain cannot finish within the
    30 s wait; a second SIGTERM must end the process promptly."""
    srv = nsrvd_factory({"enableShutdownGracefully": True, "shutdownWaitTimeSeconds": 30})
    setup = NamesrvClient(connect(srv))
    register_ok(setup, Broker(name="broker-many", addr="127.0.0.1:12001"),
                [TopicConfig(f"Many-{k:04d}", 4, 4, 6) for k in range(1000)])
    stuck = connect(srv)
    stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reqs = [stuck.build(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) for _ in range(2000)]
    stuck.send_many(reqs)
    # Time to fill the replies queued for it (a 40 MB backlog), scaled for slow builds.
    time.sleep(scaled(0.5))
    srv.signal(signal.SIGTERM)
    time.sleep(1.0)
    assert srv.alive(), (
        "exited within 1 s of SIGTERM although a client still had undelivered replies "
        f"(shutdownWaitTimeSeconds=30), rc={srv.proc.returncode}\n{srv.tail()}"
    )
    t = time.monotonic()
    srv.signal(signal.SIGTERM)
    rc = srv.wait(3)
    srv._stopped_by_test = True
    assert rc is not None, f"second SIGTERM did not force an exit within {scaled(3):.0f}s\n{srv.tail()}"
    assert time.monotonic() - t < scaled(3)
    print(f"exit code after second SIGTERM: {rc}")
    assert rc >= 0, f"killed by signal {-rc}"


def test_sigterm_idle_server_exits_0_quickly(nsrvd):
    t = time.monotonic()
    rc = nsrvd.terminate(10)
    assert rc == 0, nsrvd.tail()
    assert time.monotonic() - t < scaled(4)  # shutdownWaitTimeSeconds=3 in the default test config


@pytest.mark.parametrize("version", [400, 479])  # a 4.9.x client, a 5.3.3 client
def test_idle_connection_is_served_then_closed_behind_the_reply(nsrvd, connect, version):
    """An idle connection is not closed at the signal: that races the client's next request,
    which fails when the client writes before it has seen our FIN (the chaos suite's rolling
    restart, cluster-tests/chaos/README.md). Its next request within the grace gets a normal
    reply (no GO_AWAY: the 5.3.x client would reconnect to this address, whose listener is
    closed) and the connection closes right behind it."""
    c = connect(nsrvd)
    nsrvd.signal(signal.SIGTERM)
    time.sleep(0.05)  # the signal is handled; the grace is 250 ms
    q = c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchTopic"}, version=version)
    c.send(q)
    r = c.recv(timeout=scaled(2))
    assert r.opaque == q.opaque and r.code == 17, r  # TOPIC_NOT_EXIST, not GO_AWAY
    t = time.monotonic()
    with pytest.raises((ConnectionError, OSError)):
        c.recv(timeout=scaled(2))  # the close follows the reply
    assert time.monotonic() - t < scaled(1)
    assert nsrvd.wait(scaled(5)) == 0
    nsrvd._stopped_by_test = True


def test_connection_idle_through_the_grace_is_closed_and_the_server_exits(nsrvd, connect):
    c = connect(nsrvd)
    t = time.monotonic()
    nsrvd.signal(signal.SIGTERM)
    with pytest.raises((ConnectionError, OSError)):
        c.recv(timeout=scaled(3))
    assert time.monotonic() - t < scaled(2)
    assert nsrvd.wait(scaled(5)) == 0
    nsrvd._stopped_by_test = True
