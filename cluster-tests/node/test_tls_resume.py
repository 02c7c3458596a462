"""TLS 1.3 session resumption (docs/design/tls-and-access.md "Session resumption"), with Python's
ssl module as the client: a client that kept its session ticket reconnects with an abbreviated
handshake (no certificate sent or checked), which is what a fleet reconnecting after a network
blip needs; tlsSessionTicketSeconds=0 turns tickets off; a SIGHUP reload renews the ticket keys,
so a ticket issued before it only gets a full handshake (with the reloaded certificate)."""

from __future__ import annotations

import socket
import ssl


from nsrv_check import wait_until
from nsrvd_proc import scaled
from rmq import Connection
from test_tls import HS_OK, Pki, client_ctx, cluster_info_ok, metrics, start  # noqa: F401 (start: a fixture)


def connect(node, ctx, session=None) -> Connection:
    raw = socket.create_connection(("127.0.0.1", node.port), timeout=scaled(5))
    s = ctx.wrap_socket(raw, session=session, suppress_ragged_eofs=False)
    return Connection("127.0.0.1", node.port, sock=s, timeout=scaled(5))


def session_after_a_request(node, ctx) -> tuple[ssl.SSLSession, bool]:
    """Connects (resuming `ctx`'s last session if any), asks one thing and returns the session
    the server left the client (TLS 1.3 tickets arrive after the handshake) and whether this
    connection was resumed."""
    c = connect(node, ctx, getattr(ctx, "last_session", None))
    try:
        assert c.sock.version() == "TLSv1.3"
        cluster_info_ok(c)
        ctx.last_session = c.sock.session
        return c.sock.session, c.sock.session_reused
    finally:
        c.close()


def test_a_ticket_resumes_the_session(start):
    node = start()
    ctx = client_ctx()
    first, reused = session_after_a_request(node, ctx)
    assert not reused
    assert first.has_ticket, "the server issued no session ticket"
    assert 0 < first.ticket_lifetime_hint <= 86400
    for _ in range(3):
        _, reused = session_after_a_request(node, ctx)
        assert reused, "a reconnect with a fresh ticket got a full handshake"
    assert metrics(node)[HS_OK] == 4


def test_tickets_off(start):
    node = start(tlsSessionTicketSeconds=0)
    ctx = client_ctx()
    first, _ = session_after_a_request(node, ctx)
    assert not first.has_ticket
    _, reused = session_after_a_request(node, ctx)
    assert not reused
    assert "session tickets off" in node.output()


def test_ticket_lifetime_is_the_configured_one(start):
    node = start(tlsSessionTicketSeconds=600)
    first, _ = session_after_a_request(node, client_ctx())
    assert first.ticket_lifetime_hint == 600


def test_resumes_with_a_required_client_certificate(start, tmp_path):
    pki = Pki(tmp_path)
    node = start(**{"tls.server.need.client.auth": "require", "tls.server.authClient": "true",
                    "tls.server.trustCertPath": pki.ca_path})
    cert, key, _ = pki.issue("client-ca")
    ctx = client_ctx(cert, key)
    session_after_a_request(node, ctx)
    _, reused = session_after_a_request(node, ctx)
    assert reused


def test_sighup_renews_the_ticket_keys(start, tmp_path):
    pki = Pki(tmp_path)
    cert, key, der1 = pki.issue("server-one")
    node = start(**{"tls.server.certPath": cert, "tls.server.keyPath": key})
    ctx = client_ctx()
    session_after_a_request(node, ctx)
    cert2, key2, der2 = pki.issue("server-two")
    cert.write_bytes(cert2.read_bytes())
    key.write_bytes(key2.read_bytes())
    node.signal(1)  # SIGHUP
    wait_until(lambda: "SIGHUP: new connections use" in node.output(), scaled(5), msg="no reload line")
    # The old ticket is not accepted: a full handshake, with the new certificate.
    c = connect(node, ctx, ctx.last_session)
    try:
        assert not c.sock.session_reused
        assert c.sock.getpeercert(binary_form=True) == der2
        cluster_info_ok(c)
        ctx.last_session = c.sock.session
    finally:
        c.close()
    _, reused = session_after_a_request(node, ctx)
    assert reused, "a ticket of the reloaded keys is not accepted"


def test_out_of_range_lifetime_stops_the_start(nsrvd_bin, tmp_path):
    from test_tls import failed_start

    out = failed_start(nsrvd_bin, tmp_path, {"tlsSessionTicketSeconds": "604801"})
    assert "tlsSessionTicketSeconds" in out
