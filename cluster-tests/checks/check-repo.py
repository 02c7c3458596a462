#!/usr/bin/env python3
"""Keeps the repository self-contained (ctest ``repo_check``, label ``static``).

Usage: cluster-tests/checks/check-repo.py [REPO_ROOT]   (default: the repository this file is in)
       cluster-tests/checks/check-repo.py --include-graph [REPO_ROOT]
       cluster-tests/checks/check-repo.py --self-test   (plants each problem in a scratch repository)

Reads every tracked text file and reports, one line each, and exits 1 when any:

1. cites a document that is not in the repository: "spec §..", "ref §..", "reference §..", a
   background document by name, or "<name>.md §N" where no tracked <name>.md exists;
2. cites a section that does not exist: "<doc>.md §N.M" must match a numbered heading of that
   tracked document ("## N." / "### N.M" ...). Several sections may follow one document name
   ("proto/route.md §3, §5", "§7.2-7.3"); a bare "§N" is allowed only inside a document with
   numbered headings, where it refers to that document itself;
3. holds an absolute path of a particular machine (a directory of this workplace, root's home or a
   user's home; the exact pattern is MACHINE_PATH below):
   paths are derived from the repository root instead;
4. refers to an entry of the project's tracker by its number (the pattern is ISSUE_NUMBER
   below): the tracker is not part of the repository, so the text names what it means (the
   target, the feature, the document) instead;
5. breaks the layering of ARCHITECTURE.md's module map (check_layers: a src/ folder without a
   row, an include its row does not allow, a row using one below it, a cycle between folders;
   --include-graph prints the graph);
6. misnames a unit test or a private header, or includes another folder's private header;
7. lets cluster-tests/lib/rmq.py's request codes, response codes or client versions differ
   from proto/*.def and include/nsrv/mq_version.h.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SECTION = "\u00a7"  # the section sign, spelt so that this file does not match its own rules
NUM = r"\d+(?:\.\d+)*"

# Documents the project was built from that are not part of it (rule 1).
OUTSIDE_NAMES = [
    "rocketmq-" + "protocol.md",
    "gossip-" + "design",
    "peers-" + "and-users",
    "c-" + "style.md",
    "containers" + ".md",
    "shared/" + "reference",
]
OUTSIDE_CITE = re.compile(
    r"\b(?:spec|ref|reference|specification)\W{0,3}" + SECTION + r"|\bprotocol spec\s+\d", re.I
)
MACHINE_PATH = re.compile(r"(?<![\w$}.~/-])/(?:work|root|home/[A-Za-z_][\w.-]*)/")

# "<doc>.md §N" followed by more sections: ", §M", " and §M", "-M", "–§M". Separators may
# cross a line break and a comment leader (" * ", "# ", "// ").
GAP = r"(?:[ \t]|\n[ \t]*(?:\*|#|//)?[ \t]*)*"
TAIL = r"(?:[ \t]+(?:step|item)s?[ \t]+\w+)?"
DOC_CITE = re.compile(
    r"(?P<doc>[\w./-]+\.md)`?\)?`?"
    + GAP
    + SECTION
    + r" ?(?P<first>"
    + NUM
    + r")"
    + TAIL
    + r"(?P<rest>(?:"
    + GAP
    + r"(?:(?:,|;|and|or|to)"
    + GAP
    + SECTION
    + r" ?|[-\u2013]"
    + GAP
    + SECTION
    + r"? ?)"
    + NUM
    + TAIL
    + r")*)"
)
MORE = re.compile(r"(" + NUM + r")")
ANY_SECTION = re.compile(SECTION + r" ?(" + NUM + r")")
TRACKER = "iss" + "ue"  # the word the tracker's numbers follow, spelt so this file has none
ISSUE_CITE = re.compile(r"\bissue\s+\d+\s+" + SECTION + r" ?" + NUM, re.I)
ISSUE_NUMBER = re.compile(r"\bissues?[ \t-]#?\d+", re.I)
HEADING = re.compile(r"^#{1,6}[ \t]+(" + NUM + r")\.?[ \t]", re.M)


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True
    ).stdout
    return [p for p in out.decode().split("\0") if p]


def read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def check(root: Path) -> tuple[int, list[str]]:
    """Returns (text files read, problems) for the repository at root."""
    self_path = Path(__file__).resolve()
    files = tracked_files(root)
    texts = {}
    for f in files:
        p = root / f
        if p.resolve() == self_path:
            continue
        t = read_text(p)
        if t is not None:
            texts[f] = t

    # Numbered sections of every tracked markdown document, by path and by unique basename.
    sections = {f: set(HEADING.findall(t)) for f, t in texts.items() if f.endswith(".md")}
    by_base: dict[str, list[str]] = {}
    for f in sections:
        by_base.setdefault(Path(f).name, []).append(f)

    def resolve(doc: str, here: str) -> str | None:
        doc = doc.lstrip("./")
        if doc in sections:
            return doc
        rel = str((Path(here).parent / doc)).lstrip("./")
        if rel in sections:
            return rel
        cands = [f for f in sections if f.endswith("/" + doc)]
        if len(cands) == 1:
            return cands[0]
        cands = by_base.get(Path(doc).name, [])
        return cands[0] if len(cands) == 1 else None

    problems: list[str] = []

    def report(f: str, text: str, pos: int, msg: str) -> None:
        problems.append("%s:%d: %s" % (f, line_of(text, pos), msg))

    for f, text in texts.items():
        for m in OUTSIDE_CITE.finditer(text):
            report(f, text, m.start(), "cites a document outside the repository: %r" % m.group(0))
        low = text.lower()
        for name in OUTSIDE_NAMES:
            start = 0
            while (i := low.find(name, start)) >= 0:
                report(f, text, i, "names a document outside the repository: %r" % name)
                start = i + 1
        for m in MACHINE_PATH.finditer(text):
            report(f, text, m.start(), "absolute machine path %r: derive it from the repository root" % m.group(0))

        covered = set()
        for m in DOC_CITE.finditer(text):
            covered.update(range(m.start(), m.end()))
            target = resolve(m.group("doc"), f)
            if target is None:
                report(f, text, m.start(), "cites %s, which is not a document of the repository" % m.group("doc"))
                continue
            rest = re.sub(r"[ \t]+(?:step|item)s?[ \t]+\w+", "", m.group("rest"))
            nums = [m.group("first")] + MORE.findall(rest)
            for n in nums:
                if n not in sections[target]:
                    report(f, text, m.start(), "cites %s %s%s, which has no such section" % (target, SECTION, n))
        # A tracker number followed by a section mark is reported once, as a tracker reference,
        # not again as a bare section.
        for m in ISSUE_CITE.finditer(text):
            covered.update(range(m.start(), m.end()))
        for m in ISSUE_NUMBER.finditer(text):
            report(f, text, m.start(), "refers to a project issue by number %r: say what is meant" % m.group(0))
        own = sections.get(f)
        for m in ANY_SECTION.finditer(text):
            if m.start() in covered:
                continue
            if own:
                if m.group(1) not in own:
                    report(f, text, m.start(), "cites its own %s%s, which does not exist" % (SECTION, m.group(1)))
            else:
                report(f, text, m.start(), "bare %s%s: say which document (e.g. proto/route.md %s3)" % (SECTION, m.group(1), SECTION))

    folders = {m for f in files if (m := module_of(f)) and m != "main"}
    problems += check_layers(texts, folders)
    problems += check_names(texts)
    problems += check_vocabulary(texts)
    return len(texts), problems


# ---- rule 5: the module map and the include graph (ARCHITECTURE.md section 3) ----

ARCH = "ARCHITECTURE.md"
MAP_HEADING = re.compile(r"^## 3\. Module map\s*$", re.M)
MAP_ROW = re.compile(r"^\|(?P<where>[^|]*)\|[^|]*\|[^|]*\|(?P<uses>[^|]*)\|\s*$", re.M)
FOLDER_CELL = re.compile(r"`src/(\w+(?:/\w+)?)(?:/|\.c)`")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
# A function defined at the left margin of a .c file (the project's clang-format puts the
# return type on the same line): its name, for finding which module a public header belongs to.
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*?\b(nsrv_\w+)\([^;{]*\)?[ \t]*\{?[ \t]*$", re.M)
DECLARATION = re.compile(r"^(?!static\b|typedef\b|#)[A-Za-z_][\w \t*]*?\b(nsrv_\w+)\(", re.M)
# Public headers that declare no function of their own (types, constants, inline helpers):
# the module that owns them.
TYPE_HEADERS = {
    "common.h": "base",
    "uthash.h": "base",
    "mq_codes.h": "remoting",
    "mq_version.h": "remoting",
    "route_types.h": "remoting",
    "gossip_timing.h": "gossip/engine",
    "tls_names.h": "config",
}


# Folders whose subfolders are modules of their own (layers, each with its own row: the
# gossip codec, engine and I/O); their tests/ and fuzz/ belong to the parent, which has no row.
LAYERED = {"gossip"}


def module_of(path: str) -> str | None:
    """The src/ folder a repository file belongs to ("main" for src/main.c), else None."""
    parts = path.split("/")
    if len(parts) >= 4 and parts[0] == "src" and parts[1] in LAYERED and parts[2] not in ("tests", "fuzz"):
        return parts[1] + "/" + parts[2]
    if len(parts) >= 3 and parts[0] == "src":
        return parts[1]
    if path == "src/main.c":
        return "main"
    return None


def module_map(text: str) -> tuple[list[tuple[list[str], set[str]]], int]:
    """ARCHITECTURE.md's module map: (rows of (folders, may-use modules), heading offset)."""
    m = MAP_HEADING.search(text)
    if not m:
        return [], -1
    end = text.find("\n## ", m.end())
    body = text[m.end() : end if end >= 0 else len(text)]
    rows = []
    for r in MAP_ROW.finditer(body):
        folders = FOLDER_CELL.findall(r.group("where"))
        if not folders:
            continue
        uses = {w.strip(" `") for w in re.sub(r"\([^)]*\)", "", r.group("uses")).split(",")}
        rows.append((["main" if f == "main" else f for f in folders], uses))
    return rows, m.start()


