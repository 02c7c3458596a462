#!/usr/bin/env python3
"""Floods one node with bad gossip packets; run inside a namespace (``ip netns exec``).

Inside the sender's own namespace it first captures, from the wire (an AF_PACKET socket on
eth0), the genuine gossip datagrams this node sends to the target for --capture seconds, then
for --seconds sends, as fast as --rate allows, a mix of: exact replays of them, truncated
copies (a random prefix), copies with one flipped bit (bad signature), digests signed with a random key
(forged), and random garbage. Prints one JSON line with what
it sent by kind. Packets are built with cluster-tests/cluster/gossipwire.py.
"""

import argparse
import json
import os
import random
import socket
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cluster"))

import gossipwire as gw  # noqa: E402

ETH_P_ALL = 0x0003


def capture(dst_ip: str, port: int, seconds: float):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind(("eth0", 0))
    s.settimeout(0.2)
    dst = socket.inet_aton(dst_ip)
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            frame = s.recv(70000)
        except socket.timeout:
            continue
        if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17 or ip[16:20] != dst:
            continue
        udp = ip[ihl:]
        if struct.unpack(">H", udp[2:4])[0] != port:
            continue
        got.append(bytes(udp[8:struct.unpack(">H", udp[4:6])[0]]))
    s.close()
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--capture", type=float, default=3.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=int, default=2000, help="packets per second")
    a = ap.parse_args()

    genuine = capture(a.target, a.port, a.capture) if a.capture > 0 else []
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = {"replayed": 0, "truncated": 0, "bitflip": 0, "forged": 0, "garbage": 0}
    forger = gw.SigningKey.random()
    kinds = list(sent) if genuine else ["forged", "garbage"]
    end = time.monotonic() + a.seconds
    n = 0
    while time.monotonic() < end:
        kind = kinds[n % len(kinds)]
        n += 1
        if kind == "replayed":
            pkt = random.choice(genuine)
        elif kind == "truncated":
            g = random.choice(genuine)
            pkt = g[: random.randrange(1, len(g))]
        elif kind == "bitflip":
            g = bytearray(random.choice(genuine))
            i = random.randrange(len(g))
            g[i] ^= 1 << random.randrange(8)
            pkt = bytes(g)
        elif kind == "forged":
            base = gw.decode(random.choice(genuine)) if genuine else gw.Envelope(
                1, gw.DIGEST_DELTA, "nsrv-chaos", 1, 1, 1, 0, 0, 3, 1, [[]])
            fake = base.with_(type=gw.DIGEST_DELTA, seq=base.seq + 100000 + n,
                              wall_ms=int(time.time() * 1000), body=[[]])
            pkt = gw.seal(fake, forger)
        else:
            pkt = os.urandom(random.randrange(1, 600))
        try:
            sock.sendto(pkt, (a.target, a.port))
            sent[kind] += 1
        except OSError:
            pass
        if n % 50 == 0:
            time.sleep(50.0 / a.rate)
    print(json.dumps({"captured": len(genuine), "sent": sent}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
