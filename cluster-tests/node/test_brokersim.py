"""nsrv-brokersim against a real nsrvd: the simulator's brokers show up in GET_BROKER_CLUSTER_INFO
and routes, and every fault it injects has the effect a nameserver must show (spec §3.5, §3.7):
kill -9 (connection close), graceful stop (UNREGISTER_BROKER), a hung broker (expiry after its
heartbeatTimeoutMillis), a partition with and without connection close, slaves, several nodes,
re-registration after a nameserver restart."""

from __future__ import annotations

import os
import time

import pytest

from brokersim import BrokerSim, BrokerSimError, find_binary
from nsrv_check import route_or_none, wait_until
from nsrvd_proc import scaled
from rmq import NamesrvClient

# Registration rounds are 30 s by default; nothing in these tests may depend on a second round
# unless it sets a short period itself.


@pytest.fixture(scope="session")
def brokersim_bin(nsrvd_bin) -> str:
    path = find_binary(nsrvd_bin)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"nsrv-brokersim not found or not executable: {path} (build target nsrv-brokersim "
                    "or set NSRV_BROKERSIM_BIN)")
    return path


@pytest.fixture
def brokersim(brokersim_bin, nsrvd_factory, tmp_path):
    """start(servers, **BrokerSim kwargs) -> a started BrokerSim, closed before the servers stop."""
    sims = []

    def start(servers, **kw):
        kw.setdefault("log_path", tmp_path / f"brokersim{len(sims)}.log")
        kw.setdefault("duration_s", 120)
        sim = BrokerSim([s.addr for s in servers], binary=brokersim_bin, **kw)
        sims.append(sim)
        return sim.start()

    yield start
    for sim in sims:
        sim.close()


def cluster(ns) -> dict:
    return ns.cluster_info().body_json()


def broker_table(ns) -> dict:
    return cluster(ns)["brokerAddrTable"]


def client(connect, server) -> NamesrvClient:
    return NamesrvClient(connect(server))


def gone(ns, name):
    return lambda: name not in broker_table(ns)


def test_registers_50_brokers_with_topics(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=50, topics=20, shared=3)
    ready = sim.wait_ready(scaled(20))
    assert ready["ok"] == 50 and ready["failed"] == 0, sim.output
    ns = client(connect, nsrvd)
    info = cluster(ns)
    table = info["brokerAddrTable"]
    assert set(table) == set(sim.names())
    addrs = {b["brokerAddrs"]["0"] for b in table.values()}
    assert len(addrs) == 50, "every simulated broker must have its own address"
    assert set(info["clusterAddrTable"]["DefaultCluster"]) == set(sim.names())
    # Own topics route to one broker, shared ones to all fifty.
    route = route_or_none(ns, "topic-broker-0007-19")
    assert route is not None
    assert [q["brokerName"] for q in route["queueDatas"]] == ["broker-0007"]
    assert route["queueDatas"][0]["readQueueNums"] == 8
    shared = route_or_none(ns, "shared-topic-2")
    assert {q["brokerName"] for q in shared["queueDatas"]} == set(sim.names())
    assert route_or_none(ns, "topic-broker-0007-20") is None
    stats = sim.stats()
    assert stats["reg_ok"] == 50 and stats["reg_failed"] == 0
    assert stats["lat_count"] == 50 and 0 < stats["lat_p50_us"] <= stats["lat_p99_us"] <= stats["lat_max_us"]


def test_die_unregisters_on_connection_close(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=50, topics=20)
    assert sim.wait_ready(scaled(20))["ok"] == 50
    ns = client(connect, nsrvd)
    t0 = time.monotonic()
    sim.die("broker-0003")
    wait_until(gone(ns, "broker-0003"), scaled(2), msg="dead broker still registered")
    took = time.monotonic() - t0
    assert len(broker_table(ns)) == 49
    assert route_or_none(ns, "topic-broker-0003-0") is None
    print(f"die -> gone in {took:.3f}s")


