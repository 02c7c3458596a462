"""A small Apache RocketMQ remoting client for black-box tests of a NameServer.

Everything here follows the protocol as proto/remoting.md, proto/requests.md and proto/route.md
describe it (cited by section).
Only the Python standard library is used.

Layers, bottom up:

* frame codec: ``encode_frame`` / ``decode_frame`` / ``FrameDecoder`` with the JSON (type 0)
  and ROCKETMQ binary (type 1) headers of proto/remoting.md §2-§4;
* ``Command``: one decoded request or response;
* ``Connection``: a blocking TCP connection that sends requests (sync, oneway, pipelined)
  and matches responses by opaque;
* body builders: fastjson-style JSON writer (bare numeric keys, proto/requests.md §2.5.1), DataVersion,
  TopicConfig, RegisterBrokerBody in JSON and zlib-compressed form (proto/requests.md §2.5.2), masked CRC32;
* ``loads_lenient``: a decoder for fastjson "default mode" bodies with bare numeric keys.
"""

from __future__ import annotations

import itertools
import json
import re
import select
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

# fastjson text (writer, lenient reader) lives in fastjson.py; re-exported for the tests.
from fastjson import LenientJSONError, count_bare_keys, fj_dumps, loads_lenient, parse_lenient  # noqa: F401

# --------------------------------------------------------------------------------------------
# Constants (proto/requests.md §1)
# --------------------------------------------------------------------------------------------


class RequestCode:
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    QUERY_DATA_VERSION = 322
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_BROKER_MEMBER_GROUP = 901
    BROKER_HEARTBEAT = 904
    NOTIFY_MIN_BROKER_ID_CHANGE = 905


ALL_REQUEST_CODES = tuple(
    v for k, v in vars(RequestCode).items() if k.isupper() and v != RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE
)


class ResponseCode:
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    QUERY_NOT_FOUND = 22
    GO_AWAY = 1500


class LanguageCode:
    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


LANGUAGE_NAMES = {v: k for k, v in vars(LanguageCode).items() if k.isupper()}
LANGUAGE_CODES = {k: v for v, k in LANGUAGE_NAMES.items()}


class SerializeType:
    JSON = 0
    ROCKETMQ = 1


SERIALIZE_NAMES = {SerializeType.JSON: "JSON", SerializeType.ROCKETMQ: "ROCKETMQ"}

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

VERSION_V3_0_11 = 37
VERSION_V4_9_4 = 401
VERSION_V4_9_7 = 407
VERSION_V5_0_0 = 413
VERSION_V5_3_3 = 479
CURRENT_VERSION = VERSION_V5_3_3

MAX_FRAME_LENGTH = 16777216  # whole frame on the wire, length field included (proto/remoting.md §2)
MAX_TOTAL_LENGTH = MAX_FRAME_LENGTH - 4  # largest legal N

PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
TOPIC_SYS_FLAG_UNIT = 1
TOPIC_SYS_FLAG_UNIT_SUB = 2

ORDER_TOPIC_CONFIG_NS = "ORDER_TOPIC_CONFIG"
FAQ_URL = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"


def topic_not_exist_remark(topic: str) -> str:
    """The exact TOPIC_NOT_EXIST remark of a 5.x server (proto/requests.md §2.8)."""
    return (
        "No topic route info in name server for the topic: "
        + topic
        + "\nSee "
        + FAQ_URL
        + " for further details."
    )


# --------------------------------------------------------------------------------------------
# Command and frame codec (proto/remoting.md §2-§5)
# --------------------------------------------------------------------------------------------


class FrameError(ValueError):
    """Bytes that a conforming peer must reject (the server closes the connection)."""