def header_owners(texts: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """include/nsrv/<h> -> the module defining most of what it declares; unknown ones."""
    defined: dict[str, str] = {}
    for f, t in texts.items():
        mod = module_of(f)
        if mod and f.endswith(".c") and "/tests/" not in f and "/fuzz/" not in f:
            for name in DEFINITION.findall(t):
                defined.setdefault(name, mod)
    owners, unknown = {}, []
    for f, t in texts.items():
        if not (f.startswith("include/nsrv/") and f.endswith(".h")):
            continue
        base = f[len("include/nsrv/") :]
        votes: dict[str, int] = {}
        for name in DECLARATION.findall(t):
            if name in defined:
                votes[defined[name]] = votes.get(defined[name], 0) + 1
        if votes:
            owners[f] = max(sorted(votes), key=lambda k: votes[k])
        elif base in TYPE_HEADERS:
            owners[f] = TYPE_HEADERS[base]
        else:
            unknown.append(f)
    return owners, unknown


def include_graph(texts: dict[str, str]) -> tuple[dict[tuple[str, str], list[str]], list[str]]:
    """Edges between modules, (user, used) -> the files that make them; problems found."""
    owners, unknown = header_owners(texts)
    problems = ["%s: public header of no known module (add it to TYPE_HEADERS)" % f for f in unknown]
    edges: dict[tuple[str, str], list[str]] = {}
    for f, t in texts.items():
        if not f.endswith((".c", ".h")):
            continue
        user = module_of(f) or owners.get(f)
        if user is None:
            continue
        for inc in INCLUDE.findall(t):
            here = str(Path(f).parent / inc)
            cand = [os.path.normpath(here), "include/" + inc]
            target = next((c for c in cand if c in texts), None)
            if target is None:
                continue
            used = module_of(target) or owners.get(target)
            if used is None or used == user:
                continue
            if used == "testlib" and ("/tests/" in f or "/fuzz/" in f):
                continue
            edges.setdefault((user, used), []).append(f)
    return edges, problems


def cycles(edges) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_layers(texts: dict[str, str], folders: set[str]) -> list[str]:
    """Every src/ folder has a row in the module map; rows use only rows above them; every
    include between folders is one the map allows; no cycle between folders."""
    problems: list[str] = []
    arch = texts.get(ARCH)
    if arch is None:
        return problems
    rows, at = module_map(arch)
    where = "%s:%d" % (ARCH, line_of(arch, max(at, 0)))
    if not rows:
        return ["%s: no '## 3. Module map' table" % where]
    level: dict[str, int] = {}
    allowed: dict[str, set[str]] = {}
    for i, (mods, uses) in enumerate(rows):
        for mod in mods:
            level[mod] = i
            allowed[mod] = uses
    for f in sorted(folders - set(level) - LAYERED):
        problems.append("%s: src/%s/ has no row in the module map" % (where, f))
    for mod in sorted(level):
        if mod != "main" and mod not in folders:
            problems.append("%s: the module map names src/%s/, which does not exist" % (where, mod))
        for u in sorted(allowed[mod] & set(level)):
            if level[u] > level[mod]:
                problems.append("%s: %s may use %s, a row below it" % (where, mod, u))
    edges, more = include_graph(texts)
    problems += more
    for (a, b), files in sorted(edges.items()):
        if a in level and b not in allowed.get(a, set()):
            problems.append(
                "%s: includes a header of %s, which the module map does not let %s use"
                % (sorted(files)[0], b, a)
            )
    for group in cycles(edges):
        problems.append("include cycle between folders: %s" % " -> ".join(group))
    return problems


# ---- rule 6: names of tests and private headers, private headers stay private ----


def check_names(texts: dict[str, str]) -> list[str]:
    """Unit tests are src/<module>/tests/test_<module>_*.c; a private header src/<module>/x.h
    is named after its module or a .c file beside it (first word), and nothing outside
    src/<module>/ includes a header of that folder (testlib's are for every test)."""
    problems = []
    c_words: dict[str, set[str]] = {}
    for f in texts:
        parts = f.split("/")
        if len(parts) == 3 and parts[0] == "src" and f.endswith(".c"):
            c_words.setdefault(parts[1], set()).add(parts[2].split("_")[0].split(".")[0])
    for f in sorted(texts):
        parts = f.split("/")
        if len(parts) == 4 and parts[0] == "src" and parts[2] == "tests" and f.endswith(".c"):
            if not parts[3].startswith("test_%s_" % parts[1]):
                problems.append("%s: a unit test of %s is named test_%s_<what>.c" % (f, parts[1], parts[1]))
        if len(parts) == 3 and parts[0] == "src" and f.endswith(".h"):
            word = parts[2].split("_")[0].split(".")[0]
            if word != parts[1] and word not in c_words.get(parts[1], set()):
                problems.append(
                    "%s: a private header is named <module>_int.h or after the .c files it serves" % f
                )
    for f, t in sorted(texts.items()):
        if not f.endswith((".c", ".h")):
            continue
        for inc in INCLUDE.findall(t):
            target = os.path.normpath(str(Path(f).parent / inc))
            mod = module_of(target)
            if target in texts and mod and mod not in ("testlib", "main") and mod != module_of(f):
                problems.append("%s: includes %s, private to src/%s/" % (f, target, mod))
    return problems


# ---- rule 7: the Python client's protocol vocabulary is the C tables' ----

RMQ = "cluster-tests/lib/rmq.py"
DEF_ROW = re.compile(r"^X\((\d+),\s*(\w+)\)", re.M)
MQ_VERSION = re.compile(r"^#define NSRV_MQ_(V\w+)\s+(\d+)\s*$", re.M)
PY_CONST = re.compile(r"^\s+([A-Z][A-Z0-9_]*) = (\d+)\s*$", re.M)
PY_VERSION = re.compile(r"^VERSION_(V\w+) = (\d+)\s*$", re.M)


def py_class(text: str, name: str) -> dict[str, int]:
    m = re.search(r"^class %s:\n((?:[ \t]+.*\n|\n)+)" % name, text, re.M)
    return {k: int(v) for k, v in PY_CONST.findall(m.group(1))} if m else {}


def check_vocabulary(texts: dict[str, str]) -> list[str]:
    """rmq.py's RequestCode equals proto/request_codes.def, its ResponseCode names are those of
    proto/response_codes.def, its VERSION_* equal include/nsrv/mq_version.h."""
    rmq = texts.get(RMQ)
    if rmq is None:
        return []
    problems = []

    def compare(what: str, py: dict[str, int], c: dict[str, int], both_ways: bool) -> None:
        for k in sorted(py):
            if c.get(k) != py[k]:
                problems.append("%s: %s %s = %d, the C table says %s" % (RMQ, what, k, py[k], c.get(k, "nothing")))
        for k in sorted(set(c) - set(py)) if both_ways else []:
            problems.append("%s: %s lacks %s = %d" % (RMQ, what, k, c[k]))

    req = {n: int(v) for v, n in DEF_ROW.findall(texts.get("proto/request_codes.def", ""))}
    resp = {n: int(v) for v, n in DEF_ROW.findall(texts.get("proto/response_codes.def", ""))}
    vers = {n: int(v) for n, v in MQ_VERSION.findall(texts.get("include/nsrv/mq_version.h", ""))}
    py_req = py_class(rmq, "RequestCode")
    # NOTIFY_MIN_BROKER_ID_CHANGE is a broker-bound code nsrvd does not serve (ALL_REQUEST_CODES).
    py_req.pop("NOTIFY_MIN_BROKER_ID_CHANGE", None)
    compare("RequestCode", py_req, req, True)
    compare("ResponseCode", py_class(rmq, "ResponseCode"), resp, False)
    compare("VERSION_", {n: int(v) for n, v in PY_VERSION.findall(rmq)}, vers, True)
    return problems


def print_graph(root: Path) -> int:
    """--include-graph: the edges between folders and the files behind them."""
    texts = {f: t for f in tracked_files(root) if (t := read_text(root / f)) is not None}
    edges, problems = include_graph(texts)
    for (a, b), files in sorted(edges.items()):
        print("%s -> %s  (%d: %s)" % (a, b, len(files), ", ".join(sorted(set(files))[:3])))
    for group in cycles(edges):
        print("cycle: " + " -> ".join(group))
    for p in problems:
        print(p)
    return 0


SELF_TEST_FILES = {
    "proto/a.md": "# A\n\n## 1. One\n\n### 1.2 Sub\n\nSee " + SECTION + "1.2 and " + SECTION + "3.\n",
    "src/ok.c": "/* proto/a.md " + SECTION + "1, " + SECTION + "1.2 step 4 and\n * " + SECTION + "1.2. */\n",
    "src/bad.c": "/* spec " + SECTION + "1.2; a.md " + SECTION + "9; " + SECTION + "1 alone; "
    + "rocketmq-" + "protocol.md */\n",
    "tests/paths.py": "BIN = '/" + "work/main/build/x'  # not $work/home/y, " + TRACKER + " 7 " + SECTION + "1\n",
    # rule 5: a module map where low may use nothing, high may use low; low includes high.
    "ARCHITECTURE.md": "# A\n\n## 3. Module map\n\n| module | library | job | may use |\n|---|---|---|---|\n"
    "| `src/low/` | l | j | libc |\n| `src/high/` | h | j | low (`l.h`), libuv |\n| `src/gone/` | g | j | |\n",
    "include/nsrv/low.h": "int nsrv_low(void);\n",
    "include/nsrv/high.h": "int nsrv_high(void);\n",
    "src/low/low.c": '#include "nsrv/high.h"\nint nsrv_low(void) {\n    return nsrv_high();\n}\n',
    "src/high/high.c": '#include "nsrv/low.h"\nint nsrv_high(void) {\n    return 1;\n}\n',
    "src/side/side.c": '#include "../high/high_int.h"\n',
    # rule 6
    "src/high/high_int.h": "#pragma once\n",
    "src/high/stray.h": "#pragma once\n",
    "src/high/tests/test_other.c": "int x;\n",
    # rule 7
    "proto/request_codes.def": "X(100, PUT_KV_CONFIG)\nX(101, GET_KV_CONFIG)\n",
    "proto/response_codes.def": "X(0, SUCCESS)\n",
    "include/nsrv/mq_version.h": "#define NSRV_MQ_V4_9_4 401\n",
    "cluster-tests/lib/rmq.py": "class RequestCode:\n    PUT_KV_CONFIG = 100\n\n\n"
    "class ResponseCode:\n    SUCCESS = 0\n    GONE = 9\n\n\nVERSION_V4_9_4 = 402\n",
}
SELF_TEST_EXPECT = [
    "proto/a.md:7: cites its own " + SECTION + "3",
    "src/bad.c:1: cites a document outside the repository",
    "src/bad.c:1: names a document outside the repository",
    "src/bad.c:1: cites proto/a.md " + SECTION + "9",
    "src/bad.c:1: bare " + SECTION + "1",
    "tests/paths.py:1: absolute machine path",
    "tests/paths.py:1: refers to a project issue",
    "ARCHITECTURE.md:3: src/side/ has no row",
    "ARCHITECTURE.md:3: the module map names src/gone/",
    "src/low/low.c: includes a header of high",
    "include cycle between folders: high -> low",
    "src/high/tests/test_other.c: a unit test of high",
    "src/high/stray.h: a private header",
    "src/side/side.c: includes src/high/high_int.h",
    "cluster-tests/lib/rmq.py: RequestCode lacks GET_KV_CONFIG",
    "cluster-tests/lib/rmq.py: ResponseCode GONE = 9",
    "cluster-tests/lib/rmq.py: VERSION_ V4_9_4 = 402",
]


def self_test() -> int:
    """Plants one of each problem in a scratch repository and checks each is found, once."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for name, text in SELF_TEST_FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        subprocess.run(["git", "-C", d, "init", "-q"], check=True)
        subprocess.run(["git", "-C", d, "add", "-A"], check=True)
        _, problems = check(root)
    missing = [e for e in SELF_TEST_EXPECT if not any(p.startswith(e) for p in problems)]
    extra = [p for p in problems if not any(p.startswith(e) for e in SELF_TEST_EXPECT)]
    for m in missing:
        print("self-test: not found: " + m)
    for x in extra:
        print("self-test: unexpected: " + x)
    return 1 if missing or extra else 0


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return self_test()
    if args and args[0] == "--include-graph":
        return print_graph(Path(args[1]).resolve() if len(args) > 1 else Path(__file__).resolve().parents[2])
    root = Path(args[0]).resolve() if args else Path(__file__).resolve().parents[2]
    nfiles, problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check-repo: %d problem(s)" % len(problems))
        return 1
    print("check-repo: %d files, no problems" % nfiles)
    return 0


if __name__ == "__main__":
    sys.exit(main())
