"""Just enough of the gossip wire format (proto/gossip.md) to capture, decode, alter, forge and
re-sign datagrams and pull requests in the cluster tests.

* a shortest-form msgpack writer and a reader for the families the spec allows (proto/gossip.md §2);
* ``Envelope``: the 11 fields of proto/gossip.md §4, decoded from and encoded to bytes;
* ``sign`` with an Ed25519 seed (the base64 seed of an ``nsrvd keygen`` file), via the
  ``cryptography`` package;
* ``bkey`` (proto/gossip.md §3.3).

Independent of the C code on purpose: if nsrvd and this file disagree about a byte, the
round-trip check in the tests says so.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, List, Tuple, Union

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SIG_LEN = 64
VERSION = 1
DIGEST_FULL, DIGEST_DELTA, SYNC_REQ, TOMBSTONE, PULL_REQ = 1, 2, 3, 4, 5
DST_ANY = 255
U64_MAX = (1 << 64) - 1


class Bin(bytes):
    """A msgpack bin value (plain ``bytes`` would be ambiguous with str)."""


# ------------------------------------------------------------------------------ msgpack


def pack(v: Any) -> bytes:
    """Shortest encoding of None, int, str, Bin/bytes and list (the only families used)."""
    if v is None:
        return b"\xc0"
    if isinstance(v, bool):
        raise TypeError("booleans are not used by the gossip wire format")
    if isinstance(v, int):
        if v >= 0:
            if v < 0x80:
                return bytes([v])
            for limit, tag, fmt in ((1 << 8, 0xCC, ">B"), (1 << 16, 0xCD, ">H"), (1 << 32, 0xCE, ">I")):
                if v < limit:
                    return bytes([tag]) + struct.pack(fmt, v)
            return b"\xcf" + struct.pack(">Q", v)
        if v >= -32:
            return struct.pack(">b", v)
        for limit, tag, fmt in ((1 << 7, 0xD0, ">b"), (1 << 15, 0xD1, ">h"), (1 << 31, 0xD2, ">i")):
            if v >= -limit:
                return bytes([tag]) + struct.pack(fmt, v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        n = len(b)
        if n < 32:
            return bytes([0xA0 | n]) + b
        if n < 1 << 8:
            return b"\xd9" + struct.pack(">B", n) + b
        if n < 1 << 16:
            return b"\xda" + struct.pack(">H", n) + b
        return b"\xdb" + struct.pack(">I", n) + b
    if isinstance(v, (bytes, bytearray)):
        n = len(v)
        if n < 1 << 8:
            return b"\xc4" + struct.pack(">B", n) + bytes(v)
        if n < 1 << 16:
            return b"\xc5" + struct.pack(">H", n) + bytes(v)
        return b"\xc6" + struct.pack(">I", n) + bytes(v)
    if isinstance(v, (list, tuple)):
        n = len(v)
        if n < 16:
            head = bytes([0x90 | n])
        elif n < 1 << 16:
            head = b"\xdc" + struct.pack(">H", n)
        else:
            head = b"\xdd" + struct.pack(">I", n)
        return head + b"".join(pack(x) for x in v)
    raise TypeError(f"cannot pack {type(v).__name__}")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.d = data
        self.i = 0

    def take(self, n: int) -> bytes:
        if self.i + n > len(self.d):
            raise ValueError("truncated msgpack")
        b = self.d[self.i : self.i + n]
        self.i += n
        return b

    def u(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def value(self) -> Any:
        t = self.take(1)[0]
        if t < 0x80:
            return t
        if t >= 0xE0:
            return t - 0x100
        if 0x90 <= t <= 0x9F:
            return [self.value() for _ in range(t & 0x0F)]
        if 0xA0 <= t <= 0xBF:
            return self.take(t & 0x1F).decode("utf-8", "surrogateescape")
        ints = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
        if t in ints:
            return self.u(ints[t])
        if t == 0xC0:
            return None
        if t in (0xC4, 0xC5, 0xC6):
            n = self.u({0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}[t])
            return Bin(self.take(n))
        if t in (0xD9, 0xDA, 0xDB):
            n = self.u({0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}[t])
            return self.take(n).decode("utf-8", "surrogateescape")
        if t in (0xDC, 0xDD):
            n = self.u(">H" if t == 0xDC else ">I")
            return [self.value() for _ in range(n)]
        raise ValueError(f"msgpack type 0x{t:02x} is not used by gossip")


def unpack_prefix(data: bytes) -> Tuple[Any, int]:
    """One value from the start of data; returns (value, bytes consumed)."""
    r = _Reader(data)
    v = r.value()
    return v, r.i


# ------------------------------------------------------------------------------ envelope


@dataclass
class Envelope:
    ver: int
    type: int
    cluster: str
    src: int
    src_inc: int
    seq: int
    src_mono_ms: int
    wall_ms: int
    dst: int
    key_id: int
    body: Any

    def encode(self) -> bytes:
        return pack(
            [self.ver, self.type, self.cluster, self.src, self.src_inc, self.seq, self.src_mono_ms,
             self.wall_ms, self.dst, self.key_id, self.body]
        )

    def with_(self, **kw: Any) -> "Envelope":
        return replace(self, **kw)


def split(dgram: bytes) -> Tuple[Envelope, bytes, bytes]:
    """(envelope, envelope bytes, signature) of a datagram or of a PULL_REQ without its prefix."""
    v, used = unpack_prefix(dgram)
    if not isinstance(v, list) or len(v) != 11 or used != len(dgram) - SIG_LEN:
        raise ValueError("not an 11-field envelope followed by a 64-byte signature")
    return Envelope(*v), dgram[:used], dgram[used:]


def decode(dgram: bytes) -> Envelope:
    return split(dgram)[0]


# ------------------------------------------------------------------------------ keys


class SigningKey:
    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError("an Ed25519 seed is 32 bytes")
        self._sk = Ed25519PrivateKey.from_private_bytes(seed)

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "SigningKey":
        """The secret key file of `nsrvd keygen`: base64 of the 32-byte seed."""
        return cls(base64.b64decode(Path(path).read_text().strip()))

    @classmethod
    def random(cls) -> "SigningKey":
        return cls(os.urandom(32))

    def public_b64(self) -> str:
        pk = self._sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return base64.b64encode(pk).decode()

    def sign(self, data: bytes) -> bytes:
        return self._sk.sign(data)


def seal(env: Envelope, key: SigningKey) -> bytes:
    """envelope ‖ Ed25519(envelope)."""
    e = env.encode()
    return e + key.sign(e)


def pull_frame(dgram: bytes) -> bytes:
    """A PULL_REQ as sent on TCP: u32 BE length, then the signed envelope."""
    return struct.pack(">I", len(dgram)) + dgram


def bkey(cluster: str, name: str, broker_id: int, addr: str) -> int:
    m = b"\0".join(x.encode() for x in (cluster, name, str(broker_id), addr))
    return struct.unpack(">Q", hashlib.blake2b(m, digest_size=32).digest()[:8])[0]


def entries(env: Envelope) -> List[list]:
    """Digest entries of a DIGEST_FULL or DIGEST_DELTA (else [])."""
    if env.type == DIGEST_FULL:
        return env.body[5]
    if env.type == DIGEST_DELTA:
        return env.body[0]
    return []


# ------------------------------------------------------------------------------ pull reply

PULL_DOMAIN = b"nsrv-gossip-pull-v1"


@dataclass
class PullReply:
    items: List[list]  # [bkey, [addr, cluster, name, id, ha, zone, acting, timeout], dv, age, reg]
    count: int
    key_id: int
    signature_ok: bool

    def addrs(self) -> List[str]:
        return [it[1][0] for it in self.items]


def parse_pull_reply(data: bytes, nonce: bytes, public_b64: str) -> PullReply:
    """Broker frames then the end frame (proto/gossip.md §7.2, §7.3); checks the end frame's signature with
    the responder's public key. Accepts the 4-field end frame and the 6-field one that adds
    the responder's clock (src_inc, src_mono_ms, signed after the hash). Raises ValueError on
    anything malformed."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    items: List[list] = []
    i = 0
    while True:
        if i + 4 > len(data):
            raise ValueError("pull reply ends without an end frame")
        (n,) = struct.unpack_from(">I", data, i)
        frame = data[i + 4 : i + 4 + n]
        if len(frame) != n:
            raise ValueError("truncated pull frame")
        v, used = unpack_prefix(frame)
        if used != n or not isinstance(v, list):
            raise ValueError("bad pull frame")
        if v and v[0] is None:
            if i + 4 + n != len(data):
                raise ValueError("bytes after the end frame")
            h = hashlib.blake2b(data[:i] + nonce, digest_size=32).digest()
            if len(v) == 4:  # [nil, count, sig, key_id]
                _, count, sig, key_id = v
                msg = PULL_DOMAIN + h
            elif len(v) == 6:  # [nil, count, src_inc, src_mono_ms, sig, key_id] (clock anchor)
                _, count, inc, mono, sig, key_id = v
                msg = PULL_DOMAIN + h + struct.pack(">QQ", inc, mono)
            else:
                raise ValueError(f"end frame with {len(v)} fields")
            pk = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_b64))
            try:
                pk.verify(bytes(sig), msg)
                ok = True
            except InvalidSignature:
                ok = False
            return PullReply(items, count, key_id, ok)
        items.append(v)
        i += 4 + n
