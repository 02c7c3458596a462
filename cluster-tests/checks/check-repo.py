#!/usr/bin/env python3
"""Keeps the repository self-contained (ctest ``repo_check``, label ``static``).

Usage: cluster-tests/checks/check-repo.py [REPO_ROOT]   (default: the repository this file is in)
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
4. refers to a project issue by number ("issue 12", "issue-7", "issues 4 and 8"): the issue
   tracker is not part of the repository, so the text names what it means (the target, the
   feature, the document) instead.
"""

from __future__ import annotations

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
        # "issue 7 §1": reported once as an issue reference, not again as a bare section.
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

    return len(texts), problems


SELF_TEST_FILES = {
    "proto/a.md": "# A\n\n## 1. One\n\n### 1.2 Sub\n\nSee " + SECTION + "1.2 and " + SECTION + "3.\n",
    "src/ok.c": "/* proto/a.md " + SECTION + "1, " + SECTION + "1.2 step 4 and\n * " + SECTION + "1.2. */\n",
    "src/bad.c": "/* spec " + SECTION + "1.2; a.md " + SECTION + "9; " + SECTION + "1 alone; "
    + "rocketmq-" + "protocol.md */\n",
    "tests/paths.py": "BIN = '/" + "work/main/build/x'  # not $work/home/y, issue 7 " + SECTION + "1\n",
}
SELF_TEST_EXPECT = [
    "proto/a.md:7: cites its own " + SECTION + "3",
    "src/bad.c:1: cites a document outside the repository",
    "src/bad.c:1: names a document outside the repository",
    "src/bad.c:1: cites proto/a.md " + SECTION + "9",
    "src/bad.c:1: bare " + SECTION + "1",
    "tests/paths.py:1: absolute machine path",
    "tests/paths.py:1: refers to a project issue",
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