def test_stop_unregisters(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=50, topics=20)
    assert sim.wait_ready(scaled(20))["ok"] == 50
    ns = client(connect, nsrvd)
    sim.stop("broker-0010")  # returns once the UNREGISTER_BROKER was answered
    wait_until(gone(ns, "broker-0010"), scaled(2), msg="stopped broker still registered")
    assert len(broker_table(ns)) == 49
    st = sim.stats()
    assert st["unreg_sent"] == 1 and st["unreg_ok"] == 1
    # A stopped broker can come back.
    sim.resume("broker-0010")
    wait_until(lambda: "broker-0010" in broker_table(ns), scaled(3), msg="resumed broker missing")


@pytest.mark.slow
@pytest.mark.nsrvd_config(scanNotActiveBrokerInterval=1000)
@pytest.mark.parametrize("hb_code", [322, 904])
def test_freeze_expires_after_heartbeat_timeout(nsrvd, connect, brokersim, hb_code):
    """Frozen = hung broker: connections stay open, nothing is sent. With heartbeatTimeoutMillis
    3000 the nameserver drops it after 3 s + one scan; the others stay alive only through their
    light heartbeats (the registration period is 30 s)."""
    sim = brokersim([nsrvd], brokers=50, topics=20, timeout_ms=3000, heartbeat_ms=500, heartbeat_code=hb_code)
    assert sim.wait_ready(scaled(20))["ok"] == 50
    ns = client(connect, nsrvd)
    t0 = time.monotonic()
    sim.freeze("broker-0020")
    time.sleep(2.0)
    assert "broker-0020" in broker_table(ns), "expired before its 3 s timeout"
    wait_until(gone(ns, "broker-0020"), scaled(4), interval=0.1, msg="frozen broker not expired")
    took = time.monotonic() - t0
    assert 3.0 <= took <= 3.0 + 1.0 + scaled(1.5), took
    time.sleep(1.5)  # several more scans: heartbeats keep everyone else alive
    assert len(broker_table(ns)) == 49
    assert sim.stats()["hb_sent"] > 0
    sim.resume("broker-0020")
    wait_until(lambda: "broker-0020" in broker_table(ns), scaled(3), msg="resumed broker missing")


def test_cut_close_from_only_node(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=50, topics=20)
    assert sim.wait_ready(scaled(20))["ok"] == 50
    ns = client(connect, nsrvd)
    sim.cut_close("broker-0042", 0)
    wait_until(gone(ns, "broker-0042"), scaled(2), msg="cut-closed broker still registered")
    assert len(broker_table(ns)) == 49
    # No reconnect while cut, even across the reconnect backoff.
    time.sleep(0.5)
    assert "broker-0042" not in broker_table(ns)
    assert [m["links"] for m in sim.list() if m["name"] == "broker-0042"] == [["idle+cut-close"]]
    sim.heal("broker-0042", 0)
    wait_until(lambda: "broker-0042" in broker_table(ns), scaled(3), msg="healed broker missing")


@pytest.mark.slow
@pytest.mark.nsrvd_config(scanNotActiveBrokerInterval=1000)
def test_cut_keeps_connection_until_expiry(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=5, topics=5, timeout_ms=2000, heartbeat_ms=300)
    assert sim.wait_ready(scaled(20))["ok"] == 5
    ns = client(connect, nsrvd)
    sim.cut("broker-0001", 0)
    assert [m["links"] for m in sim.list() if m["name"] == "broker-0001"] == [["up+cut"]]
    wait_until(gone(ns, "broker-0001"), scaled(5), interval=0.1, msg="cut broker not expired")
    sim.heal("broker-0001", 0)
    wait_until(lambda: "broker-0001" in broker_table(ns), scaled(3), msg="healed broker missing")
    assert len(broker_table(ns)) == 5