@dataclass
class Command:
    code: int = 0
    language: Any = "JAVA"  # name string (JSON) or int code; decoded values keep what was sent
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: Optional[str] = None
    ext: Optional[Dict[str, str]] = None
    body: Optional[bytes] = None
    serialize_type: int = SerializeType.JSON
    # Decoding details kept for assertions in tests:
    raw_header: Optional[bytes] = None
    header_json: Optional[dict] = None  # the parsed JSON header object (JSON frames only)

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @property
    def language_name(self) -> Optional[str]:
        if isinstance(self.language, int):
            return LANGUAGE_NAMES.get(self.language)
        return self.language

    def body_text(self) -> str:
        return (self.body or b"").decode("utf-8")

    def body_json(self) -> Any:
        """Body parsed with the lenient fastjson-compatible parser."""
        return loads_lenient(self.body_text())

    def __repr__(self) -> str:  # short, for assertion messages
        body = self.body
        if body is not None and len(body) > 300:
            body = body[:300] + b"...(%d bytes)" % len(self.body)
        return (
            f"Command(code={self.code}, opaque={self.opaque}, flag={self.flag}, version={self.version}, "
            f"language={self.language!r}, type={SERIALIZE_NAMES.get(self.serialize_type)}, "
            f"remark={self.remark!r}, ext={self.ext!r}, body={body!r})"
        )


def _language_to_code(language: Any) -> int:
    if isinstance(language, int):
        return language
    if language is None:
        return LanguageCode.JAVA
    return LANGUAGE_CODES[language]


def _language_to_name(language: Any) -> str:
    if isinstance(language, str):
        return language
    if language is None:
        return "JAVA"
    return LANGUAGE_NAMES[language]


def encode_json_header(cmd: Command) -> bytes:
    """The JSON header exactly as fastjson writes a RemotingCommand (proto/remoting.md §3):
    alphabetical keys, null members omitted, no whitespace."""
    obj: Dict[str, Any] = {"code": cmd.code}
    if cmd.ext is not None:
        obj["extFields"] = cmd.ext
    obj["flag"] = cmd.flag
    obj["language"] = _language_to_name(cmd.language)
    obj["opaque"] = cmd.opaque
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    obj["serializeTypeCurrentRPC"] = "JSON"
    obj["version"] = cmd.version
    # surrogateescape: a test writes raw (ill-formed) bytes as lone surrogates U+DC80-U+DCFF.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogateescape")


def decode_json_header(data: bytes) -> Tuple[Command, dict]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"bad JSON header: {e}") from None
    if not isinstance(obj, dict):
        raise FrameError("JSON header is not an object")
    ext = obj.get("extFields")
    if ext is not None:
        if not isinstance(ext, dict):
            raise FrameError("extFields is not an object")
        ext = {k: _ext_value_to_str(v) for k, v in ext.items() if v is not None}
    cmd = Command(
        code=int(obj.get("code", 0)),
        language=obj.get("language", "JAVA"),
        version=int(obj.get("version", 0)),
        opaque=int(obj.get("opaque", 0)),
        flag=int(obj.get("flag", 0)),
        remark=obj.get("remark"),
        ext=ext,
        serialize_type=SerializeType.JSON,
    )
    return cmd, obj


def _ext_value_to_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v, separators=(",", ":"))


def encode_binary_header(cmd: Command) -> bytes:
    """ROCKETMQ binary header (proto/remoting.md §4). Empty remark -> length 0; None keys/values skipped."""
    remark = (cmd.remark or "").encode("utf-8", "surrogateescape")  # raw bytes as in encode_json_header
    ext_bytes = bytearray()
    for k, v in (cmd.ext or {}).items():
        if k is None or v is None:
            continue
        kb = k.encode("utf-8", "surrogateescape")
        vb = str(v).encode("utf-8", "surrogateescape")
        ext_bytes += struct.pack(">h", len(kb)) + kb + struct.pack(">i", len(vb)) + vb
    return (
        struct.pack(
            ">hBhii",
            cmd.code,
            _language_to_code(cmd.language) & 0xFF,
            cmd.version,
            cmd.opaque,
            cmd.flag,
        )
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(ext_bytes))
        + bytes(ext_bytes)
    )


