"""Light first (src/server/conn_light_first.c, docs/design/connection-hygiene.md): a
connection whose requests keep coming is busy, and what it reads runs after the requests of
connections that were quiet; a client's route update (a few queries one after another, then
a pause) is never held. Held requests are answered in order with the same replies, and
counted in nsrvd_reads_held_total."""

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
