"""/metrics checked by real Prometheus tooling, then read by name and labels.

``scrape(port)`` fetches http://127.0.0.1:PORT/metrics, runs ``promtool check metrics`` on it
(Debian package ``prometheus``: Prometheus's own text parser plus its lint: HELP and TYPE on
every family, name conventions, histogram shape), then reads the samples with the small
parser below (the page is already known to be well-formed). The result maps (sample name,
frozenset of label pairs) to the value; ``Samples.get(name, **labels)`` reads one.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import urllib.request
from typing import Dict, FrozenSet, Tuple

Key = Tuple[str, FrozenSet[Tuple[str, str]]]


class Samples(dict):
    def get(self, name: str, default=None, **labels):  # type: ignore[override]
        return super().get((name, frozenset(labels.items())), default)

    def named(self, name: str) -> Dict[FrozenSet[Tuple[str, str]], float]:
        return {k[1]: v for k, v in self.items() if k[0] == name}


def promtool_check(text: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        raise RuntimeError("promtool not found: install the Debian package 'prometheus' (conf/test-deps.txt)")
    out = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    problems = (out.stdout + out.stderr).decode().strip()
    assert out.returncode == 0 and not problems, f"promtool check metrics: {problems}"


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text: str) -> Samples:
    s = Samples()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"unparsable sample line: {line!r}"
        labels = frozenset((k, v.replace('\\"', '"').replace("\\\\", "\\")) for k, v in _LABEL.findall(m.group(2) or ""))
        value = math.inf if m.group(3) == "+Inf" else float(m.group(3))
        key = (m.group(1), labels)
        assert key not in s, f"duplicate sample {key}"
        s[key] = value
    return s


def scrape(port: int, timeout: float = 10.0) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    promtool_check(text)
    return parse(text)


def samples_by_line(port: int, timeout: float = 10.0) -> Dict[str, float]:
    """The samples keyed by their text as written (``name{labels}``), without promtool: for
    tests that only compare counters before and after an action."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        text = r.read().decode()
    out = {}
    for ln in text.splitlines():
        if ln and not ln.startswith("#") and " " in ln:
            k, v = ln.split(" ", 1)
            out[k] = float(v)
    return out
