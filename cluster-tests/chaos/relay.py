#!/usr/bin/env python3
"""A UDP relay that delays and reorders datagrams (the kernels here have no netem).

Runs inside a node's namespace: nft rules (netns.Net.divert) send the node's gossip
datagrams for peer P to <node ip>:<port of P>; the relay holds each one for DELAY ± JITTER ms
(drawn per datagram, so later ones often overtake earlier ones) and sends it on to P from the
node's own address, so P's source-address check still sees the node. Its own datagrams carry
SO_MARK so the divert rule lets them through.

  relay.py --bind IP --mark M --delay-ms D --jitter-ms J LPORT=DST_IP:DST_PORT ...

Prints "relay ready" once listening; counts on SIGTERM ("relay forwarded=N reordered=R").
"""

import argparse
import heapq
import random
import selectors
import signal
import socket
import sys
import time

SO_MARK = 36


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", required=True)
    ap.add_argument("--mark", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, default=200)
    ap.add_argument("--jitter-ms", type=float, default=100)
    ap.add_argument("routes", nargs="+")
    a = ap.parse_args()

    sel = selectors.DefaultSelector()
    for r in a.routes:
        lport, dst = r.split("=")
        dip, dport = dst.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.bind, int(lport)))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, (dip, int(dport)))
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    out.setsockopt(socket.SOL_SOCKET, SO_MARK, a.mark)
    out.bind((a.bind, 0))

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    heap = []  # (due, arrival order, data, dst)
    order = 0
    forwarded = reordered = 0
    last_sent_order = -1
    print("relay ready", flush=True)
    while not stop:
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            _, o, data, dst = heapq.heappop(heap)
            try:
                out.sendto(data, dst)
            except OSError:
                pass
            forwarded += 1
            if o < last_sent_order:
                reordered += 1
            last_sent_order = max(last_sent_order, o)
        timeout = max(0.0, heap[0][0] - now) if heap else 0.2
        for key, _ in sel.select(min(timeout, 0.2)):
            while True:
                try:
                    data, _ = key.fileobj.recvfrom(70000)
                except BlockingIOError:
                    break
                d = max(0.0, a.delay_ms + random.uniform(-a.jitter_ms, a.jitter_ms)) / 1000.0
                heapq.heappush(heap, (time.monotonic() + d, order, data, key.data))
                order += 1
    print(f"relay forwarded={forwarded} reordered={reordered}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
