"""Light first (src/server/conn_light_first.c, docs/design/connection-hygiene.md): a
connection whose requests keep coming is busy, and what it reads runs after the requests of
connections that were quiet; a client's route update (a few queries one after another, then
a pause) is never held. Held requests are answered in order with the same replies, and
counted in nsrvd_reads_held_total. Busy connections that vanish while held, and a SIGTERM
while they ask, end cleanly."""

import random
import signal
import socket
import struct
import threading
import time

from nsrv_check import register_ok
from nsrvd_proc import free_port, scaled
from promtext import samples_by_line
from rmq import Broker, NamesrvClient, RequestCode, ResponseCode, TopicConfig

BROKER = Broker(name="broker-a", addr="127.0.0.1:10911")
TOPICS = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 8, 8, 6), TopicConfig("TopicC", 2, 2, 6)]


def _node(nsrvd_factory, connect):
    port = free_port()
    srv = nsrvd_factory({"statusPort": port, "statusAddress": "127.0.0.1"})
    register_ok(NamesrvClient(connect(srv)), BROKER, TOPICS)
    return srv, port


def _held(port: int) -> int:
    return samples_by_line(port, timeout=scaled(5))["nsrvd_reads_held_total"]


def test_route_updates_of_a_few_topics_are_never_held(nsrvd_factory, connect):
    srv, port = _node(nsrvd_factory, connect)
    clients = [NamesrvClient(connect(srv)) for _ in range(5)]
    for _ in range(10):
        for ns in clients:  # each asks its topics one after another, as a client's update
            assert all(ns.get_route(t.topic_name).code == ResponseCode.SUCCESS for t in TOPICS)
        time.sleep(0.02)  # the poll interval, shortened: a pause of more than 1 ms
    assert _held(port) == 0


def test_a_connection_asking_flat_out_is_held_and_answered_in_order(nsrvd_factory, connect):
    srv, port = _node(nsrvd_factory, connect)
    light = NamesrvClient(connect(srv))
    want = {t.topic_name: light.get_route(t.topic_name).body for t in TOPICS}
    busy = connect(srv, timeout=scaled(30))
    # One query after another without pause: reads a round trip apart, busy after a few.
    n = 600
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)].topic_name
        r = busy.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, opaque=i + 1, timeout=scaled(30))
        assert (r.opaque, r.code, r.body) == (i + 1, ResponseCode.SUCCESS, want[topic]), i
    held = _held(port)
    assert held > 0, "no read of the busy connection was held"
    # A pipelined burst from the busy connection: held whole, replies in request order.
    cmds = [busy.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPICS[i % 3].topic_name}, opaque=10000 + i) for i in range(200)]
    busy.send_many(cmds)
    got = [busy.recv(timeout=scaled(30)) for _ in cmds]
    assert [r.opaque for r in got] == [c.opaque for c in cmds]
    assert all(r.body == want[c.ext["topic"]] for c, r in zip(cmds, got))
    # The quiet client is still light, and its replies the same.
    assert all(light.get_route(t).body == b for t, b in want.items())


def test_held_connections_that_vanish_and_a_sigterm_while_they_ask(nsrvd_factory, connect):
    """Busy connections asking flat out beside quiet clients (so held work runs in slices and
    stays held across loop turns), some reset mid-request while held; then SIGTERM while they
    still ask. The quiet clients get every answer, the node exits 0 (a sanitizer build
    reports any use of a closed connection)."""
    wait_s = 2
    port = free_port()
    srv = nsrvd_factory({"statusPort": port, "statusAddress": "127.0.0.1", "shutdownWaitTimeSeconds": wait_s})
    register_ok(NamesrvClient(connect(srv)), BROKER, TOPICS)
    stop = threading.Event()
    errors, resets = [], [0]

    def quiet():
        ns = NamesrvClient(connect(srv, timeout=scaled(10)))
        while not stop.is_set():
            for t in TOPICS:
                r = ns.get_route(t.topic_name)
                if r.code != ResponseCode.SUCCESS:
                    errors.append(r)
            time.sleep(0.003)

    def busy(seed, until):
        rnd = random.Random(seed)
        while not until.is_set():
            c = connect(srv, timeout=scaled(10))
            try:
                for _ in range(rnd.randint(20, 200)):
                    c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, timeout=scaled(10))
                burst = [c.build(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicB"}) for _ in range(50)]
                c.send_many(burst)  # then gone with a reset, replies unread
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                c.sock.close()
                resets[0] += 1
            except OSError:
                return  # the node is shutting down

    threads = [threading.Thread(target=quiet, daemon=True) for _ in range(3)]
    threads += [threading.Thread(target=busy, args=(k, stop), daemon=True) for k in range(6)]
    for t in threads:
        t.start()
    time.sleep(scaled(3))
    assert _held(port) > 0
    assert resets[0] > 0
    stop.set()
    # Until the node closes them (OSError): asking while SIGTERM arrives.
    busy_left = [threading.Thread(target=busy, args=(100 + k, threading.Event()), daemon=True) for k in range(4)]
    for t in busy_left:
        t.start()
    time.sleep(0.2)
    srv.signal(signal.SIGTERM)
    for t in threads + busy_left:
        t.join(scaled(15))
    assert not any(t.is_alive() for t in busy_left), "a busy connection was still served after the exit"
    rc = srv.wait(wait_s + 8)
    assert rc is not None, f"no exit within {scaled(wait_s + 8):.0f}s of SIGTERM\n{srv.tail()}"
    srv._stopped_by_test = True
    assert rc == 0, f"exit code {rc}\n{srv.tail()}"
    assert not errors, errors[:3]
    assert not srv.sanitizer_errors()
