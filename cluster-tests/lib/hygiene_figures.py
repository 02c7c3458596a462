#!/usr/bin/env python3
"""Figures for docs/design/connection-hygiene.md, measured against any nsrvd binary.

  hygiene_figures.py --nsrvd BIN stuck [--conns 20] [--idle 30]
      N clients pipeline GET_ALL_TOPIC_LIST (~30 KB replies) and never read; server RSS,
      open fds and queued reply bytes once all are stuck, and again idle+3 s later.
  hygiene_figures.py --nsrvd BIN probe [--silent 200]
      N silent sockets held open on the status port; 20 GET /health probes, their latency.
  hygiene_figures.py --nsrvd BIN amplify [--topics 300000]
      one compressed REGISTER_BROKER with N short topics; its size, reply, RSS growth.
"""

import argparse
import socket
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nsrvd_proc import NsrvdProcess, free_port  # noqa: E402
from rmq import (  # noqa: E402
    Broker,
    Connection,
    DataVersion,
    NamesrvClient,
    RequestCode,
    TopicConfig,
    encode_frame,
    make_request,
    register_broker_body_compressed,
)


def metrics(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return {}
    return dict(line.split(" ", 1) for line in text.splitlines() if line and line[0] != "#")


def start(binary, workdir, **props):
    props.setdefault("shutdownWaitTimeSeconds", 1)
    p = NsrvdProcess(binary, Path(workdir) / "node", props, name="figures")
    p.start()
    return p


def stuck(args, workdir):
    sp = free_port()
    p = start(args.nsrvd, workdir, serverChannelMaxIdleTimeSeconds=args.idle, statusPort=sp)
    try:
        keep = NamesrvClient(Connection("127.0.0.1", p.port, timeout=30))
        keep.register_broker(Broker(), [TopicConfig(f"BigTopic-{i:05d}", 4, 4, 6) for i in range(1000)])
        base_rss, base_fds = p.rss_kb(), p.open_fds()
        chunk = memoryview(encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})) * 200)
        socks, t0 = [], time.monotonic()
        for _ in range(args.conns):
            s = socket.create_connection(("127.0.0.1", p.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.setblocking(False)
            off, since = 0, None
            while since is None or time.monotonic() - since < 0.5:
                try:
                    off = (off + s.send(chunk[off:])) % len(chunk)
                    since = None
                except BlockingIOError:
                    since = since or time.monotonic()
                    time.sleep(0.01)
            socks.append(s)

        def report(when):
            m = metrics(sp)
            print(f"{when}: RSS {(p.rss_kb() - base_rss) / len(socks) / 1024:+.2f} MiB per stuck connection, "
                  f"open fds {p.open_fds() - base_fds:+d}, queued reply bytes "
                  f"{m.get('nsrvd_output_queued_bytes', 'n/a')}, stalled closes "
                  f"{m.get('nsrvd_connections_stalled_total', 'n/a')}")

        report(f"{len(socks)} stuck after {time.monotonic() - t0:.1f} s")
        time.sleep(args.idle + 3)
        report(f"{args.idle + 3} s later (serverChannelMaxIdleTimeSeconds={args.idle})")
    finally:
        p.terminate()


def probe(args, workdir):
    sp = free_port()
    p = start(args.nsrvd, workdir, statusPort=sp)
    try:
        silent = [socket.create_connection(("127.0.0.1", sp)) for _ in range(args.silent)]
        lat, failed = [], 0
        for _ in range(20):
            t = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", sp), timeout=5) as s:
                    s.sendall(b"GET /health HTTP/1.1\r\n\r\n")
                    data = b""
                    while chunk := s.recv(4096):
                        data += chunk
                ok = data.startswith(b"HTTP/1.1 200")
            except OSError:
                ok = False
            if ok:
                lat.append((time.monotonic() - t) * 1000)
            else:
                failed += 1
        lat.sort()
        tail = f", median {lat[len(lat) // 2]:.1f} ms, max {lat[-1]:.1f} ms" if lat else ""
        print(f"{args.silent} silent sockets held: {len(lat)}/20 /health probes answered, {failed} failed{tail}")
        for s in silent:
            s.close()
    finally:
        p.terminate()


def amplify(args, workdir):
    p = start(args.nsrvd, workdir)
    try:
        ns = NamesrvClient(Connection("127.0.0.1", p.port, timeout=120))
        topics = [TopicConfig(f"T{i:07d}", 1, 1, 6) for i in range(args.topics)]
        body = register_broker_body_compressed(topics, DataVersion(1, 1))
        before = p.rss_kb()
        resp = ns.register_broker(Broker(), body=body, compressed_flag=True)
        time.sleep(0.5)
        grown = p.rss_kb() - before
        print(f"{args.topics} topics in a {len(body)} byte compressed body: code {resp.code} "
              f"{resp.remark or ''}; RSS {grown / 1024:+.1f} MiB ({grown * 1024 / len(body):.0f}x the body)")
    finally:
        p.terminate()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nsrvd", required=True)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("stuck")
    s.add_argument("--conns", type=int, default=20)
    s.add_argument("--idle", type=int, default=30)
    s = sub.add_parser("probe")
    s.add_argument("--silent", type=int, default=200)
    s = sub.add_parser("amplify")
    s.add_argument("--topics", type=int, default=300000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nsrvd-figures-") as workdir:
        {"stuck": stuck, "probe": probe, "amplify": amplify}[args.what](args, workdir)


if __name__ == "__main__":
    main()
