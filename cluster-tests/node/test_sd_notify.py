"""systemd Type=notify (conf/nsrvd.service): READY=1 once the listener accepts, STOPPING=1
when SIGTERM starts the graceful shutdown. The service manager is stood in for by a unix
datagram socket named in NOTIFY_SOCKET, as systemd does."""
import os
import re
import signal
import socket
import subprocess

import pytest


def _linked_with_libsystemd(path: str) -> bool:
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return "libsystemd" in out


def test_ready_then_stopping(nsrvd_bin, tmp_path):
    if not _linked_with_libsystemd(nsrvd_bin):
        pytest.skip("nsrvd built without libsystemd (sd_notify is a no-op)")
    sock_path = str(tmp_path / "notify.sock")
    mgr = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    mgr.bind(sock_path)
    mgr.settimeout(15)
    conf = tmp_path / "nsrvd.properties"
    conf.write_text(f"listenPort=0\nshutdownWaitTimeSeconds=3\nkvConfigPath={tmp_path}/kv.json\n")
    env = dict(os.environ, NOTIFY_SOCKET=sock_path, HOME=str(tmp_path))
    proc = subprocess.Popen([nsrvd_bin, "-c", str(conf)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        msg = mgr.recv(4096).decode()
        assert "READY=1" in msg.split("\n"), msg
        port = int(re.search(r"serving on port (\d+)", msg).group(1))
        # Ready means accepting: a connection succeeds at once.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        proc.send_signal(signal.SIGTERM)
        msg = mgr.recv(4096).decode()
        assert msg == "STOPPING=1", msg
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        mgr.close()
