#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Writes the gossip v1 test vectors (proto/gossip.md) as hex files.

Independent of nsrvd's C encoder: a minimal msgpack writer (shortest forms,
as the spec requires), hashlib's BLAKE2b and the `cryptography` package's
Ed25519. Ed25519 is deterministic, so the output never changes.

    python3 proto/vectors/gossip/gen_vectors.py [outdir]
"""
import base64
import hashlib
import os
import struct
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


# ---- msgpack, shortest encodings only --------------------------------------
class Nil:
    pass


NIL = Nil()


class Bin(bytes):
    pass


def mp(v):
    if v is NIL or v is None:
        return b"\xc0"
    if isinstance(v, Bin):
        n = len(v)
        if n < 256:
            return b"\xc4" + struct.pack(">B", n) + v
        if n < 65536:
            return b"\xc5" + struct.pack(">H", n) + v
        return b"\xc6" + struct.pack(">I", n) + v
    if isinstance(v, str):
        b = v.encode()
        n = len(b)
        if n < 32:
            return bytes([0xA0 | n]) + b
        if n < 256:
            return b"\xd9" + struct.pack(">B", n) + b
        if n < 65536:
            return b"\xda" + struct.pack(">H", n) + b
        return b"\xdb" + struct.pack(">I", n) + b
    if isinstance(v, int):
        if v >= 0:
            if v < 128:
                return bytes([v])
            if v < 1 << 8:
                return b"\xcc" + struct.pack(">B", v)
            if v < 1 << 16:
                return b"\xcd" + struct.pack(">H", v)
            if v < 1 << 32:
                return b"\xce" + struct.pack(">I", v)
            return b"\xcf" + struct.pack(">Q", v)
        if v >= -32:
            return struct.pack(">b", v)
        if v >= -(1 << 7):
            return b"\xd0" + struct.pack(">b", v)
        if v >= -(1 << 15):
            return b"\xd1" + struct.pack(">h", v)
        if v >= -(1 << 31):
            return b"\xd2" + struct.pack(">i", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, list):
        n = len(v)
        if n < 16:
            h = bytes([0x90 | n])
        elif n < 65536:
            h = b"\xdc" + struct.pack(">H", n)
        else:
            h = b"\xdd" + struct.pack(">I", n)
        return h + b"".join(mp(x) for x in v)
    raise TypeError(v)


# ---- keys ------------------------------------------------------------------
SEED1 = bytes(range(0x00, 0x20))  # node 1, key_id 1
SEED2 = bytes(range(0x20, 0x40))  # node 2, key_id 1
SEED1B = bytes(range(0x40, 0x60))  # node 1, key_id 2 (rotation)


def key(seed):
    sk = Ed25519PrivateKey.from_private_bytes(seed)
    pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return sk, pk


def bkey(cluster, name, bid, addr):
    m = cluster.encode() + b"\0" + name.encode() + b"\0" + str(bid).encode() + b"\0" + addr.encode()
    return struct.unpack(">Q", hashlib.blake2b(m, digest_size=32).digest()[:8])[0]


# ---- envelope --------------------------------------------------------------
CLUSTER = "DefaultCluster"
INC = 1718000000000
MONO = 123456
WALL = 1718000123456
U64_MAX = (1 << 64) - 1
# Responder (node 2) clock in the pull response's end frame.
RESP_INC = 1717999990000
RESP_MONO = 987654


def dgram(sk, typ, seq, dst, key_id, body, src=1):
    env = mp([1, typ, CLUSTER, src, INC, seq, MONO, WALL, dst, key_id, body])
    return env + sk.sign(env)


def entry(bk, dv, age, flags=0):
    return [bk, dv[0], dv[1], dv[2], age, flags]


BROKERS = [
    ("DefaultCluster", "broker-a", 0, "10.120.33.107:10911"),
    ("DefaultCluster", "broker-a", 1, "10.120.33.108:10911"),
    ("DefaultCluster", "broker-b", 0, "10.120.33.109:10911"),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    sk1, pk1 = key(SEED1)
    sk2, pk2 = key(SEED2)
    _, pk1b = key(SEED1B)

    def put(name, data):
        with open(os.path.join(out, name), "w") as f:
            f.write(data.hex() + "\n")

    with open(os.path.join(out, "keys.txt"), "w") as f:
        f.write("# node key_id seed_hex public_key_hex public_key_base64\n")
        for node, kid, seed, pk in ((1, 1, SEED1, pk1), (2, 1, SEED2, pk2), (1, 2, SEED1B, pk1b)):
            f.write("%d %d %s %s %s\n" % (node, kid, seed.hex(), pk.hex(), base64.b64encode(pk).decode()))

    keys = sorted(bkey(*b) for b in BROKERS)
    with open(os.path.join(out, "bkey.txt"), "w") as f:
        f.write("# cluster|brokerName|brokerId|brokerAddr|bkey (16 hex digits)\n")
        for b in BROKERS + [("C", "", -1, ""), ("DefaultCluster", "broker-a", -9223372036854775808, "[::1]:10911")]:
            f.write("%s|%s|%d|%s|%016x\n" % (b[0], b[1], b[2], b[3], bkey(*b)))

    dv = (7, 1717999999000, 0)
    # 1 DIGEST_FULL: one part covering the whole key space, three entries.
    full = [7, 0, 1, 0, U64_MAX,
            [entry(keys[0], dv, 1500), entry(keys[1], (12, 1717999000123, 2), 29000), entry(keys[2], dv, 0)]]
    put("digest_full.hex", dgram(sk1, 1, 1, 2, 1, full))
    # 1 DIGEST_FULL, part 1 of 3 of a split round: a key sub-range.
    part = [8, 1, 3, keys[0] + 1, keys[2], [entry(keys[1], dv, 4000), entry(keys[2], dv, 4100)]]
    put("digest_full_part.hex", dgram(sk1, 1, 2, 2, 1, part))
    # 2 DIGEST_DELTA: a negative counter (int64 on the wire) and a flags byte kept as is.
    put("digest_delta.hex", dgram(sk1, 2, 3, 2, 1, [[entry(keys[1], (-1, 0, 300), 0, 0)]]))
    # 3 SYNC_REQ to any node.
    put("sync_req.hex", dgram(sk1, 3, 4, 255, 1, []))
    # 4 TOMBSTONE: an unregister and an eviction.
    tomb = [[[keys[0], 7, 1717999999000, 0, 1, 250], [keys[2], 9, 1717999999999, 1, 2, 120001]]]
    put("tombstone.hex", dgram(sk1, 4, 5, 2, 1, tomb))
    # 5 PULL_REQ (TCP body, without the u32 length prefix): two keys; and ALL.
    nonce = bytes(range(0xA0, 0xB0))
    put("pull_req.hex", dgram(sk1, 5, 6, 2, 1, [Bin(nonce), [keys[0], keys[2]]]))
    put("pull_req_all.hex", dgram(sk1, 5, 7, 2, 1, [Bin(nonce), []]))
    # Signed by node 1's second key (rotation).
    _sk1b = Ed25519PrivateKey.from_private_bytes(SEED1B)
    put("sync_req_key2.hex", dgram(_sk1b, 3, 8, 2, 2, []))

    # Pull response from node 2 to the pull_req_all above.
    frames = b""
    regs = [
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T1":{"topicName":"T1","readQueueNums":4,'
        b'"writeQueueNums":4,"perm":6,"topicSysFlag":0}},"dataVersion":{"counter":7,"timestamp":1717999999000}},'
        b'"filterServerList":[]}',
        b"{}",
    ]
    items = [
        (BROKERS[0], "10.120.33.107:10912", "zone-a", 1, 120000, dv, 2000, regs[0]),
        (BROKERS[2], "", None, -1, 30000, (3, 1717000000000, 0), 65000, regs[1]),
    ]
    items.sort(key=lambda it: bkey(*it[0]))
    for (c, n, i, a), ha, zone, acting, tmo, v, age, reg in items:
        f = mp([bkey(c, n, i, a), [a, c, n, i, ha, NIL if zone is None else zone, acting, tmo],
                [v[0], v[1], v[2]], age, Bin(reg)])
        frames += struct.pack(">I", len(f)) + f
    # The end frame carries node 2's incarnation and monotonic clock, signed
    # after the hash: the requester's round-trip clock anchor (proto/gossip.md §7.6).
    h = hashlib.blake2b(frames + nonce, digest_size=32).digest()
    sig = sk2.sign(b"nsrv-gossip-pull-v1" + h + struct.pack(">QQ", RESP_INC, RESP_MONO))
    end = mp([NIL, len(items), RESP_INC, RESP_MONO, Bin(sig), 1])
    put("pull_resp.hex", frames + struct.pack(">I", len(end)) + end)


if __name__ == "__main__":
    main()
