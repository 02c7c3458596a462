"""Broker liveness: channel close, per-broker expiry, heartbeats, and the stale-unregister race
(proto/requests.md §2.4, §2.7, proto/route.md §7)."""

import time

import pytest

from nsrv_check import register_ok, route_or_none, wait_until
from nsrvd_proc import scaled
from rmq import Broker, DataVersion, NamesrvClient, TopicConfig

T = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)]


def brokers_in_cluster_info(ns):
    return set(ns.cluster_info().body_json()["brokerAddrTable"])


def test_connection_close_unregisters_broker(nsrvd, connect):
    client = NamesrvClient(connect(nsrvd))
    bconn = connect(nsrvd)
    b = Broker(name="broker-a", addr="127.0.0.1:10911")
    register_ok(NamesrvClient(bconn), b, T)
    assert route_or_none(client, "TopicTest") is not None
    bconn.close()
    wait_until(lambda: route_or_none(client, "TopicTest") is None, scaled(2), msg="route survived channel close")
    assert brokers_in_cluster_info(client) == set()


def test_connection_close_of_slave_keeps_master(nsrvd, connect):
    client = NamesrvClient(connect(nsrvd))
    m = Broker(name="broker-a", addr="127.0.0.1:10911")
    s = Broker(name="broker-a", addr="127.0.0.1:10921", broker_id=1)
    register_ok(NamesrvClient(connect(nsrvd)), m, T)
    sconn = connect(nsrvd)
    register_ok(NamesrvClient(sconn), s, T)
    sconn.close()
    wait_until(
        lambda: route_or_none(client, "TopicTest")["brokerDatas"][0]["brokerAddrs"] == {"0": m.addr},
        scaled(2),
    )


def test_client_connection_close_does_not_unregister(nsrvd, connect):
    """Only the connection a broker registered on counts."""
    bconn = connect(nsrvd)
    register_ok(NamesrvClient(bconn), Broker(), T)
    other = connect(nsrvd)
    NamesrvClient(other).get_route("TopicTest")
    other.close()
    time.sleep(0.5)
    assert route_or_none(NamesrvClient(bconn), "TopicTest") is not None


@pytest.mark.slow
@pytest.mark.nsrvd_config(scanNotActiveBrokerInterval=1000)
def test_expiry_and_heartbeats(nsrvd, connect):
    client = NamesrvClient(connect(nsrvd))
    silent = Broker(name="b-silent", addr="127.0.0.1:11001", heartbeat_timeout_millis=2000)
    hb = Broker(name="b-hb", addr="127.0.0.1:11002", heartbeat_timeout_millis=2000)
    qdv = Broker(name="b-qdv", addr="127.0.0.1:11003", heartbeat_timeout_millis=2000)
    default_timeout = Broker(name="b-default", addr="127.0.0.1:11004")  # 120 s
    conns = {}
    dv = DataVersion(1, 1)
    for b in (silent, hb, qdv, default_timeout):
        conns[b.name] = NamesrvClient(connect(nsrvd))
        register_ok(conns[b.name], b, T, dv)
    t0 = time.monotonic()

    def beat():
        conns["b-hb"].heartbeat(hb, oneway=True)
        # A *different* DataVersion (changed=true) still refreshes liveness in 5.x (proto/requests.md §2.4).
        beat.n += 1
        conns["b-qdv"].query_data_version(qdv, DataVersion(100 + beat.n, 1), oneway=True)

    beat.n = 0

    # Not expired before its timeout.
    while time.monotonic() - t0 < 1.2:
        beat()
        time.sleep(0.3)
    assert brokers_in_cluster_info(client) == {"b-silent", "b-hb", "b-qdv", "b-default"}

    # The silent one goes after ~2 s + scan interval (Java's first scan may be 5 s after start).
    deadline = t0 + scaled(9)
    while "b-silent" in brokers_in_cluster_info(client):
        assert time.monotonic() < deadline, "silent broker with heartbeatTimeoutMillis=2000 never expired"
        beat()
        time.sleep(0.3)
    gone_after = time.monotonic() - t0
    assert gone_after >= 1.9, f"expired too early ({gone_after:.2f}s < 2s timeout)"
    assert route_or_none(client, "TopicTest") is not None
    # Its channel is closed by the server (proto/route.md §7).
    assert not conns["b-silent"].conn.is_open(wait=scaled(2)), "expired broker's channel was not closed"

    # The heartbeating ones survive several more timeouts.
    t1 = time.monotonic()
    while time.monotonic() - t1 < 3.0:
        beat()
        time.sleep(0.3)
        assert {"b-hb", "b-qdv", "b-default"} <= brokers_in_cluster_info(client)

    # Stop heartbeats: they expire too; the default-timeout broker stays.
    wait_until(
        lambda: brokers_in_cluster_info(client) == {"b-default"}, scaled(6), 0.2, msg="heartbeat brokers did not expire"
    )


def test_reregister_on_new_connection_then_close_old(nsrvd, connect):
    """Stale-unregister race: closing the old channel must not remove a broker that has since
    registered on a new one."""
    client = NamesrvClient(connect(nsrvd))
    b = Broker(name="broker-a", addr="127.0.0.1:10911")
    old = connect(nsrvd)
    register_ok(NamesrvClient(old), b, T, DataVersion(1, 1))
    new = connect(nsrvd)
    register_ok(NamesrvClient(new), b, T, DataVersion(1, 1))
    old.close()
    time.sleep(1.0)  # a negative check: no need to scale it
    assert route_or_none(client, "TopicTest") is not None, "broker removed by its stale channel's close"
    assert brokers_in_cluster_info(client) == {"broker-a"}
    new.close()
    wait_until(lambda: route_or_none(client, "TopicTest") is None, scaled(2))
