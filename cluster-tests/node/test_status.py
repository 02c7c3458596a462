"""The HTTP status endpoint (/health, /status, /metrics) and the `nsrvd status` CLI."""

import json
import os
import re
import signal
import socket
import urllib.error
import urllib.request

import pytest

from nsrv_check import register_ok, wait_until
from nsrvd_proc import free_port, free_port_pair, keygen, run_cli, scaled, write_properties
from rmq import Broker, NamesrvClient, RequestCode, ResponseCode, TopicConfig

T = [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TopicB", 4, 4, 6)]


@pytest.fixture
def status_node(nsrvd_factory):
    port = free_port()
    node = nsrvd_factory({"shutdownWaitTimeSeconds": 3, "statusPort": port, "statusAddress": "127.0.0.1"})
    node.status_port = port
    return node


def get(node, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{node.status_port}{path}", timeout=scaled(5)) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_status_lists_direct_brokers(status_node, connect):
    bconn = connect(status_node)
    b = Broker(name="broker-a", addr="127.0.0.1:10911")
    register_ok(NamesrvClient(bconn), b, T)
    code, body = get(status_node, "/status")
    assert code == 200
    st = json.loads(body)
    assert st["node"]["listenPort"] == status_node.port
    assert st["node"]["requestsTotal"] >= 1
    assert st["route"]["brokers"] == 1
    [br] = st["brokers"]
    assert (br["cluster"], br["brokerName"], br["brokerId"], br["brokerAddr"]) == (
        "DefaultCluster", "broker-a", 0, "127.0.0.1:10911")
    assert br["source"] == "direct" and br["connected"] is True
    assert 0 <= br["lastDirectAgeMs"] < 5000 and br["timeoutMs"] == 120000
    bconn.close()
    wait_until(lambda: json.loads(get(status_node, "/status")[1])["brokers"] == [], scaled(2),
               msg="broker still listed after its connection closed")


def test_health_and_metrics(status_node, connect):
    assert get(status_node, "/health") == (200, "ok\n")
    register_ok(NamesrvClient(connect(status_node)), Broker(), T)
    code, text = get(status_node, "/metrics")
    assert code == 200
    metrics = dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert metrics["nsrvd_brokers"] == "1"
    assert int(metrics["nsrvd_requests_total"]) >= 1
    assert get(status_node, "/nope")[0] == 404


def test_bad_http_requests_get_400_and_server_survives(status_node):
    for raw in (b"\x16\x03\x01\x00\x00\n\n", b"get / HTTP/1.1\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"A" * 8192):
        with socket.create_connection(("127.0.0.1", status_node.status_port), timeout=scaled(5)) as s:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            assert data.startswith(b"HTTP/1.1 400"), (raw[:20], data[:60])
    assert get(status_node, "/health")[0] == 200


def test_status_cli(status_node, connect, nsrvd_bin, tmp_path):
    # run_cli fails on any sanitizer report in the output; exit codes are exact.
    register_ok(NamesrvClient(connect(status_node)), Broker(name="broker-cli", addr="127.0.0.1:10999"), T)
    out = run_cli(nsrvd_bin, ["status", f"127.0.0.1:{status_node.status_port}"], workdir=tmp_path)
    text = out.stdout.decode()
    assert out.returncode == 0, out.stderr
    assert "broker-cli" in text and "127.0.0.1:10999" in text and "direct" in text
    # Ages for people ("0.4s", "12s", "3m05s"), not raw milliseconds.
    assert re.search(r"^node .*, up \d+\.\ds, port ", text, re.M), text
    assert " ms" not in text, text
    out = run_cli(nsrvd_bin, ["status", "--json", f"127.0.0.1:{status_node.status_port}"], workdir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["brokers"][0]["brokerName"] == "broker-cli"
    bad = run_cli(nsrvd_bin, ["status", f"127.0.0.1:{free_port()}"], workdir=tmp_path)
    assert bad.returncode == 1 and "cannot connect" in bad.stderr.decode(), bad
    usage = run_cli(nsrvd_bin, ["status", "--bogus"], workdir=tmp_path)
    assert usage.returncode == 1 and "usage: nsrvd status" in usage.stderr.decode(), usage


PACKAGED_CONFIG = "/etc/nsrvd/nsrvd.properties"


def test_status_cli_reads_the_config_file(status_node, connect, nsrvd_bin, tmp_path):
    """`nsrvd status -c FILE` finds the node as the node itself does (the same -c file), a
    listener on every address through loopback, and names the key to set when there is none."""
    register_ok(NamesrvClient(connect(status_node)), Broker(name="broker-c", addr="127.0.0.1:10998"), T)
    out = run_cli(nsrvd_bin, ["status", "-c", str(status_node.config_path)], workdir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "broker-c" in out.stdout.decode()
    wild = tmp_path / "wild.properties"
    write_properties(wild, {"statusAddress": "0.0.0.0", "statusPort": status_node.status_port})
    out = run_cli(nsrvd_bin, ["status", "--json", "-c", str(wild)], workdir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["node"]["listenPort"] == status_node.port
    off = tmp_path / "off.properties"
    write_properties(off, {"listenPort": status_node.port})
    out = run_cli(nsrvd_bin, ["status", "-c", str(off)], workdir=tmp_path)
    err = out.stderr.decode()
    assert out.returncode == 1 and str(off) in err and "statusPort=0" in err and "set statusPort" in err, err
    both = run_cli(nsrvd_bin, ["status", "-c", str(off), f"127.0.0.1:{status_node.status_port}"], workdir=tmp_path)
    assert both.returncode == 1 and "not both" in both.stderr.decode(), both


def test_status_cli_without_an_address(nsrvd_bin, tmp_path):
    """No HOST:PORT and no -c: the packaged configuration, else which key and argument to give
    (statusPort is 0, off, by default: there is no port to guess)."""
    out = run_cli(nsrvd_bin, ["status"], workdir=tmp_path)
    err = out.stderr.decode()
    if os.path.exists(PACKAGED_CONFIG):  # a machine with the package: that file is the one read
        assert out.returncode == 0 or PACKAGED_CONFIG in err, (out.returncode, err)
        return
    assert out.returncode == 1, (out.stdout, err)
    assert PACKAGED_CONFIG in err and "HOST:PORT" in err and "-c FILE" in err and "statusPort" in err, err
    assert "cannot connect" not in err, err


def test_status_cli_names_the_nameserver_port(status_node, nsrvd_bin, tmp_path):
    """Pointed at the NameServer port (listenPort), which answers RocketMQ frames and not HTTP,
    `nsrvd status` says so and names the status listener, instead of 'unexpected reply'."""
    out = run_cli(nsrvd_bin, ["status", f"127.0.0.1:{status_node.port}"], workdir=tmp_path)
    err = out.stderr.decode()
    assert out.returncode == 1, (out.stdout, err)
    assert f"127.0.0.1:{status_node.port} looks like the NameServer port" in err and "statusPort" in err, err
    # Through a configuration whose statusPort is wrongly the NameServer's: the file's value is named.
    wrong = tmp_path / "wrong.properties"
    write_properties(wrong, {"statusPort": status_node.port})
    out = run_cli(nsrvd_bin, ["status", "-c", str(wrong)], workdir=tmp_path)
    err = out.stderr.decode()
    assert out.returncode == 1 and "looks like the NameServer port" in err, err
    assert f"the status listener of {wrong} is statusPort={status_node.port}" in err, err
    # A port that answers neither HTTP nor RocketMQ is not called a NameServer.
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        out = run_cli(nsrvd_bin, ["status", f"127.0.0.1:{srv.getsockname()[1]}"], workdir=tmp_path, timeout=30)
    err = out.stderr.decode()
    assert out.returncode == 1 and "gave no HTTP reply" in err and "NameServer" not in err, err
    assert get(status_node, "/health")[0] == 200  # the probe did the node no harm


def test_health_reports_shutdown(status_node, connect):
    conn = connect(status_node)  # an open connection keeps the node draining briefly
    conn.sock.sendall(b"\x00\x00")  # half a frame: the node waits for the rest
    status_node.signal(signal.SIGTERM)
    wait_until(lambda: get(status_node, "/health")[0] == 503, scaled(2), msg="health did not turn 503")
    conn.close()
    status_node._stopped_by_test = True
    assert status_node.wait(scaled(5)) == 0


def test_metrics_by_code_latency_sizes_pass_promtool(status_node, connect):
    """Per-code counters, response codes, latency histograms and table sizes, in a page
    promtool accepts (lib/promtext.py)."""
    from promtext import scrape

    conn = connect(status_node)
    ns = NamesrvClient(conn)
    register_ok(ns, Broker(name="broker-m", addr="127.0.0.1:10911"), T)
    assert ns.get_route("TopicTest").code == ResponseCode.SUCCESS
    assert ns.get_route("NoSuchTopic").code == ResponseCode.TOPIC_NOT_EXIST
    assert ns.put_kv("ns-metrics", "k1", "v1").code == ResponseCode.SUCCESS  # a deferred reply
    conn.request(9999)  # a code nsrvd does not serve
    m = scrape(status_node.status_port, timeout=scaled(10))
    def by_code(req):
        return m.get("nsrvd_requests_by_code_total", request=req, code=str(getattr(RequestCode, req)))

    assert by_code("REGISTER_BROKER") == 1 and by_code("GET_ROUTEINFO_BY_TOPIC") == 2
    assert by_code("PUT_KV_CONFIG") == 1 and by_code("GET_KV_CONFIG") == 0
    assert m.get("nsrvd_requests_by_code_total", request="OTHER", code="-1") == 1
    assert m.get("nsrvd_requests_total") == 5
    assert m.get("nsrvd_responses_total", code="17", response="TOPIC_NOT_EXIST") == 1
    assert m.get("nsrvd_responses_total", code="3", response="REQUEST_CODE_NOT_SUPPORTED") == 1
    assert m.get("nsrvd_responses_total", code="0", response="SUCCESS") == 3
    assert m.get("nsrvd_request_responses_total", request="GET_ROUTEINFO_BY_TOPIC", response="SUCCESS") == 1
    assert m.get("nsrvd_request_responses_total", request="PUT_KV_CONFIG", response="SUCCESS") == 1
    for req, n in (("GET_ROUTEINFO_BY_TOPIC", 2), ("PUT_KV_CONFIG", 1), ("REGISTER_BROKER", 1)):
        assert m.get("nsrvd_request_duration_seconds_count", request=req) == n
        assert m.get("nsrvd_request_duration_seconds_bucket", request=req, le="+Inf") == n
        assert m.get("nsrvd_request_duration_seconds_sum", request=req) > 0
    assert m.get("nsrvd_request_duration_seconds_count", request="GET_KV_CONFIG") is None
    assert (m.get("nsrvd_topics"), m.get("nsrvd_clusters"), m.get("nsrvd_broker_names")) == (2, 1, 1)
    assert (m.get("nsrvd_kv_entries"), m.get("nsrvd_kv_namespaces")) == (1, 1)
    assert m.get("nsrvd_connections") == 1 and m.get("nsrvd_connections_accepted_total") == 1
    assert m.get("nsrvd_received_bytes_total") > 0 and m.get("nsrvd_sent_bytes_total") > 0
    [(labels, one)] = m.named("nsrvd_build_info").items()
    assert one == 1 and dict(labels)["version"]


def test_ready_without_gossip_then_draining(status_node, connect):
    # GET /ready: 200 only when the node is ready, 503 with the reason otherwise.
    assert get(status_node, "/ready") == (200, "ready\n")
    conn = connect(status_node)  # an open connection keeps the node draining
    conn.sock.sendall(b"\x00\x00")  # half a frame: the node waits for the rest
    status_node.signal(signal.SIGTERM)
    wait_until(lambda: get(status_node, "/ready")[0] == 503, scaled(2), msg="ready did not turn 503")
    assert get(status_node, "/ready") == (503, "not ready: draining (shutting down)\n")
    conn.close()
    status_node._stopped_by_test = True
    assert status_node.wait(scaled(5)) == 0


def test_ready_waits_for_a_pull_in_the_start_up_window(nsrvd_factory, nsrvd_bin, tmp_path):
    # Gossip on, its one peer never answers: not ready until a pull succeeds or 30 s pass.
    tokens = [keygen(nsrvd_bin, tmp_path / f"n{node_id}.key", node_id) for node_id in (1, 2)]
    port = free_port()
    node = nsrvd_factory({"statusPort": port, "statusAddress": "127.0.0.1", "gossipEnable": True,
                          "gossipNodeId": 1, "gossipPort": free_port_pair(), "gossipListenAddress": "127.0.0.1",
                          "gossipSecretKeyFile": str(tmp_path / "n1.key"),
                          "gossipStatePath": str(tmp_path / "gossip.state"),
                          "gossipPeers": f"2@127.0.0.1:{free_port_pair()}", "gossipPeerKeys": ",".join(tokens)})
    node.status_port = port
    code, body = get(node, "/ready")
    assert code == 503, body
    assert body.startswith("not ready: no pull from a peer yet (start-up window 30 s, ") and \
        body.endswith(" left)\n"), body
    # /health is about being alive, not ready: it stays 200.
    assert get(node, "/health")[0] == 200
