"""fastjson text, the one Python module for it in cluster-tests: the writer (default mode, bare
int keys), the lenient reader (bare numeric keys, as fastjson's default mode writes them), and the
order-preserving raw-token tree the compat harness uses to compare nsrvd's bodies with Java's byte
for byte once maps and lists are put in Java's order.

One parser serves both readers: it keeps every token's raw text next to its value.
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Mapping, Optional, Tuple

__all__ = [
    "FastjsonError",
    "LenientJSONError",
    "ParseError",
    "Node",
    "fj_dumps",
    "parse",
    "emit",
    "reorder",
    "compare_bytes",
    "loads_lenient",
    "parse_lenient",
    "count_bare_keys",
]


# --------------------------------------------------------------------------------------------
# Writer
# --------------------------------------------------------------------------------------------


def fj_dumps(obj: Any) -> str:
    """Write like fastjson's default mode: no whitespace, int dict keys bare ({0:0}), str keys
    quoted, non-ASCII raw. Dict order is kept, so build beans with alphabetical keys."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, (int, float)):
        return json.dumps(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, Mapping):
        parts = []
        for k, v in obj.items():
            ks = str(k) if isinstance(k, int) and not isinstance(k, bool) else json.dumps(str(k), ensure_ascii=False)
            parts.append(ks + ":" + fj_dumps(v))
        return "{" + ",".join(parts) + "}"
    if isinstance(obj, (list, tuple, set, frozenset)):
        return "[" + ",".join(fj_dumps(v) for v in obj) + "]"
    if hasattr(obj, "to_obj"):
        return fj_dumps(obj.to_obj())
    raise TypeError(f"cannot write {type(obj)}")


# --------------------------------------------------------------------------------------------
# Parser: a tree of raw tokens with their values
# --------------------------------------------------------------------------------------------


class FastjsonError(ValueError):
    pass


# The names the two former modules used.
LenientJSONError = FastjsonError
ParseError = FastjsonError

_WS = " \t\r\n"
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_BARE_KEY = re.compile(r"-?\d+")


class Node:
    """kind "obj" (items: [(key_raw, key, bare, Node)]), "arr" (items: [Node]) or "lit" (raw, value)."""

    __slots__ = ("kind", "raw", "value", "items")

    def __init__(self, kind: str, raw: str = "", value: Any = None, items: Optional[list] = None) -> None:
        self.kind = kind
        self.raw = raw
        self.value = value
        self.items = items if items is not None else []


class _P:
    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def fail(self, msg: str) -> None:
        raise FastjsonError(f"{msg} at offset {self.i}: {self.s[max(0, self.i - 20):self.i + 20]!r}")

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in _WS:
            i += 1
        self.i = i

    def value(self) -> Node:
        self.ws()
        if self.i >= len(self.s):
            self.fail("unexpected end")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            raw, v = self.string()
            return Node("lit", raw, v)
        for lit, val in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(lit, self.i):
                self.i += len(lit)
                return Node("lit", lit, val)
        m = _NUM.match(self.s, self.i)
        if not m:
            self.fail("bad value")
        self.i = m.end()
        t = m.group()
        return Node("lit", t, float(t) if any(ch in t for ch in ".eE") else int(t))

    def string(self) -> Tuple[str, str]:
        start = self.i
        try:
            v, end = json.decoder.scanstring(self.s, self.i + 1, True)
        except ValueError as e:
            raise FastjsonError(str(e)) from None
        self.i = end
        return self.s[start:end], v

    def key(self) -> Tuple[str, str, bool]:
        self.ws()
        if self.s.startswith('"', self.i):
            raw, v = self.string()
            return raw, v, False
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            self.fail("bad object key")
        self.i = m.end()
        return m.group(), m.group(), True

    def obj(self) -> Node:
        self.i += 1
        n = Node("obj")
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return n
        while True:
            kraw, k, bare = self.key()
            self.ws()
            if not self.s.startswith(":", self.i):
                self.fail("expected ':'")
            self.i += 1
            n.items.append((kraw, k, bare, self.value()))
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return n
            self.fail("expected ',' or '}'")

    def arr(self) -> Node:
        self.i += 1
        n = Node("arr")
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            return n
        while True:
            n.items.append(self.value())
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("]", self.i):
                self.i += 1
                return n
            self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    p = _P(text)
    v = p.value()
    p.ws()
    if p.i != len(text):
        p.fail("trailing characters")
    return v


