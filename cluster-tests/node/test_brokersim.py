"""nsrv-brokersim against a real nsrvd: the simulator's brokers show up in GET_BROKER_CLUSTER_INFO
and routes, and every fault it injects has the effect a nameserver must show (proto/route.md §5, §7):
kill -9 (connection close), graceful stop (UNREGISTER_BROKER), a hung broker (expiry after its
heartbeatTimeoutMillis), a partition with and without connection close, slaves, several nodes,
re-registration after a nameserver restart."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from brokersim import BrokerSim, BrokerSimError, find_binary
from nsrv_check import route_or_none, wait_until
from nsrvd_proc import SANITIZER_MARKERS, scaled
from rmq import FLAG_ONEWAY, FLAG_RESPONSE, Command, FrameDecoder, NamesrvClient, crc32_masked, encode_frame, loads_lenient

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
    problems = []
    for sim in sims:
        rc = sim.close()
        log = sim.log_path.read_text(errors="replace") if sim.log_path and sim.log_path.exists() else ""
        if rc != 0:
            problems.append(f"nsrv-brokersim exit code {rc}\n{log[-4000:]}")
        elif any(m in log for m in SANITIZER_MARKERS):
            problems.append(f"nsrv-brokersim sanitizer report\n{log[-20000:]}")
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


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
    # The last heartbeat was up to 0.5 s before the freeze; the scan runs every second.
    assert 2.5 - 0.1 <= took <= 3.0 + 1.0 + scaled(1.5), took
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
    # The route shows once nsrvd has applied the registration; the simulator counts it when
    # the reply reaches it, a moment later (failed once under load: 5 == 6).
    wait_until(lambda: sim.stats()["reg_ok"] == 6, scaled(2))


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


# ------------------------------------------------------------------ against a scripted server


class FakeNamesrv:
    """A scripted nameserver on 127.0.0.1 that records every request and answers REGISTER_BROKER
    and UNREGISTER_BROKER with SUCCESS in awkward ways:

    * ``hold=N``: keep answers until N requests are waiting, then send them in one write (several
      responses in one read on the simulator's side);
    * ``bytewise``: send answers one byte per write, with pauses (partial reads);
    * ``garbage_first``: answer the first connection's first request with a negative frame length.
    """

    def __init__(self, *, hold: int = 1, bytewise: bool = False, garbage_first: bool = False) -> None:
        self.hold = hold
        self.bytewise = bytewise
        self.garbage_first = garbage_first
        self.requests: list = []
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        self.stopping = False
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.connections += 1
                first = self.connections == 1
            t = threading.Thread(target=self._serve, args=(conn, first), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket, first: bool) -> None:
        conn.settimeout(0.2)
        dec = FrameDecoder()
        held = []
        with conn:
            while not self.stopping:
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not data:
                    return
                for cmd in dec.feed(data):
                    with self.lock:
                        self.requests.append(cmd)
                    if cmd.flag & FLAG_ONEWAY:
                        continue
                    if first and self.garbage_first:
                        conn.sendall(b"\xff\xff\xff\xf0")
                        first = False
                        continue
                    held.append(encode_frame(Command(code=0, flag=FLAG_RESPONSE, opaque=cmd.opaque, ext={})))
                if len(held) >= self.hold:
                    out = b"".join(held)
                    held.clear()
                    try:
                        if self.bytewise:
                            for i in range(len(out)):
                                conn.send(out[i : i + 1])
                                time.sleep(0.0005)
                        else:
                            conn.sendall(out)
                    except OSError:
                        return

    def of_code(self, code: int) -> list:
        with self.lock:
            return [c for c in self.requests if c.code == code]

    def close(self) -> None:
        self.stopping = True
        self.sock.close()
        for t in self.threads:
            t.join(2)


@pytest.fixture
def fake_namesrv():
    servers = []

    def start(**kw):
        srv = FakeNamesrv(**kw)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.close()


def test_requests_are_what_a_5x_broker_sends(fake_namesrv, brokersim):
    srv = fake_namesrv()
    sim = brokersim([srv], brokers=2, topics=3, slaves=1, timeout_ms=4000, heartbeat_ms=100, cluster="C9")
    assert sim.wait_ready(scaled(10))["ok"] == 4
    wait_until(lambda: len(srv.of_code(322)) >= 4, scaled(3))
    sim.stop("broker-0001", member=1)
    regs = srv.of_code(103)
    assert len(regs) == 4
    by_addr = {}
    for r in regs:
        assert r.version == 479 and r.language_name == "JAVA" and r.flag == 0
        ext = r.ext
        assert set(ext) == {"brokerAddr", "brokerId", "brokerName", "clusterName", "haServerAddr",
                            "enableActingMaster", "compressed", "bodyCrc32", "heartbeatTimeoutMillis"}
        assert ext["clusterName"] == "C9" and ext["enableActingMaster"] == "false"
        assert ext["compressed"] == "false" and ext["heartbeatTimeoutMillis"] == "4000"
        assert int(ext["bodyCrc32"]) == crc32_masked(r.body)
        assert ext["haServerAddr"] != ext["brokerAddr"]
        body = loads_lenient(r.body.decode())
        assert body["filterServerList"] == []
        wrapper = body["topicConfigSerializeWrapper"]
        assert wrapper["dataVersion"]["counter"] == 1
        names = set(wrapper["topicConfigTable"])
        assert {f"topic-{ext['brokerName']}-{i}" for i in range(3)} <= names
        by_addr[ext["brokerAddr"]] = (ext["brokerName"], ext["brokerId"])
    assert sorted(by_addr.values()) == [("broker-0000", "0"), ("broker-0000", "1"),
                                        ("broker-0001", "0"), ("broker-0001", "1")]
    hb = srv.of_code(322)[0]
    assert hb.flag == FLAG_ONEWAY
    assert set(hb.ext) == {"brokerName", "brokerAddr", "clusterName", "brokerId"}
    assert loads_lenient(hb.body.decode())["counter"] == 1
    (unreg,) = srv.of_code(104)
    assert unreg.ext["brokerName"] == "broker-0001" and unreg.ext["brokerId"] == "1"
    assert by_addr[unreg.ext["brokerAddr"]] == ("broker-0001", "1")


def test_several_responses_in_one_read(fake_namesrv, brokersim):
    srv = fake_namesrv(hold=4)
    sim = brokersim([srv], brokers=1, topics=2, sys_topics=False)
    wait_until(lambda: sim.list()[0]["links"] == ["up"], scaled(3))
    for _ in range(3):
        sim.bump("broker-0000")  # three more registrations on the same connection
    wait_until(lambda: sim.stats()["reg_ok"] == 4, scaled(3), msg="answers held back and sent together")
    st = sim.stats()
    assert st["rx_errors"] == 0 and st["rx_unmatched"] == 0 and st["lat_count"] == 4


def test_responses_split_into_single_bytes(fake_namesrv, brokersim):
    srv = fake_namesrv(bytewise=True)
    sim = brokersim([srv], brokers=5, topics=2)
    assert sim.wait_ready(scaled(20))["ok"] == 5
    st = sim.stats()
    assert st["reg_ok"] == 5 and st["rx_errors"] == 0


def test_bad_frame_drops_link_and_reconnects(fake_namesrv, brokersim):
    srv = fake_namesrv(garbage_first=True)
    sim = brokersim([srv], brokers=1, topics=2, extra_args=["--reconnect-max-ms", "200"])
    ready = sim.wait_ready(scaled(10))
    assert ready["ok"] == 0 and ready["failed"] == 1  # the first answer was garbage
    wait_until(lambda: sim.stats()["reg_ok"] == 1, scaled(3), msg="no registration after reconnect")
    st = sim.stats()
    assert st["rx_errors"] == 1 and st["reg_lost"] == 1 and st["connects"] == 2
