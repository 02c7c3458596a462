"""systemd Type=notify (conf/nsrvd.service): READY=1 once ready by the rule of GET /ready (at
once without gossip: the listener accepts), STOPPING=1
when SIGTERM starts the graceful shutdown. The service manager is stood in for by a unix
datagram socket named in NOTIFY_SOCKET, as systemd does: a filesystem path, or an abstract
name written with a leading '@'. nsrvd speaks the protocol itself (src/server/sd_notify.c),
so this runs on every build."""
import os
import re
import signal
import socket
import subprocess

import pytest

from nsrvd_proc import free_port_pair, keygen


def _manager(tmp_path, form):
    mgr = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if form == "path":
        name = str(tmp_path / "notify.sock")
        mgr.bind(name)
    else:
        # Linux abstract namespace: a leading NUL in the address, '@' in NOTIFY_SOCKET.
        name = "@nsrvd-test-%d-%d" % (os.getpid(), id(tmp_path))
        mgr.bind("\0" + name[1:])
    mgr.settimeout(15)
    return mgr, name


def _reap(proc, mgr):
    """A node the test did not stop is killed; the notify socket is closed."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    mgr.close()


@pytest.mark.parametrize("form", ["path", "abstract"])
def test_ready_then_stopping(nsrvd_bin, tmp_path, form):
    mgr, name = _manager(tmp_path, form)
    conf = tmp_path / "nsrvd.properties"
    conf.write_text(f"listenPort=0\nshutdownWaitTimeSeconds=3\nkvConfigPath={tmp_path}/kv.json\n")
    env = dict(os.environ, NOTIFY_SOCKET=name, HOME=str(tmp_path))
    proc = subprocess.Popen([nsrvd_bin, "-c", str(conf)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        msg = mgr.recv(4096).decode()
        assert "READY=1" in msg.split("\n"), msg
        port = int(re.search(r"STATUS=serving on port (\d+)", msg).group(1))
        # Ready means accepting: a connection succeeds at once.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        proc.send_signal(signal.SIGTERM)
        msg = mgr.recv(4096).decode()
        assert msg == "STOPPING=1", msg
        assert proc.wait(timeout=15) == 0
    finally:
        _reap(proc, mgr)


def test_idle_process_maps_no_libsystemd(nsrvd_bin):
    """The notify protocol needs no library: libsystemd (and the compression and gcrypt
    libraries it pulls in) would be resident in every process for two datagrams."""
    out = subprocess.run(["ldd", nsrvd_bin], capture_output=True, text=True).stdout
    assert "libsystemd" not in out, out


def test_gossip_node_is_ready_for_systemd_only_by_the_ready_rule(nsrvd_bin, tmp_path):
    """A gossip node whose one peer never answers is not READY=1 at once: the service manager
    hears why (STATUS=), and READY=1 follows the rule of GET /ready (a first pull or the 30 s
    start-up window), with or without a status port. SIGTERM before then still says STOPPING=1."""
    mgr, name = _manager(tmp_path, "path")
    tokens = [keygen(nsrvd_bin, tmp_path / f"n{node_id}.key", node_id) for node_id in (1, 2)]
    conf = tmp_path / "nsrvd.properties"
    conf.write_text(f"listenPort=0\nshutdownWaitTimeSeconds=3\nkvConfigPath={tmp_path}/kv.json\n"
                    f"gossipEnable=true\ngossipNodeId=1\ngossipListenAddress=127.0.0.1\n"
                    f"gossipPort={free_port_pair()}\ngossipSecretKeyFile={tmp_path}/n1.key\n"
                    f"gossipPeers=2@127.0.0.1:{free_port_pair()}\ngossipPeerKeys={','.join(tokens)}\n")
    env = dict(os.environ, NOTIFY_SOCKET=name, HOME=str(tmp_path))
    proc = subprocess.Popen([nsrvd_bin, "-c", str(conf)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        msg = mgr.recv(4096).decode()
        assert msg.startswith("STATUS=not ready: no pull from a peer yet (start-up window 30 s, "), msg
        mgr.settimeout(1.5)
        with pytest.raises(socket.timeout):
            mgr.recv(4096)
        mgr.settimeout(15)
        proc.send_signal(signal.SIGTERM)
        assert mgr.recv(4096).decode() == "STOPPING=1"
        assert proc.wait(timeout=15) == 0
    finally:
        _reap(proc, mgr)