# --------------------------------------------------------------------------------------------
# Lenient reader: values
# --------------------------------------------------------------------------------------------


def _to_value(n: Node, int_keys: bool, counts: List[int]) -> Any:
    if n.kind == "lit":
        return n.value
    if n.kind == "arr":
        return [_to_value(x, int_keys, counts) for x in n.items]
    out: dict = {}
    for _, k, bare, v in n.items:
        counts[0 if bare else 1] += 1
        out[int(k) if bare and int_keys else k] = _to_value(v, int_keys, counts)
    return out


def parse_lenient(text: str, *, int_keys: bool = False) -> Tuple[Any, int, int]:
    """Returns (value, number of bare keys, number of quoted keys)."""
    counts = [0, 0]
    v = _to_value(parse(text), int_keys, counts)
    return v, counts[0], counts[1]


def loads_lenient(text: str, *, int_keys: bool = False) -> Any:
    """Parse JSON that may have bare numeric object keys (fastjson default mode). Bare keys
    become strings (so the result compares equal to a standard-JSON parse) unless int_keys."""
    return parse_lenient(text, int_keys=int_keys)[0]


def count_bare_keys(text: str) -> int:
    return parse_lenient(text)[1]


# --------------------------------------------------------------------------------------------
# Byte-for-byte comparison once maps and lists are in the reference's order
# --------------------------------------------------------------------------------------------


def emit(n: Node) -> str:
    """Compact text from the raw tokens (no whitespace)."""
    if n.kind == "lit":
        return n.raw
    if n.kind == "arr":
        return "[" + ",".join(emit(x) for x in n.items) + "]"
    return "{" + ",".join(kraw + ":" + emit(v) for kraw, _, _, v in n.items) + "}"


def _value(n: Node) -> Any:
    """Comparable value (keys as strings, so bare and quoted keys match)."""
    return _to_value(n, False, [0, 0])


def _vkey(n: Node) -> str:
    return json.dumps(_value(n), sort_keys=True)


def reorder(mine: Node, ref: Node) -> Node:
    """mine with object members and list elements in ref's order where they correspond."""
    if mine.kind != ref.kind or mine.kind == "lit":
        return mine
    if mine.kind == "obj":
        rest = list(mine.items)
        out = []
        for _, k, _, rv in ref.items:
            for idx, (kraw, k2, bare, v) in enumerate(rest):
                if k2 == k:
                    out.append((kraw, k2, bare, reorder(v, rv)))
                    del rest[idx]
                    break
        return Node("obj", items=out + rest)
    rest = list(mine.items)
    out2: List[Node] = []
    for rv in ref.items:
        key = _vkey(rv)
        hit = next((i for i, x in enumerate(rest) if _vkey(x) == key), None)
        if hit is None:
            continue
        out2.append(reorder(rest.pop(hit), rv))
    # elements without an equal partner keep their relative order; pair them up positionally
    ref_left = [rv for rv in ref.items if all(_vkey(rv) != _vkey(o) for o in out2)]
    for i, x in enumerate(rest):
        out2.append(reorder(x, ref_left[i]) if i < len(ref_left) else x)
    return Node("arr", items=out2)


def compare_bytes(mine_raw: str, ref_raw: str) -> Optional[str]:
    """None if mine equals ref byte for byte once reordered; else a short description."""
    try:
        mine, ref = parse(mine_raw), parse(ref_raw)
    except FastjsonError as e:
        return f"unparsable: {e}"
    if emit(mine) != mine_raw:
        return "nsrvd's body is not compact JSON"
    out = emit(reorder(mine, ref))
    if out == ref_raw:
        return None
    i = next((k for k in range(min(len(out), len(ref_raw))) if out[k] != ref_raw[k]), min(len(out), len(ref_raw)))
    return f"first difference at byte {i}: nsrvd …{out[max(0, i - 40):i + 40]!r} vs Java …{ref_raw[max(0, i - 40):i + 40]!r}"
