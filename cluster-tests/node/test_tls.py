"""TLS on the NameServer port (docs/design/tls-and-access.md "TLS"), with Python's ssl module as the client.

tls.server.mode decides by the first byte of a connection, as Java's HandshakeHandler does:
disabled closes a TLS handshake, permissive (the default) serves TLS and plaintext on the same
port, enforcing closes plaintext. Certificates: the test-mode self-signed one made at start, or
configured files (a password-protected key included), reloaded on SIGHUP; client certificates
none / optional / require, verified against tls.server.trustCertPath when authClient=true.
Replies, back-pressure, frame limits and the graceful close (close_notify) work as on
plaintext connections."""

from __future__ import annotations

import datetime
import socket
import ssl
import struct
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nsrv_check import assert_code, register_ok, wait_until
from nsrvd_proc import NsrvdProcess, free_port, scaled
from rmq import Broker, Connection, NamesrvClient, RequestCode, TopicConfig, decode_frame, encode_frame, make_request

# A ClientHello record header promising 512 bytes, then only part of them.
PARTIAL_CLIENT_HELLO = bytes.fromhex("1603010200010001fc0303") + b"\x01" * 32 + b"\x00" * 64
BIG_TOPICS = [TopicConfig(f"BigTopic-{i:05d}", 4, 4, 6) for i in range(1000)]


# ---------------------------------------------------------------- certificates


class Pki:
    """A CA, a server certificate for localhost and client certificates, as PEM files."""

    def __init__(self, d: Path, name: str = "pki") -> None:
        self.dir = d / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca_cert = self._cert("test-ca", self.ca_key.public_key(), self.ca_key, None, ca=True)
        self.ca_path = self._write("ca.pem", self.ca_cert)

    def _cert(self, cn, pub, signer_key, issuer, ca=False):
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        b = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer.subject if issuer is not None else name)
            .public_key(pub)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        return b.sign(signer_key, hashes.SHA256())

    def _write(self, name, cert) -> Path:
        p = self.dir / name
        p.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return p

    def issue(self, cn: str, *, password: str | None = None, self_signed: bool = False):
        """(cert_path, key_path, cert DER) signed by the CA (or by itself); the key is
        PKCS#8, encrypted when password is given (as Java's TlsHelper expects)."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            self._cert(cn, key.public_key(), key, None)
            if self_signed
            else self._cert(cn, key.public_key(), self.ca_key, self.ca_cert)
        )
        enc = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        key_path = self.dir / f"{cn}.key"
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))
        return self._write(f"{cn}.pem", cert), key_path, cert.public_bytes(serialization.Encoding.DER)


@pytest.fixture
def pki(tmp_path) -> Pki:
    return Pki(tmp_path)


# ---------------------------------------------------------------- clients


def client_ctx(cert=None, key=None) -> ssl.SSLContext:
    """A client in Java's test mode: any server certificate is accepted."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def tls_socket(node, ctx=None, rcvbuf=None) -> ssl.SSLSocket:
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.settimeout(scaled(5))
    raw.connect(("127.0.0.1", node.port))
    # Ragged EOFs raise: a close without close_notify must be visible.
    return (ctx or client_ctx()).wrap_socket(raw, suppress_ragged_eofs=False)


def tls_conn(node, ctx=None, **kw) -> Connection:
    return Connection("127.0.0.1", node.port, sock=tls_socket(node, ctx, **kw), timeout=scaled(5))


def served_cert(node) -> bytes:
    with tls_socket(node) as s:
        return s.getpeercert(binary_form=True)


def cluster_info_ok(c: Connection) -> None:
    assert_code(c.request(RequestCode.GET_BROKER_CLUSTER_INFO), 0)


def tls_refused(node, ctx) -> bool:
    """True if the handshake or the first request over it fails (TLS 1.3 reports a refused
    client certificate only after the client's side of the handshake completed)."""
    try:
        c = tls_conn(node, ctx)
    except (ssl.SSLError, ConnectionError, OSError):
        return True
    try:
        cluster_info_ok(c)
        return False
    except (ssl.SSLError, ConnectionError, OSError):
        return True
    finally:
        c.close()


