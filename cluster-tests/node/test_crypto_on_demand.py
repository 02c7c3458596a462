"""OpenSSL only when it is used (docs/benchmarks.md, include/nsrv/crypto.h): TLS and the ACL
signature live in nsrvd-crypto.so, which nsrvd loads at start when TLS needs a certificate
there or adminAclEnable is on, at the first TLS handshake in the default set-up (permissive,
test mode's self-signed certificate), and on SIGHUP when the reloaded keys ask for it. A node
that serves only plaintext never maps libssl or libcrypto (whose text would be resident in it,
4.6 MB). A missing module stops a start that needs it and nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

from nsrv_check import wait_until
from nsrvd_proc import NsrvdProcess, scaled, write_properties
from rmq import Connection, NamesrvClient, RequestCode, ResponseCode
from test_acl import ACCESS_KEY, SECRET, sign, write_keys
from test_tls import Pki, cluster_info_ok, served_cert, tls_conn

OPENSSL = ("libcrypto.so", "libssl.so", "nsrvd-crypto.so")


def openssl_mapped(node) -> bool:
    maps = Path(f"/proc/{node.pid}/maps").read_text()
    return any(lib in maps for lib in OPENSSL)


def start_node(nsrvd_factory, **props):
    cfg = {"shutdownWaitTimeSeconds": 3, "logLevel": "info", "tls.config.file": ""}
    cfg.update(props)
    return nsrvd_factory(cfg)


def reload_with(node, **props) -> None:
    node.config.update(props)
    write_properties(node.config_path, node.config)
    node.signal(1)  # SIGHUP


def test_plaintext_node_maps_no_openssl_until_a_tls_client(nsrvd_factory):
    node = start_node(nsrvd_factory)  # permissive, test mode: the defaults
    plain = Connection("127.0.0.1", node.port, timeout=scaled(5))
    cluster_info_ok(plain)
    assert not openssl_mapped(node)
    assert "self-signed at the first TLS handshake" in node.output()
    c = tls_conn(node)
    assert c.sock.version() == "TLSv1.3"
    cluster_info_ok(c)
    assert openssl_mapped(node)
    assert "first TLS handshake: tls.server.mode=permissive" in node.output()
    cluster_info_ok(plain)
    c.close()
    plain.close()


def test_tls_disabled_maps_no_openssl(nsrvd_factory):
    node = start_node(nsrvd_factory, **{"tls.server.mode": "disabled"})
    cluster_info_ok(Connection("127.0.0.1", node.port, timeout=scaled(5)))
    assert not openssl_mapped(node)


def test_acl_enabled_by_sighup_loads_the_module(nsrvd_factory, tmp_path):
    node = start_node(nsrvd_factory)
    assert not openssl_mapped(node)
    keys = tmp_path / "acl.keys"
    write_keys(keys, f"{ACCESS_KEY}={SECRET}\n")
    reload_with(node, adminAclEnable="true", adminAclFile=str(keys))
    ns = NamesrvClient(Connection("127.0.0.1", node.port, timeout=scaled(5)))
    put = {"namespace": "ns", "key": "k", "value": "v"}
    wait_until(lambda: ns.conn.request(RequestCode.PUT_KV_CONFIG, put).code != ResponseCode.SUCCESS,
               scaled(5), msg="the ACL reload did not apply")
    assert ns.conn.request(RequestCode.PUT_KV_CONFIG, sign(put, None)).code == ResponseCode.SUCCESS
    assert openssl_mapped(node)


def test_sighup_naming_a_certificate_loads_it(nsrvd_factory, tmp_path):
    node = start_node(nsrvd_factory)
    assert not openssl_mapped(node)
    cert, key, der = Pki(tmp_path).issue("server-one")
    reload_with(node, **{"tls.server.certPath": str(cert), "tls.server.keyPath": str(key)})
    wait_until(lambda: "SIGHUP: new connections use" in node.output(), scaled(5), msg="no reload line")
    assert served_cert(node) == der


def test_missing_module_stops_only_the_starts_that_need_it(nsrvd_bin, tmp_path):
    lonely = tmp_path / "bin" / "nsrvd"  # a copy with no nsrvd-crypto.so beside it
    lonely.parent.mkdir()
    shutil.copy2(nsrvd_bin, lonely)
    p = NsrvdProcess(str(lonely), tmp_path / "refused", {"tls.config.file": ""}, name="refused")
    p.start(wait_boot=False)
    rc = p.wait(scaled(10))
    if rc is None:
        p.kill()
    assert rc == 1, p.tail()
    assert "nsrvd-crypto.so (TLS and ACL signatures) is neither in" in p.output()
    ok = NsrvdProcess(str(lonely), tmp_path / "plain", {"tls.config.file": "", "tls.server.mode": "disabled",
                                                        "shutdownWaitTimeSeconds": 3}, name="plain")
    ok.start()
    try:
        cluster_info_ok(Connection("127.0.0.1", ok.port, timeout=scaled(5)))
    finally:
        assert ok.terminate() == 0
