"""Order-preserving view of a fastjson body, for byte-for-byte comparison "once maps are put in
the same order": parse both bodies keeping every token's raw text, reorder the nsrvd tree's
object members and list elements to the Java tree's order (members matched by key, list
elements by value), write it back from the raw tokens, and compare bytes with Java's body.
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Optional, Tuple

_WS = " \t\r\n"
_NUM = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_BARE_KEY = re.compile(r"-?\d+")


class Node:
    __slots__ = ("kind", "raw", "items")

    def __init__(self, kind: str, raw: str = "", items: Optional[list] = None) -> None:
        self.kind = kind  # "obj" (items: [(key_raw, key, Node)]), "arr" (items: [Node]), "lit"
        self.raw = raw
        self.items = items if items is not None else []


class ParseError(ValueError):
    pass


class _P:
    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in _WS:
            self.i += 1

    def value(self) -> Node:
        self.ws()
        if self.i >= len(self.s):
            raise ParseError("unexpected end")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return Node("lit", self.string())
        for lit in ("true", "false", "null"):
            if self.s.startswith(lit, self.i):
                self.i += len(lit)
                return Node("lit", lit)
        m = _NUM.match(self.s, self.i)
        if not m:
            raise ParseError(f"bad value at {self.i}")
        self.i = m.end()
        return Node("lit", m.group())

    def string(self) -> str:
        start = self.i
        try:
            _, end = json.decoder.scanstring(self.s, self.i + 1, True)
        except ValueError as e:
            raise ParseError(str(e)) from None
        self.i = end
        return self.s[start:end]

    def key(self) -> Tuple[str, str]:
        self.ws()
        if self.s.startswith('"', self.i):
            raw = self.string()
            return raw, json.loads(raw)
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise ParseError(f"bad key at {self.i}")
        self.i = m.end()
        return m.group(), m.group()

    def obj(self) -> Node:
        self.i += 1
        n = Node("obj")
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return n
        while True:
            kraw, k = self.key()
            self.ws()
            if not self.s.startswith(":", self.i):
                raise ParseError(f"expected ':' at {self.i}")
            self.i += 1
            n.items.append((kraw, k, self.value()))
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return n
            raise ParseError(f"expected ',' or '}}' at {self.i}")

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
            raise ParseError(f"expected ',' or ']' at {self.i}")


def parse(text: str) -> Node:
    p = _P(text)
    v = p.value()
    p.ws()
    if p.i != len(text):
        raise ParseError("trailing characters")
    return v


def emit(n: Node) -> str:
    """Compact text from the raw tokens (no whitespace)."""
    if n.kind == "lit":
        return n.raw
    if n.kind == "arr":
        return "[" + ",".join(emit(x) for x in n.items) + "]"
    return "{" + ",".join(kraw + ":" + emit(v) for kraw, _, v in n.items) + "}"


def _value(n: Node) -> Any:
    """Comparable value (keys as strings, so bare and quoted keys match)."""
    if n.kind == "lit":
        return json.loads(n.raw)
    if n.kind == "arr":
        return [_value(x) for x in n.items]
    return {k: _value(v) for _, k, v in n.items}


def _vkey(n: Node) -> str:
    return json.dumps(_value(n), sort_keys=True)


def reorder(mine: Node, ref: Node) -> Node:
    """mine with object members and list elements in ref's order where they correspond."""
    if mine.kind != ref.kind or mine.kind == "lit":
        return mine
    if mine.kind == "obj":
        rest = list(mine.items)
        out = []
        for _, k, rv in ref.items:
            for idx, (kraw, k2, v) in enumerate(rest):
                if k2 == k:
                    out.append((kraw, k2, reorder(v, rv)))
                    del rest[idx]
                    break
        return Node("obj", items=out + rest)
    rest = list(mine.items)
    out: List[Node] = []
    for rv in ref.items:
        key = _vkey(rv)
        hit = next((i for i, x in enumerate(rest) if _vkey(x) == key), None)
        if hit is None:
            continue
        out.append(reorder(rest.pop(hit), rv))
    # elements without an equal partner keep their relative order; pair them up positionally
    ref_left = [rv for rv in ref.items if all(_vkey(rv) != _vkey(o) for o in out)]
    for i, x in enumerate(rest):
        out.append(reorder(x, ref_left[i]) if i < len(ref_left) else x)
    return Node("arr", items=out)


def compare_bytes(mine_raw: str, ref_raw: str) -> Optional[str]:
    """None if mine equals ref byte for byte once reordered; else a short description."""
    try:
        mine, ref = parse(mine_raw), parse(ref_raw)
    except ParseError as e:
        return f"unparsable: {e}"
    if emit(mine) != mine_raw:
        return "nsrvd's body is not compact JSON"
    out = emit(reorder(mine, ref))
    if out == ref_raw:
        return None
    i = next((k for k in range(min(len(out), len(ref_raw))) if out[k] != ref_raw[k]), min(len(out), len(ref_raw)))
    return f"first difference at byte {i}: nsrvd …{out[max(0, i - 40):i + 40]!r} vs Java …{ref_raw[max(0, i - 40):i + 40]!r}"