def closed_without_reply(node, data: bytes) -> bool:
    c = Connection("127.0.0.1", node.port, timeout=scaled(5))
    try:
        c.send_raw(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        return c.wait_closed(scaled(3)) == b""
    finally:
        c.close()


def metrics(node) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{node.status_port}/metrics", timeout=scaled(5)) as r:
        text = r.read().decode()
    return {k: float(v) for k, v in (ln.rsplit(" ", 1) for ln in text.splitlines() if ln and ln[0] != "#")}


HS_OK = 'nsrvd_tls_handshakes_total{result="ok"}'
HS_FAILED = 'nsrvd_tls_handshakes_total{result="failed"}'


@pytest.fixture
def start(nsrvd_factory):
    """start(**props) -> a node with a status port and no tls.config.file of the machine."""

    def _start(**props):
        cfg = {"shutdownWaitTimeSeconds": 3, "statusPort": free_port(), "logLevel": "info", "tls.config.file": ""}
        cfg.update(props)
        n = nsrvd_factory(cfg)
        n.status_port = cfg["statusPort"]
        return n

    return _start


# ---------------------------------------------------------------- modes


def test_permissive_default_serves_tls_and_plaintext_on_one_port(start):
    node = start()
    c = tls_conn(node)
    assert c.sock.version() == "TLSv1.3"
    register_ok(NamesrvClient(c), Broker(), [TopicConfig("TopicTest", 4, 4, 6), TopicConfig("T2", 4, 4, 6)])
    plain = Connection("127.0.0.1", node.port, timeout=scaled(5))
    route = NamesrvClient(plain).get_route("TopicTest")
    assert_code(route, 0)
    assert b'"brokerName":"broker-a"' in route.body
    # The same route over TLS (a cached route body: written flat through the session).
    tls_route = NamesrvClient(c).get_route("TopicTest")
    assert_code(tls_route, 0)
    assert tls_route.body == route.body
    # Test mode: a certificate made at start, for localhost, signed by itself.
    cert = x509.load_der_x509_certificate(c.sock.getpeercert(binary_form=True))
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "localhost"
    assert metrics(node)[HS_OK] == 1
    assert "tls.server.mode=permissive, certificate self-signed (test mode)" in node.output()
    plain.close()
    c.close()


def test_disabled_closes_a_tls_handshake_and_serves_plaintext(start):
    node = start(**{"tls.server.mode": "disabled"})
    assert closed_without_reply(node, PARTIAL_CLIENT_HELLO)
    assert tls_refused(node, client_ctx())
    c = Connection("127.0.0.1", node.port, timeout=scaled(5))
    cluster_info_ok(c)
    c.close()
    m = metrics(node)
    assert m['nsrvd_tls_first_byte_refused_total{reason="tls_disabled"}'] == 2
    assert m[HS_OK] == 0


def test_enforcing_closes_plaintext_and_serves_tls(start):
    node = start(**{"tls.server.mode": "enforcing"})
    frame = encode_frame(make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {}, opaque=7))
    assert closed_without_reply(node, frame)
    c = tls_conn(node)
    cluster_info_ok(c)
    c.close()
    m = metrics(node)
    assert m['nsrvd_tls_first_byte_refused_total{reason="plaintext_enforcing"}'] == 1
    assert m[HS_OK] == 1
    assert "plaintext while tls.server.mode=enforcing" in node.output()