def decode_binary_header(data: bytes) -> Command:
    """Strict decoder. Length-0 strings decode to None, as in Java (proto/remoting.md §4)."""
    h = len(data)
    if h < 21:
        raise FrameError("binary header shorter than 21 bytes")
    code, lang, version, opaque, flag, rlen = struct.unpack_from(">hBhiii", data, 0)
    if rlen < 0 or rlen > h or 17 + rlen + 4 > h:
        raise FrameError("bad remark length")
    remark = data[17 : 17 + rlen].decode("utf-8") if rlen else None
    pos = 17 + rlen
    (elen,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if elen < 0 or elen > h or pos + elen > h:
        raise FrameError("bad ext length")
    ext: Dict[str, str] = {}
    end = pos + elen
    while pos < end:
        if pos + 2 > end:
            raise FrameError("truncated ext key length")
        (klen,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if klen < 0 or pos + klen + 4 > end:
            raise FrameError("bad ext key length")
        key = data[pos : pos + klen].decode("utf-8")
        pos += klen
        (vlen,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if vlen < 0 or pos + vlen > end:
            raise FrameError("bad ext value length")
        val = data[pos : pos + vlen].decode("utf-8")
        pos += vlen
        if key and val:
            ext[key] = val
    if pos != h:
        raise FrameError("trailing bytes after binary header")
    return Command(
        code=code,
        language=lang,
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext=ext if elen else None,
        serialize_type=SerializeType.ROCKETMQ,
    )


def encode_frame(cmd: Command, serialize_type: Optional[int] = None) -> bytes:
    """A whole frame: N, (type<<24)|H, header, body (proto/remoting.md §2)."""
    st = cmd.serialize_type if serialize_type is None else serialize_type
    if st == SerializeType.JSON:
        header = encode_json_header(cmd)
    elif st == SerializeType.ROCKETMQ:
        header = encode_binary_header(cmd)
    else:
        raise ValueError(f"unknown serialize type {st}")
    body = cmd.body or b""
    return struct.pack(">ii", 4 + len(header) + len(body), (st << 24) | len(header)) + header + body


def decode_frame_payload(payload: bytes) -> Command:
    """Decode the N bytes after the length field."""
    if len(payload) < 4:
        raise FrameError("frame shorter than the header-length word")
    (word,) = struct.unpack_from(">I", payload, 0)
    st = (word >> 24) & 0xFF
    hlen = word & 0x00FFFFFF
    if hlen > len(payload) - 4:
        raise FrameError("header length past the end of the frame")
    header = payload[4 : 4 + hlen]
    if st == SerializeType.JSON:
        cmd, obj = decode_json_header(header)
        cmd.header_json = obj
    elif st == SerializeType.ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise FrameError(f"unknown serialize type {st}")
    cmd.raw_header = bytes(header)
    body = payload[4 + hlen :]
    cmd.body = bytes(body) if body else None
    return cmd


def decode_frame(data: bytes) -> Tuple[Optional[Command], int]:
    """Decode one frame from the start of ``data``. Returns (cmd, consumed) or (None, 0) when
    more bytes are needed. Raises FrameError on bytes a server must reject."""
    if len(data) < 4:
        return None, 0
    (n,) = struct.unpack_from(">i", data, 0)
    if n < 4 or n + 4 > MAX_FRAME_LENGTH:
        raise FrameError(f"bad total length {n}")
    if len(data) < 4 + n:
        return None, 0
    return decode_frame_payload(data[4 : 4 + n]), 4 + n


class FrameDecoder:
    """Incremental decoder for a byte stream."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> List[Command]:
        """Append bytes; return every whole frame now available. Raises FrameError."""
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from(">i", self.buf, 0)
            if n < 4 or n + 4 > MAX_FRAME_LENGTH:
                raise FrameError(f"bad total length {n}")
            if len(self.buf) < 4 + n:
                break
            out.append(decode_frame_payload(bytes(self.buf[4 : 4 + n])))
            del self.buf[: 4 + n]
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self.buf)


def make_request(
    code: int,
    ext: Optional[Mapping[str, Any]] = None,
    body: Optional[bytes] = None,
    *,
    version: int = CURRENT_VERSION,
    opaque: int = 0,
    oneway: bool = False,
    language: Any = "JAVA",
    remark: Optional[str] = None,
    serialize_type: int = SerializeType.JSON,
) -> Command:
    """A request. ext values are stringified (true/false for bools) as Java does."""
    ext_s = None if ext is None else {k: _ext_value_to_str(v) for k, v in ext.items() if v is not None}
    return Command(
        code=code,
        language=language,
        version=version,
        opaque=opaque,
        flag=FLAG_ONEWAY if oneway else 0,
        remark=remark,
        ext=ext_s,
        body=body,
        serialize_type=serialize_type,
    )


# --------------------------------------------------------------------------------------------
# Connection
# --------------------------------------------------------------------------------------------


class ConnectionClosed(ConnectionError):
    """The peer closed the connection. ``pending`` holds the bytes of any half frame."""

    def __init__(self, msg: str, pending: bytes = b"") -> None:
        super().__init__(msg)
        self.pending = pending


_opaque_counter = itertools.count(1)


class Connection:
    """A blocking connection to one server. Every wait is bounded by ``timeout`` seconds."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9876,
        *,
        timeout: float = 5.0,
        version: int = CURRENT_VERSION,
        serialize_type: int = SerializeType.JSON,
        language: Any = "JAVA",
        sock: Optional[socket.socket] = None,
    ) -> None:
        self.addr = (host, port)
        self.timeout = timeout
        self.version = version
        self.serialize_type = serialize_type
        self.language = language
        self.decoder = FrameDecoder()
        self.inbox: List[Command] = []  # decoded frames not yet claimed
        self.closed_by_peer = False
        if sock is None:
            sock = socket.create_connection(self.addr, timeout=timeout)
        self.sock = sock
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- context manager --
    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def fileno(self) -> int:
        return self.sock.fileno()

    @staticmethod
    def next_opaque() -> int:
        return next(_opaque_counter) & 0x7FFFFFFF

    # -- sending --
    def build(
        self,
        code: int,
        ext: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        *,
        version: Optional[int] = None,
        serialize_type: Optional[int] = None,
        oneway: bool = False,
        opaque: Optional[int] = None,
        language: Any = None,
        remark: Optional[str] = None,
    ) -> Command:
        return make_request(
            code,
            ext,
            body,
            version=self.version if version is None else version,
            opaque=self.next_opaque() if opaque is None else opaque,
            oneway=oneway,
            language=self.language if language is None else language,
            remark=remark,
            serialize_type=self.serialize_type if serialize_type is None else serialize_type,
        )

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, cmd: Command) -> int:
        self.sock.sendall(encode_frame(cmd))
        return cmd.opaque

    def send_many(self, cmds: Sequence[Command]) -> List[int]:
        """Pipeline: write all frames in one go without waiting for replies."""
        self.sock.sendall(b"".join(encode_frame(c) for c in cmds))
        return [c.opaque for c in cmds]

    # -- receiving --
    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("timed out waiting for a frame")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 20)
        except ConnectionResetError:
            data = b""
        finally:
            self.sock.settimeout(self.timeout)
        if not data:
            self.closed_by_peer = True
            raise ConnectionClosed("connection closed by peer", bytes(self.decoder.buf))
        self.inbox.extend(self.decoder.feed(data))

    def recv(self, timeout: Optional[float] = None) -> Command:
        """The next frame, in arrival order."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.inbox:
            self._fill(deadline)
        return self.inbox.pop(0)

    def recv_for(self, opaque: int, timeout: Optional[float] = None) -> Command:
        """The response with this opaque; other frames stay in the inbox."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for i, c in enumerate(self.inbox):
                if c.is_response and c.opaque == opaque:
                    return self.inbox.pop(i)
            self._fill(deadline)

    def recv_all(self, opaques: Iterable[int], timeout: Optional[float] = None) -> Dict[int, Command]:
        """Responses for all these opaques (any order)."""
        want = set(opaques)
        got: Dict[int, Command] = {}
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while want:
            keep = []
            for c in self.inbox:
                if c.is_response and c.opaque in want:
                    want.discard(c.opaque)
                    got[c.opaque] = c
                else:
                    keep.append(c)
            self.inbox = keep
            if want:
                self._fill(deadline)
        return got

    def read_to_eof(self, timeout: Optional[float] = None) -> Tuple[List[Command], bytes]:
        """Read until the peer closes. Returns (whole frames, leftover bytes of a half frame).
        Raises socket.timeout if the peer does not close in time."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        frames: List[Command] = []
        while True:
            frames.extend(self.inbox)
            self.inbox = []
            try:
                self._fill(deadline)
            except ConnectionClosed as e:
                frames.extend(self.inbox)
                self.inbox = []
                return frames, e.pending

    def wait_closed(self, timeout: Optional[float] = None) -> bytes:
        """Wait for EOF and return every byte received before it (raw, not decoded)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        got = bytearray(self.decoder.buf)
        self.decoder.buf.clear()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("peer did not close the connection")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            except BrokenPipeError:
                data = b""
            finally:
                self.sock.settimeout(self.timeout)
            if not data:
                self.closed_by_peer = True
                return bytes(got)
            got += data

    def is_open(self, wait: float = 0.0) -> bool:
        """False if the peer closes (EOF/RST) within ``wait`` seconds. Frames that arrive
        meanwhile are decoded into the inbox."""
        deadline = time.monotonic() + wait
        while True:
            r, _, _ = select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                return True
            try:
                self.sock.setblocking(False)
                data = self.sock.recv(1 << 20)
            except BlockingIOError:
                data = None
            except (ConnectionResetError, BrokenPipeError):
                self.closed_by_peer = True
                return False
            finally:
                self.sock.setblocking(True)
                self.sock.settimeout(self.timeout)
            if data == b"":
                self.closed_by_peer = True
                return False
            if data:
                self.inbox.extend(self.decoder.feed(data))
            if time.monotonic() >= deadline:
                return True

    # -- request/response --
    def request(
        self,
        code: int,
        ext: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        *,
        timeout: Optional[float] = None,
        **kw: Any,
    ) -> Command:
        cmd = self.build(code, ext, body, **kw)
        self.send(cmd)
        return self.recv_for(cmd.opaque, timeout)

    def oneway(self, code: int, ext: Optional[Mapping[str, Any]] = None, body: Optional[bytes] = None, **kw: Any) -> int:
        return self.send(self.build(code, ext, body, oneway=True, **kw))

    def pipeline(self, cmds: Sequence[Command], timeout: Optional[float] = None) -> Dict[int, Command]:
        self.send_many(cmds)
        return self.recv_all([c.opaque for c in cmds if not c.is_oneway], timeout)


