"""Assertion helpers shared by the nsrvd black-box suites."""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

from rmq import (
    CURRENT_VERSION,
    FLAG_RESPONSE,
    Command,
    SerializeType,
    parse_lenient,
)

RESPONSE_VERSION = CURRENT_VERSION  # the version nsrvd stamps on responses (479)


def assert_envelope(resp: Command, req: Optional[Command] = None, *, serialize_type: Optional[int] = None) -> None:
    """What every response must carry (proto/remoting.md §5 and the nsrvd contract): flag exactly 1,
    version 479, language JAVA, the request's opaque, the request's serialize type."""
    assert resp is not None, "no response"
    assert resp.flag == FLAG_RESPONSE, f"response flag must be exactly 1: {resp!r}"
    assert resp.version == RESPONSE_VERSION, f"response version must be {RESPONSE_VERSION}: {resp!r}"
    assert resp.language_name == "JAVA", f"response language must be JAVA: {resp!r}"
    if req is not None:
        assert resp.opaque == req.opaque, f"opaque not echoed ({req.opaque}): {resp!r}"
        st = req.serialize_type if serialize_type is None else serialize_type
    else:
        st = serialize_type
    if st is not None:
        assert resp.serialize_type == st, f"response serialize type must mirror the request ({st}): {resp!r}"
    if resp.serialize_type == SerializeType.JSON and resp.header_json is not None:
        assert resp.header_json.get("serializeTypeCurrentRPC", "JSON") == "JSON", resp.header_json


def assert_code(resp: Command, code: int, remark: Any = ..., *, ext: Any = ..., body: Any = ...) -> None:
    """Check code and optionally the exact remark/ext/body. ``...`` means "don't check".
    For JSON responses ext=None asserts that the extFields key is absent and remark=None that
    the remark key is absent. For binary responses an empty map is the same as no map."""
    assert resp.code == code, f"expected code {code}, got {resp!r}"
    if remark is not ...:
        assert resp.remark == remark, f"remark mismatch: want {remark!r}, got {resp!r}"
        if remark is None and resp.header_json is not None:
            assert "remark" not in resp.header_json, f"remark key should be omitted: {resp.raw_header!r}"
    if ext is not ...:
        if resp.serialize_type == SerializeType.JSON:
            if ext is None:
                assert resp.header_json is not None and "extFields" not in resp.header_json, (
                    f"extFields should be omitted: {resp.raw_header!r}"
                )
            else:
                assert resp.ext == ext, f"ext mismatch: want {ext!r}, got {resp!r}"
        else:
            assert (resp.ext or {}) == (ext or {}), f"ext mismatch: want {ext!r}, got {resp!r}"
    if body is not ...:
        got = resp.body
        want = body.encode() if isinstance(body, str) else body
        assert got == want, f"body mismatch:\n want {want!r}\n got  {got!r}"


def ok(resp: Command, req: Optional[Command] = None) -> Command:
    assert_envelope(resp, req)
    assert resp.code == 0, f"expected SUCCESS, got {resp!r}"
    return resp


def standard_json(resp: Command) -> Any:
    """The body must be strict standard JSON (quoted keys)."""
    text = resp.body_text()
    try:
        return json.loads(text)
    except ValueError as e:
        raise AssertionError(f"body is not standard JSON ({e}): {text!r}") from None


def default_mode_json(resp: Command, *, expect_bare: bool = True) -> Any:
    """Parse a fastjson default-mode body; if expect_bare, numeric map keys must be bare."""
    text = resp.body_text()
    v, bare, _ = parse_lenient(text)
    if expect_bare:
        assert bare > 0, f"expected bare numeric keys in {text!r}"
    return v


def wait_until(pred: Callable[[], Any], timeout: float, interval: float = 0.05, msg: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"condition not met within {timeout:.1f}s {msg}")
        time.sleep(interval)


# ---------------------------------------------------------------- NameServer shortcuts

def register_ok(ns, broker, topics=(), data_version=None, **kw) -> Command:
    """REGISTER_BROKER that must succeed."""
    resp = ns.register_broker(broker, topics, data_version, **kw)
    assert_envelope(resp)
    assert resp.code == 0, f"register {broker} failed: {resp!r}"
    return resp


def route_or_none(ns, topic: str, **kw) -> Any:
    """Parsed route (lenient) or None when the server answers TOPIC_NOT_EXIST."""
    resp = ns.get_route(topic, **kw)
    assert_envelope(resp)
    if resp.code == 17:
        return None
    assert resp.code == 0, f"route {topic}: {resp!r}"
    return resp.body_json()


def route_addrs(route: Any) -> dict:
    """brokerName -> {id: addr} of a parsed route."""
    return {bd["brokerName"]: bd["brokerAddrs"] for bd in route["brokerDatas"]}


def route_perms(route: Any) -> dict:
    return {qd["brokerName"]: qd["perm"] for qd in route["queueDatas"]}