def test_partial_client_hello_waits_and_bad_handshake_closes(start):
    node = start()
    # Part of a record: the engine waits for the rest, as for a partial frame.
    c = Connection("127.0.0.1", node.port, timeout=scaled(5))
    c.send_raw(PARTIAL_CLIENT_HELLO)
    assert c.is_open(0.3)
    # A whole record that is no ClientHello: an alert at most, then the close.
    bad = Connection("127.0.0.1", node.port, timeout=scaled(5))
    bad.send_raw(bytes.fromhex("1603010010") + b"\xff" * 16)
    got = bad.wait_closed(scaled(3))
    assert got == b"" or got[0] == 0x15, got  # 0x15: an alert record
    wait_until(lambda: metrics(node)[HS_FAILED] == 1, scaled(3), msg="failed handshake not counted")
    cluster_info_ok(tls_conn(node))
    c.close()
    bad.close()


# ---------------------------------------------------------------- certificates


def test_configured_certificate_with_key_password(start, pki):
    cert, key, der = pki.issue("nsrvd-server", password="changeit")
    node = start(**{"tls.server.certPath": cert, "tls.server.keyPath": key, "tls.server.keyPassword": "changeit"})
    assert served_cert(node) == der
    cluster_info_ok(tls_conn(node))
    # The password never leaves the node.
    cfg = NamesrvClient(Connection("127.0.0.1", node.port, timeout=scaled(5))).get_config()
    assert b"changeit" not in cfg.body and b"tls.server.certPath" in cfg.body


def failed_start(nsrvd_bin, tmp_path, cfg) -> str:
    """Starts a node that must refuse to start: exit code 1, no boot line; its output."""
    p = NsrvdProcess(nsrvd_bin, tmp_path / "refused", {"tls.config.file": "", **cfg}, name="refused")
    p.start(wait_boot=False)
    rc = p.wait(10)
    if rc is None:
        p.kill()
    assert rc == 1, p.tail()
    assert "boot success" not in p.output()
    return p.output()


def test_wrong_key_password_stops_the_start(nsrvd_bin, tmp_path, pki):
    cert, key, _ = pki.issue("nsrvd-server", password="changeit")
    cfg = {"tls.server.certPath": cert, "tls.server.keyPath": key, "tls.server.keyPassword": "wrong"}
    out = failed_start(nsrvd_bin, tmp_path, cfg)
    assert "cannot read tls.server.keyPath (with tls.server.keyPassword)" in out


def test_test_mode_off_needs_a_certificate(nsrvd_bin, tmp_path):
    out = failed_start(nsrvd_bin, tmp_path, {"tls.test.mode.enable": "false"})
    assert "tls.test.mode.enable=false needs tls.server.certPath" in out


def test_tls_config_file_overrides_the_properties(start, pki, tmp_path):
    cert, key, der = pki.issue("from-tls-file")
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={cert}\ntls.server.keyPath={key}\n"
                        "tls.test.mode.enable=false\n")
    node = start(**{"tls.config.file": tls_file, "tls.server.mode": "permissive"})
    assert served_cert(node) == der
    frame = encode_frame(make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {}, opaque=7))
    assert closed_without_reply(node, frame)


@pytest.mark.slow
def test_sighup_serves_the_new_certificate_to_new_connections(start, pki):
    cert, key, der1 = pki.issue("server-one")
    node = start(**{"tls.server.certPath": cert, "tls.server.keyPath": key})
    old = tls_conn(node)
    assert old.sock.getpeercert(binary_form=True) == der1
    cert2, key2, der2 = pki.issue("server-two")
    cert.write_bytes(cert2.read_bytes())
    key.write_bytes(key2.read_bytes())
    node.signal(1)  # SIGHUP
    wait_until(lambda: "SIGHUP: new connections use" in node.output(), scaled(5), msg="no reload line")
    assert served_cert(node) == der2
    cluster_info_ok(old)  # open connections keep their session
    # A broken key is refused and the running certificate stays.
    key.write_text("not a key\n")
    node.signal(1)
    wait_until(lambda: "keeping the running certificate" in node.output(), scaled(5), msg="no refusal line")
    assert served_cert(node) == der2
    old.close()


# ---------------------------------------------------------------- client certificates