def test_slaves_have_distinct_addresses_and_die_alone(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=5, topics=4, slaves=2)
    assert sim.wait_ready(scaled(20))["ok"] == 15
    ns = client(connect, nsrvd)
    table = broker_table(ns)
    addrs = set()
    for name in sim.names():
        assert set(table[name]["brokerAddrs"]) == {"0", "1", "2"}
        addrs |= set(table[name]["brokerAddrs"].values())
    assert len(addrs) == 15
    sim.die("broker-0001", member=1)
    wait_until(lambda: set(broker_table(ns)["broker-0001"]["brokerAddrs"]) == {"0", "2"}, scaled(2))
    sim.die("broker-0002")  # the whole group
    wait_until(gone(ns, "broker-0002"), scaled(2))


def test_two_nodes_cut_close_one(nsrvd_factory, connect, brokersim):
    a = nsrvd_factory({"shutdownWaitTimeSeconds": 3})
    b = nsrvd_factory({"shutdownWaitTimeSeconds": 3})
    sim = brokersim([a, b], brokers=10, topics=5)
    assert sim.wait_ready(scaled(20))["ok"] == 20
    ns_a, ns_b = client(connect, a), client(connect, b)
    assert len(broker_table(ns_a)) == len(broker_table(ns_b)) == 10
    sim.cut_close("broker-0002", 1)
    wait_until(gone(ns_b, "broker-0002"), scaled(2))
    time.sleep(0.3)
    assert "broker-0002" in broker_table(ns_a), "cut from node 1 only"
    sim.die("broker-0003")
    wait_until(lambda: "broker-0003" not in broker_table(ns_a) and "broker-0003" not in broker_table(ns_b),
               scaled(2))


def test_bump_registers_new_topic(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=5, topics=3)
    assert sim.wait_ready(scaled(20))["ok"] == 5
    ns = client(connect, nsrvd)
    assert route_or_none(ns, "topic-broker-0004-bump1") is None
    sim.bump("broker-0004")
    wait_until(lambda: route_or_none(ns, "topic-broker-0004-bump1") is not None, scaled(2))
    assert sim.stats()["reg_ok"] == 6


def test_reregisters_after_nameserver_restart(nsrvd_factory, connect, brokersim):
    first = nsrvd_factory({"shutdownWaitTimeSeconds": 1})
    sim = brokersim([first], brokers=20, topics=5, extra_args=["--reconnect-max-ms", "500"])
    assert sim.wait_ready(scaled(20))["ok"] == 20
    port = first.port
    assert first.terminate(timeout=10) == 0
    second = nsrvd_factory({"shutdownWaitTimeSeconds": 1}, port=port)
    ns = client(connect, second)
    wait_until(lambda: len(broker_table(ns)) == 20, scaled(5), interval=0.1, msg="no re-registration")
    st = sim.stats()
    assert st["connects"] >= 40 and st["disconnects"] >= 20


def test_compressed_body_and_binary_header(nsrvd, connect, brokersim):
    sim = brokersim([nsrvd], brokers=10, topics=10, shared=2, compressed=True,
                    extra_args=["--ser", "rocketmq"])
    assert sim.wait_ready(scaled(20))["ok"] == 10
    ns = client(connect, nsrvd)
    assert len(broker_table(ns)) == 10
    assert route_or_none(ns, "topic-broker-0009-9") is not None


def test_command_errors_and_final_stats(nsrvd, brokersim):
    sim = brokersim([nsrvd], brokers=3, topics=2)
    assert sim.wait_ready(scaled(20))["ok"] == 3
    for bad in ("die broker-9999", "cut broker-0001 1", "cut broker-0001", "explode", "die broker-0001/1",
                "stop all/1", "die bad name"):
        with pytest.raises(BrokerSimError):
            sim.command(bad)
    # Comments and blank lines get no reply; the next command's reply is still its own.
    sim._send("# a comment")
    sim._send("")
    assert sim.stats()["reg_ok"] == 3
    final = sim.quit()
    assert final is not None and final["event"] == "exit"
    assert final["reg_ok"] == 3 and final["first_round_ok"] == 3