# --------------------------------------------------------------------------------------------
# Body builders (proto/requests.md §2.5, §3)
# --------------------------------------------------------------------------------------------


def crc32_masked(data: Optional[bytes]) -> int:
    """CRC-32/IEEE masked with 0x7FFFFFFF, as brokers put in bodyCrc32 (proto/requests.md §2.5)."""
    return zlib.crc32(data or b"") & 0x7FFFFFFF


@dataclass
class DataVersion:
    counter: int = 0
    timestamp: int = 0
    state_version: Optional[int] = 0  # None = a 4.9.x DataVersion without stateVersion

    def to_obj(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"counter": self.counter}
        if self.state_version is not None:
            d["stateVersion"] = self.state_version
        d["timestamp"] = self.timestamp
        return d

    def to_json(self) -> str:
        return fj_dumps(self.to_obj())

    def encode(self) -> bytes:
        return self.to_json().encode("utf-8")

    @staticmethod
    def from_obj(obj: Mapping[str, Any]) -> "DataVersion":
        return DataVersion(
            counter=int(obj.get("counter", 0)),
            timestamp=int(obj.get("timestamp", 0)),
            state_version=int(obj.get("stateVersion", 0)),
        )

    def same_as(self, other: "DataVersion") -> bool:
        """Equality as the NameServer compares it (proto/route.md §4); missing stateVersion = 0."""
        return (
            self.counter == other.counter
            and self.timestamp == other.timestamp
            and (self.state_version or 0) == (other.state_version or 0)
        )


