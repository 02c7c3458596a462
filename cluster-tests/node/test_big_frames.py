"""Big frames off the event loop (docs/design/persistence.md "Big frames off the event loop").

A frame of bigFrameWorkerBytes (64 KiB) or more is decoded on a worker thread: the request
header (a 4 MiB KV value is parsed, unescaped, UTF-8 checked and copied), a REGISTER_BROKER
body's JSON parse or inflate, a PUT_KV_CONFIG value's stored form. The event loop only runs
the decoded request. The server reports the most event-loop CPU time one frame of 64 KiB or
more took (nsrvd_big_frame_loop_cpu_seconds_max): CPU time of the loop thread, so a busy
machine that preempts the loop does not move it, which wall-clock latency would.

Each test runs the same requests against a server with the worker and one with
bigFrameWorkerBytes=0 (every frame decoded on the loop, the code before the change): the
first must hold the loop a fraction of the time the second does, and under an absolute bound.
"""

import signal

import pytest

from nsrv_check import register_ok
from nsrvd_proc import free_port, scaled
from promtext import samples_by_line
from rmq import (Broker, DataVersion, NamesrvClient, RequestCode, TopicConfig, register_broker_body_json,
                 register_broker_ext)

BIG_VALUE = "v" * (4 << 20)
# Measured on the 2-core machine (release build): a 4 MiB PUT_KV_CONFIG holds the loop
# 0.5-0.7 ms with the worker, 8-9 ms without. CPU time, so load does not move it.
# The bounds leave room for the cache misses a loaded machine adds to CPU time (a periodic
# registration went from 1.1 to 2.4 ms with the test suite running beside it); the
# registration's is the 5 ms route-p99 target.
KV_LOOP_BOUND_S = 0.003
# A periodic 10,000-topic registration: 1.1-2.4 ms with the worker (applying it), 12-17 without.
REG_LOOP_BOUND_S = 0.005
OFFLOAD_FRACTION = 1 / 3


def _metrics(port: int) -> dict:
    return samples_by_line(port, timeout=scaled(5))


def _server(nsrvd_factory, worker_bytes):
    port = free_port()
    props = {"statusPort": port, "statusAddress": "127.0.0.1"}
    if worker_bytes is not None:
        props["bigFrameWorkerBytes"] = worker_bytes
    return nsrvd_factory(props), port


def _big_kv(srv, port, connect):
    ns = NamesrvClient(connect(srv, timeout=scaled(30)))
    assert ns.put_kv("BIG", "big", BIG_VALUE).code == 0
    got = ns.get_kv("BIG", "big")
    assert got.code == 0 and got.ext["value"] == BIG_VALUE
    return _metrics(port)


def test_big_kv_value_is_decoded_off_the_loop(nsrvd_factory, connect):
    srv, port = _server(nsrvd_factory, None)
    m = _big_kv(srv, port, connect)
    inline_srv, inline_port = _server(nsrvd_factory, 0)
    inline = _big_kv(inline_srv, inline_port, connect)
    assert m["nsrvd_frames_offloaded_total"] == 1 and inline["nsrvd_frames_offloaded_total"] == 0
    held = m["nsrvd_big_frame_loop_cpu_seconds_max"]
    held_inline = inline["nsrvd_big_frame_loop_cpu_seconds_max"]
    assert 0 < held < held_inline * OFFLOAD_FRACTION, (held, held_inline)
    assert held < scaled(KV_LOOP_BOUND_S), (held, held_inline)


def _periodic_registrations(srv, port, connect, compressed):
    """Loop CPU of three periodic registrations (new DataVersion, same 10,000 topics), after
    a first one (which also inserts the topics: its cost is the route table's, not the
    decode's, and is not counted here)."""
    ns = NamesrvClient(connect(srv, timeout=scaled(60)))
    topics = [TopicConfig(f"BigReg{i:06d}", 8, 8, 6) for i in range(10000)]
    broker = Broker(name="big-broker", addr="127.0.0.1:10911")
    register_ok(ns, broker, topics, DataVersion(1, 1), compressed=compressed)
    before = _metrics(port)
    for v in (2, 3, 4):
        register_ok(ns, broker, topics, DataVersion(v, v), compressed=compressed)
    after = _metrics(port)
    assert ns.get_route("BigReg009999").code == 0
    name = "nsrvd_big_frame_loop_cpu_seconds"
    assert after[name + "_count"] - before[name + "_count"] == 3
    return after, (after[name + "_sum"] - before[name + "_sum"]) / 3