@pytest.mark.parametrize(
    "need,auth_client,presented,refused",
    [
        ("none", "true", None, False),
        ("optional", "true", None, False),
        ("optional", "true", "ca", False),
        ("optional", "true", "rogue", True),
        ("require", "true", None, True),
        ("require", "true", "ca", False),
        ("require", "true", "rogue", True),
        # Java's default authClient=false: any certificate, but one is still required.
        ("require", "false", "rogue", False),
        ("require", "false", None, True),
    ],
)
def test_client_certificates(start, pki, need, auth_client, presented, refused):
    node = start(**{"tls.server.need.client.auth": need, "tls.server.authClient": auth_client,
                    "tls.server.trustCertPath": pki.ca_path})
    ctx = client_ctx()
    if presented:
        cert, key, _ = pki.issue(f"client-{presented}", self_signed=presented == "rogue")
        ctx = client_ctx(cert, key)
    assert tls_refused(node, ctx) == refused
    if presented and not refused and need != "none":
        wait_until(lambda: f"client certificate CN=client-{presented}" in node.output(), scaled(3),
                   msg="the accepted client certificate is not logged")


# ---------------------------------------------------------------- connection behaviour


def test_large_replies_and_back_pressure_over_tls(start):
    """A TLS client pipelines requests with ~30 KB replies and does not read: the server stops
    at connOutputLimitBytes (it does not run every request), then all replies arrive in order."""
    node = start(connOutputLimitBytes=1048576)
    holder = tls_conn(node)  # its broker stays registered while it is open
    register_ok(NamesrvClient(holder), Broker(name="broker-big", addr="127.0.0.1:12000"), BIG_TOPICS)
    n = 1000  # ~17 MB of replies; the kernel buffers hold ~4 MB of them
    c = tls_conn(node, rcvbuf=4096)
    before = metrics(node)["nsrvd_requests_total"]
    reqs = [make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1000 + i) for i in range(n)]
    c.sock.sendall(b"".join(encode_frame(r) for r in reqs))
    # The server runs requests until a megabyte is queued, then waits for us.
    m = wait_blocked(node, before)
    ran = m["nsrvd_requests_total"] - before
    assert 0 < ran < n / 2, f"{ran} of {n} requests ran while the client read nothing"
    assert m["nsrvd_output_queued_bytes"] <= 1048576 + 512 * 1024, m
    got = [c.recv(scaled(30)) for _ in range(n)]
    assert [g.opaque for g in got] == [r.opaque for r in reqs]
    assert all(g.code == 0 and b"BigTopic-00999" in g.body for g in got)
    c.close()


def test_frame_limit_over_tls(start):
    node = start(maxFrameLength=65536)
    c = tls_conn(node)
    c.send_raw(struct.pack(">i", 65536) + b"\x00" * 64)  # total 65540 > maxFrameLength
    with pytest.raises((ConnectionError, ssl.SSLError, socket.timeout)):
        c.recv(scaled(3))
    assert c.closed_by_peer
    assert metrics(node)["nsrvd_bad_frames_total"] == 1
    c.close()


def wait_blocked(node, before):
    """Waits until the node stops running requests (back-pressure); returns the metrics."""
    last = None
    deadline = time.monotonic() + scaled(10)
    while time.monotonic() < deadline:
        m = metrics(node)
        if m["nsrvd_requests_total"] > before and m["nsrvd_requests_total"] == last:
            return m
        last = m["nsrvd_requests_total"]
        time.sleep(0.3)
    return m