@dataclass
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_sys_flag: int = 0
    topic_filter_type: str = "SINGLE_TAG"
    order: bool = False
    attributes: Optional[Dict[str, str]] = field(default_factory=dict)  # None = 4.9.x (no field)

    def to_obj(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {}
        if self.attributes is not None:
            d["attributes"] = self.attributes
        d.update(
            order=self.order,
            perm=self.perm,
            readQueueNums=self.read_queue_nums,
            topicFilterType=self.topic_filter_type,
            topicName=self.topic_name,
            topicSysFlag=self.topic_sys_flag,
            writeQueueNums=self.write_queue_nums,
        )
        return d

    def to_text(self) -> str:
        """The space-separated form of the compressed body (proto/requests.md §2.5.2). 5.x appends the
        attributes JSON; 4.9.x (attributes None) stops after topicFilterType."""
        parts = [
            self.topic_name,
            str(self.read_queue_nums),
            str(self.write_queue_nums),
            str(self.perm),
            self.topic_filter_type,
        ]
        if self.attributes is not None:
            parts.append(fj_dumps(self.attributes))
        return " ".join(parts)


def topic_queue_mapping_info(
    topic: str,
    bname: str,
    *,
    total_queues: int = 8,
    epoch: int = 0,
    curr_id_map: Optional[Mapping[int, int]] = None,
    scope: str = "__global__",
    dirty: bool = False,
) -> Dict[str, Any]:
    """A TopicQueueMappingInfo bean; currIdMap has int keys, written bare by fj_dumps."""
    return {
        "bname": bname,
        "currIdMap": dict(curr_id_map if curr_id_map is not None else {0: 0}),
        "dirty": dirty,
        "epoch": epoch,
        "scope": scope,
        "topic": topic,
        "totalQueues": total_queues,
    }


def _topic_table(topics: Iterable[TopicConfig]) -> Dict[str, Any]:
    return {t.topic_name: t.to_obj() for t in topics}


def topic_config_wrapper_obj(
    topics: Iterable[TopicConfig],
    data_version: DataVersion,
    *,
    mapping_infos: Optional[Sequence[Mapping[str, Any]]] = None,
    v4: bool = False,
) -> Dict[str, Any]:
    """TopicConfigSerializeWrapper (5.x: TopicConfigAndMappingSerializeWrapper)."""
    if v4:
        return {"dataVersion": data_version.to_obj(), "topicConfigTable": _topic_table(topics)}
    return {
        "dataVersion": data_version.to_obj(),
        "mappingDataVersion": DataVersion(0, data_version.timestamp, 0).to_obj(),
        "topicConfigTable": _topic_table(topics),
        "topicQueueMappingDetailMap": {},
        "topicQueueMappingInfoMap": {m["topic"]: dict(m) for m in (mapping_infos or [])},
    }


def register_broker_body_json(
    topics: Iterable[TopicConfig],
    data_version: DataVersion,
    *,
    filter_servers: Sequence[str] = (),
    mapping_infos: Optional[Sequence[Mapping[str, Any]]] = None,
    v4: bool = False,
) -> bytes:
    """RegisterBrokerBody as fastjson writes it (proto/requests.md §2.5.1). v4=True gives a 4.9.x body:
    no stateVersion, no attributes and no mapping sections (set those on the inputs too)."""
    body = {
        "filterServerList": list(filter_servers),
        "topicConfigSerializeWrapper": topic_config_wrapper_obj(
            topics, data_version, mapping_infos=mapping_infos, v4=v4
        ),
    }
    return fj_dumps(body).encode("utf-8")


def _lp(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def register_broker_body_compressed_payload(
    topics: Sequence[TopicConfig],
    data_version: DataVersion,
    *,
    filter_servers: Sequence[str] = (),
    mapping_infos: Optional[Sequence[Mapping[str, Any]]] = None,
    version: int = CURRENT_VERSION,
) -> bytes:
    """The inflated item stream of the compressed form (proto/requests.md §2.5.2)."""
    out = bytearray(_lp(data_version.encode()))
    out += struct.pack(">i", len(topics))
    for t in topics:
        out += _lp(t.to_text().encode("utf-8"))
    out += _lp(fj_dumps(list(filter_servers)).encode("utf-8"))
    if version >= VERSION_V5_0_0:
        infos = list(mapping_infos or [])
        out += struct.pack(">i", len(infos))
        for m in infos:
            out += _lp(fj_dumps(m).encode("utf-8"))
    return bytes(out)


def register_broker_body_compressed(
    topics: Sequence[TopicConfig],
    data_version: DataVersion,
    *,
    filter_servers: Sequence[str] = (),
    mapping_infos: Optional[Sequence[Mapping[str, Any]]] = None,
    version: int = CURRENT_VERSION,
) -> bytes:
    """zlib stream (BEST_COMPRESSION, starts 78 DA) of the compressed payload."""
    payload = register_broker_body_compressed_payload(
        topics, data_version, filter_servers=filter_servers, mapping_infos=mapping_infos, version=version
    )
    return zlib.compress(payload, 9)


def register_broker_ext(
    *,
    cluster: str,
    broker_name: str,
    broker_addr: str,
    broker_id: int = 0,
    ha_server_addr: Optional[str] = None,
    body: Optional[bytes] = None,
    compressed: bool = False,
    enable_acting_master: Optional[bool] = False,
    heartbeat_timeout_millis: Optional[int] = None,
    zone_name: Optional[str] = None,
    crc: Optional[int] = None,
) -> Dict[str, str]:
    """RegisterBrokerRequestHeader ext fields. enable_acting_master=None omits the key (a
    4.9.x-style broker); crc=None computes the masked CRC of body."""
    ext: Dict[str, Any] = {
        "brokerAddr": broker_addr,
        "brokerId": broker_id,
        "brokerName": broker_name,
        "clusterName": cluster,
        "compressed": compressed,
        "bodyCrc32": crc32_masked(body) if crc is None else crc,
        "haServerAddr": ha_server_addr if ha_server_addr is not None else _ha_addr(broker_addr),
    }
    if enable_acting_master is not None:
        ext["enableActingMaster"] = enable_acting_master
    if heartbeat_timeout_millis is not None:
        ext["heartbeatTimeoutMillis"] = heartbeat_timeout_millis
    if zone_name is not None:
        ext["__ZONE_NAME"] = zone_name
    return {k: _ext_value_to_str(v) for k, v in ext.items()}


def _ha_addr(broker_addr: str) -> str:
    host, _, port = broker_addr.rpartition(":")
    try:
        return f"{host}:{int(port) + 1}"
    except ValueError:
        return broker_addr


def topic_route_body_for_register(topic: str, queue_datas: Sequence[Mapping[str, Any]]) -> bytes:
    """REGISTER_TOPIC_IN_NAMESRV body: a TopicRouteData with queueDatas (proto/requests.md §2.13)."""
    return fj_dumps(
        {
            "brokerDatas": [],
            "filterServerTable": {},
            "queueDatas": [
                {
                    "brokerName": q["brokerName"],
                    "perm": q.get("perm", 6),
                    "readQueueNums": q.get("readQueueNums", 4),
                    "topicSysFlag": q.get("topicSysFlag", 0),
                    "writeQueueNums": q.get("writeQueueNums", 4),
                }
                for q in queue_datas
            ],
        }
    ).encode("utf-8")


def parse_properties(text: str) -> Dict[str, str]:
    """Enough of java.util.Properties for server output: key=value lines, # ! comments."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", s)
        if m:
            out[m.group(1)] = m.group(2)
        else:
            out[s] = ""
    return out


# --------------------------------------------------------------------------------------------
# A thin NameServer API over Connection, for tests and simulators
# --------------------------------------------------------------------------------------------


@dataclass
class Broker:
    """A broker identity with helpers to build its requests."""

    cluster: str = "DefaultCluster"
    name: str = "broker-a"
    addr: str = "127.0.0.1:10911"
    broker_id: int = 0
    ha_addr: Optional[str] = None
    zone: Optional[str] = None
    enable_acting_master: Optional[bool] = False
    heartbeat_timeout_millis: Optional[int] = None

    def unregister_ext(self) -> Dict[str, str]:
        return {
            "brokerAddr": self.addr,
            "brokerId": str(self.broker_id),
            "brokerName": self.name,
            "clusterName": self.cluster,
        }

    def heartbeat_ext(self) -> Dict[str, str]:
        return {"brokerAddr": self.addr, "brokerName": self.name, "clusterName": self.cluster}


class NamesrvClient:
    """Typed wrappers over a Connection. Every method returns the response Command."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def put_kv(self, namespace: str, key: str, value: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value}, **kw)

    def get_kv(self, namespace: str, key: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key}, **kw)

    def delete_kv(self, namespace: str, key: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key}, **kw)

    def get_kvlist(self, namespace: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace}, **kw)

    def register_broker(
        self,
        broker: Broker,
        topics: Sequence[TopicConfig] = (),
        data_version: Optional[DataVersion] = None,
        *,
        compressed: bool = False,
        compressed_flag: Optional[bool] = None,
        crc: Optional[int] = None,
        filter_servers: Sequence[str] = (),
        mapping_infos: Optional[Sequence[Mapping[str, Any]]] = None,
        body: Optional[bytes] = None,
        version: Optional[int] = None,
        oneway: bool = False,
        extra_ext: Optional[Mapping[str, Any]] = None,
        **kw: Any,
    ) -> Optional[Command]:
        """REGISTER_BROKER. compressed picks the body form; compressed_flag overrides the
        header flag (to send a compressed body labelled compressed=false, like 5.x brokers)."""
        ver = self.conn.version if version is None else version
        dv = data_version if data_version is not None else DataVersion(1, 1, 0)
        if body is None:
            if compressed:
                body = register_broker_body_compressed(
                    list(topics), dv, filter_servers=filter_servers, mapping_infos=mapping_infos, version=ver
                )
            else:
                body = register_broker_body_json(
                    topics, dv, filter_servers=filter_servers, mapping_infos=mapping_infos
                )
        ext = register_broker_ext(
            cluster=broker.cluster,
            broker_name=broker.name,
            broker_addr=broker.addr,
            broker_id=broker.broker_id,
            ha_server_addr=broker.ha_addr,
            body=body,
            compressed=compressed if compressed_flag is None else compressed_flag,
            enable_acting_master=broker.enable_acting_master,
            heartbeat_timeout_millis=broker.heartbeat_timeout_millis,
            zone_name=broker.zone,
            crc=crc,
        )
        if extra_ext:
            ext.update({k: _ext_value_to_str(v) for k, v in extra_ext.items()})
        if oneway:
            self.conn.oneway(RequestCode.REGISTER_BROKER, ext, body, version=ver, **kw)
            return None
        return self.conn.request(RequestCode.REGISTER_BROKER, ext, body, version=ver, **kw)

    def unregister_broker(self, broker: Broker, **kw: Any) -> Command:
        return self.conn.request(RequestCode.UNREGISTER_BROKER, broker.unregister_ext(), **kw)

    def heartbeat(self, broker: Broker, oneway: bool = True, **kw: Any) -> Optional[Command]:
        if oneway:
            self.conn.oneway(RequestCode.BROKER_HEARTBEAT, broker.heartbeat_ext(), **kw)
            return None
        return self.conn.request(RequestCode.BROKER_HEARTBEAT, broker.heartbeat_ext(), **kw)

    def query_data_version(self, broker: Broker, dv: Optional[DataVersion], oneway: bool = False, **kw: Any):
        body = dv.encode() if dv is not None else None
        if oneway:
            self.conn.oneway(RequestCode.QUERY_DATA_VERSION, broker.unregister_ext(), body, **kw)
            return None
        return self.conn.request(RequestCode.QUERY_DATA_VERSION, broker.unregister_ext(), body, **kw)

    def get_route(self, topic: str, extra_ext: Optional[Mapping[str, Any]] = None, **kw: Any) -> Command:
        ext: Dict[str, Any] = {"topic": topic}
        if extra_ext:
            ext.update(extra_ext)
        return self.conn.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, **kw)

    def cluster_info(self, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_BROKER_CLUSTER_INFO, None, **kw)

    def wipe_write_perm(self, broker_name: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": broker_name}, **kw)

    def add_write_perm(self, broker_name: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": broker_name}, **kw)

    def all_topics(self, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None, **kw)

    def delete_topic(self, topic: str, cluster: Optional[str] = None, **kw: Any) -> Command:
        ext = {"topic": topic}
        if cluster is not None:
            ext["clusterName"] = cluster
        return self.conn.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext, **kw)

    def register_topic(self, topic: str, queue_datas: Sequence[Mapping[str, Any]], **kw: Any) -> Command:
        return self.conn.request(
            RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": topic}, topic_route_body_for_register(topic, queue_datas), **kw
        )

    def topics_by_cluster(self, cluster: str, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster}, **kw)

    def system_topics(self, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, None, **kw)

    def unit_topics(self, code: int, **kw: Any) -> Command:
        return self.conn.request(code, None, **kw)

    def update_config(self, text: Optional[str], **kw: Any) -> Command:
        return self.conn.request(
            RequestCode.UPDATE_NAMESRV_CONFIG, None, None if text is None else text.encode("utf-8"), **kw
        )

    def get_config(self, **kw: Any) -> Command:
        return self.conn.request(RequestCode.GET_NAMESRV_CONFIG, None, **kw)

    def member_group(self, cluster: str, broker_name: str, **kw: Any) -> Command:
        return self.conn.request(
            RequestCode.GET_BROKER_MEMBER_GROUP, {"clusterName": cluster, "brokerName": broker_name}, **kw
        )