# The decode a worker takes off: JSON parse of ~1 MiB of text (most of the loop time before:
# the worker must cut it to a third), or inflate and parse of a ~40 KiB compressed body (only
# a third to a half of it; the apply is the rest, too close to compare: that the frame went to
# the worker and the bound are checked).
@pytest.mark.parametrize("compressed,fraction", [(False, 1 / 3), (True, None)], ids=["json", "compressed"])
def test_big_registration_is_decoded_off_the_loop(nsrvd_factory, connect, compressed, fraction):
    srv, port = _server(nsrvd_factory, None)
    m, held = _periodic_registrations(srv, port, connect, compressed)
    inline_srv, inline_port = _server(nsrvd_factory, 0)
    inline, held_inline = _periodic_registrations(inline_srv, inline_port, connect, compressed)
    assert m["nsrvd_frames_offloaded_total"] == 4, m
    assert inline["nsrvd_frames_offloaded_total"] == 0, inline
    assert held > 0, (held, held_inline)
    if fraction is not None:
        assert held < held_inline * fraction, (held, held_inline)
    assert held < scaled(REG_LOOP_BOUND_S), (held, held_inline)


def _register_request(c, broker, topics):
    body = register_broker_body_json(topics, DataVersion(1, 1))
    ext = register_broker_ext(cluster=broker.cluster, broker_name=broker.name, broker_addr=broker.addr,
                              body=body)
    return c.build(RequestCode.REGISTER_BROKER, ext, body)


# ---- the hand-off: order, close and SIGTERM while a frame is on the worker ----------------


def test_replies_keep_request_order_around_big_frames(nsrvd_factory, connect):
    """Frames behind one on the worker wait for it; their replies never overtake its reply, and
    they see what it changed. Several big frames in one pipeline, mixed with small ones and a
    big registration, all on one connection."""
    srv, port = _server(nsrvd_factory, None)
    c = connect(srv, timeout=scaled(30))
    topics = [TopicConfig(f"Ord{i:05d}", 8, 8, 6) for i in range(5000)]
    reqs = []
    for i in range(4):
        value = chr(ord("a") + i) * ((1 << 20) + i)
        reqs.append(c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "ORD", "key": "big", "value": value}))
        reqs.append(c.build(RequestCode.GET_KV_CONFIG, {"namespace": "ORD", "key": "big"}))
        reqs.append(c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Ord00000"}))
    reqs.append(_register_request(c, Broker(), topics))
    reqs.append(c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Ord04999"}))
    c.send_many(reqs)
    got = [c.recv(timeout=scaled(30)) for _ in reqs]
    assert [r.opaque for r in got] == [q.opaque for q in reqs]
    for i in range(4):
        put, get, route = got[3 * i: 3 * i + 3]
        assert put.code == 0, put
        assert get.code == 0 and get.ext["value"] == chr(ord("a") + i) * ((1 << 20) + i)
        assert route.code == 17  # not registered yet: the registration comes later
    assert got[12].code == 0, got[12]
    assert got[13].code == 0  # sees the whole registration before it
    assert _metrics(port)["nsrvd_frames_offloaded_total"] == 5  # 4 values, 1 registration


def test_close_while_a_frame_is_on_the_worker(nsrvd, connect):
    """A client that sends a big frame and disconnects at once: the job finishes without its
    connection; the server goes on serving (and, under ASan, frees everything)."""
    for _ in range(5):
        c = connect(nsrvd, timeout=scaled(10))
        c.send(c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "GONE", "key": "k", "value": BIG_VALUE}))
        c.close()
    ns = NamesrvClient(connect(nsrvd, timeout=scaled(30)))
    assert ns.put_kv("GONE", "after", "x").code == 0
    assert ns.get_kv("GONE", "after").ext["value"] == "x"
    assert nsrvd.alive()


def test_sigterm_while_a_frame_is_on_the_worker_still_answers_it(nsrvd_factory, connect):
    """The frame on the worker and every request behind it (a durable write among them, and
    more than one batch) are answered before the connection closes."""
    srv = nsrvd_factory({"shutdownWaitTimeSeconds": 10})
    c = connect(srv, timeout=scaled(30))
    topics = [TopicConfig(f"Term{i:06d}", 8, 8, 6) for i in range(50000)]
    reqs = [_register_request(c, Broker(), topics),
            c.build(RequestCode.PUT_KV_CONFIG, {"namespace": "TERM", "key": "k", "value": "v"})]
    reqs += [c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Term049999"}) for _ in range(600)]
    c.send_many(reqs)
    # The frame is on the worker (or still being read) when the signal arrives.
    srv.signal(signal.SIGTERM)
    frames, leftover = c.read_to_eof(scaled(20))
    assert leftover == b""
    assert [f.opaque for f in frames] == [r.opaque for r in reqs]
    assert all(f.code == 0 for f in frames), [f for f in frames if f.code != 0][:3]
    assert srv.wait(scaled(20)) == 0