@pytest.mark.slow
def test_shutdown_sends_close_notify_after_the_last_reply(start):
    """SIGTERM while a TLS client has megabytes of replies pending: every reply arrives, then
    close_notify (a close without it raises SSLEOFError here)."""
    node = start(connOutputLimitBytes=1048576, shutdownWaitTimeSeconds=30)
    holder = tls_conn(node)
    topics = [TopicConfig(f"HugeTopic-{i:05d}", 4, 4, 6) for i in range(4000)]  # ~70 KB replies
    register_ok(NamesrvClient(holder), Broker(name="broker-big", addr="127.0.0.1:12000"), topics)
    c = tls_conn(node, rcvbuf=4096)
    before = metrics(node)["nsrvd_requests_total"]
    # Version 4.9.7: served to the end, no GO_AWAY. ~10 KB of requests: one TLS record, read
    # at once, so the node holds them all when the signal comes.
    reqs = [c.build(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, version=399) for _ in range(150)]
    c.sock.sendall(b"".join(encode_frame(r) for r in reqs))
    m = wait_blocked(node, before)
    assert m["nsrvd_requests_total"] - before < len(reqs), "no reply was pending at the signal"
    node.signal(15)
    got = [c.recv(scaled(30)) for _ in reqs]
    assert [g.opaque for g in got] == [r.opaque for r in reqs]
    assert all(g.code == 0 and b"HugeTopic-03999" in g.body for g in got)
    c.sock.settimeout(scaled(10))
    assert c.sock.recv(100) == b""
    assert node.wait(10) == 0
    assert "shutdown wait over" not in node.output()
    c.close()
    holder.close()


class MemoryTls:
    """A TLS client whose records we cut ourselves: ssl.SSLObject over memory, a plain socket."""

    def __init__(self, node):
        self.sock = socket.create_connection(("127.0.0.1", node.port), timeout=scaled(5))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle delay on a part
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = client_ctx().wrap_bio(self.inc, self.out)
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.out.read())
                self.inc.write(self.sock.recv(65536))
        self.sock.sendall(self.out.read())  # the client's Finished

    def record(self, data: bytes) -> bytes:
        self.obj.write(data)
        return self.out.read()

    def read_frame(self):
        buf = b""
        while True:
            try:
                chunk = self.obj.read(65536)
                assert chunk, "close_notify before the reply"
                buf += chunk
            except ssl.SSLWantReadError:
                data = self.sock.recv(65536)
                assert data, "closed before the reply"
                self.inc.write(data)
                continue
            cmd, used = decode_frame(buf)
            if cmd is not None:
                return cmd

    def read_close_notify(self) -> bool:
        while True:
            try:
                if self.obj.read(65536) == b"":  # what SSLObject returns on close_notify
                    return True
            except ssl.SSLZeroReturnError:
                return True
            except ssl.SSLWantReadError:
                data = self.sock.recv(65536)
                if not data:
                    return False  # a bare FIN
                self.inc.write(data)


def test_shutdown_waits_for_a_request_cut_inside_a_tls_record(start):
    """Part of a TLS record is a request in flight: at SIGTERM the connection stays until the
    record completes, its reply is sent, then close_notify."""
    node = start(shutdownWaitTimeSeconds=10)
    c = MemoryTls(node)
    req = make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {}, opaque=4242, version=399)
    rec = c.record(encode_frame(req))
    c.sock.sendall(rec[:10])
    wait_until(lambda: metrics(node)["nsrvd_connections"] == 1, scaled(3))
    node.signal(15)
    wait_until(lambda: "shutting down, 1 connection(s) open" in node.output(), scaled(5), msg="no shutdown line")
    time.sleep(0.2)  # a wrong close would come at once; give it the chance to show
    c.sock.sendall(rec[10:])
    reply = c.read_frame()
    assert reply.opaque == 4242 and reply.code == 0
    assert c.read_close_notify()
    assert node.wait(10) == 0
    c.sock.close()


def test_idle_tls_connection_closed_mid_handshake(start):
    node = start(serverChannelMaxIdleTimeSeconds=1)
    c = Connection("127.0.0.1", node.port, timeout=scaled(5))
    c.send_raw(PARTIAL_CLIENT_HELLO)
    t0 = time.monotonic()
    assert c.wait_closed(scaled(5)) == b""
    assert time.monotonic() - t0 >= 0.5
    c.close()
