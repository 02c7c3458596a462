#!/usr/bin/env python3
"""Counts one test stage exactly and compares it with the stage's committed list of test ids.

    stages.py check STAGE KIND RESULTS [--summary FILE]
    stages.py update STAGE KIND RESULTS       (rewrite expected/STAGE.txt: every id that ran)
    stages.py missing-stages RAN_STAGES_FILE  (expected lists whose stage did not run)

KIND is how RESULTS is written:
  junit   pytest's --junitxml or ctest's --output-junit file. A ctest entry whose output
          holds cmocka's "[ RUN ]" lines also counts each cmocka case as its own test id.
  tsv     lines "STATUS<TAB>ID[<TAB>DETAIL]" (our own runners: libFuzzer runs, soak, compat
          cells); DETAIL says why a failed id failed.

Every test id ends as one of: passed, failed, skipped, xfail (a known failure, declared
in the test; an unexpected pass is a failure through pytest's xfail_strict). The stage
passes only if nothing failed, nothing was skipped, and every id in
cluster-tests/stages/expected/STAGE.txt ran and passed (or is a declared xfail). An id that is
not in the list yet is counted and reported as "new": add it to the list with the test
(stages.py update writes the list from a run). So a test or a whole stage that disappears
is a failure, and adding tests is one line in a text file.

Prints one line "=== STAGE: P passed, F failed (...)" and, with --summary, appends
"STAGE P F EXPECTED NEW XFAIL" to FILE for the final table, and one line per failed id with
why it failed (the assertion's message, a tsv DETAIL, ctest's last output lines) to
failures.txt next to FILE: run-all-tests.sh prints those next to the final table, so a CI log
cut to its end still tells what failed and why.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
CMOCKA_LINE = re.compile(r"^\[\s*(RUN|OK|FAILED|SKIPPED|ERROR)\s*\] (\S+)", re.M)


def _status_of(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            # pytest writes an xfail as <skipped type="pytest.xfail">
            return "xfail" if child.get("type") == "pytest.xfail" else "skipped"
    if case.get("status") in ("notrun", "disabled"):  # ctest: not run / disabled
        return "skipped"
    if case.get("status") == "fail":
        return "failed"
    return "passed"


def _cmocka_cases(name: str, out: str, whole: str) -> List[Tuple[str, str]]:
    cases: Dict[str, str] = {}
    for kind, case in CMOCKA_LINE.findall(out):
        if kind == "RUN":
            # No result line: the case crashed, or ctest cut the output short. cmocka exits
            # non-zero when any case fails, so the entry's own status decides.
            cases.setdefault(case, whole)
        elif kind == "OK":
            cases[case] = "passed"
        elif kind == "SKIPPED":
            cases[case] = "skipped"
        else:
            cases[case] = "failed"
    return [(f"{name}::{c}", s) for c, s in cases.items()]


def read_junit(path: Path) -> List[Tuple[str, str]]:
    results: List[Tuple[str, str]] = []
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = case.get("name", "")
        cls = case.get("classname", "")
        if cls and cls != name:  # pytest: "node.test_kv.TestX" + "test_y[param]"
            parts = cls.split(".")
            first = next((i for i, p in enumerate(parts) if p.startswith("test_")), 0)
            tid = ".".join(parts[first:]) + "::" + name  # independent of pytest's rootdir
        else:  # ctest
            tid = name
        status = _status_of(case)
        results.append((tid, status))
        out = case.findtext("system-out") or ""
        if "[ RUN      ]" in out:
            results += _cmocka_cases(tid, out, status)
    return results


def read_tsv(path: Path) -> List[Tuple[str, str]]:
    results = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        status, _, rest = line.partition("\t")
        results.append((rest.partition("\t")[0].strip(), status.strip()))
    return results


DETAIL_MAX = 600


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_MAX else text[:DETAIL_MAX] + " ..."


def failure_details(kind: str, path: Path) -> Dict[str, str]:
    """Why each failed id failed, as far as the results file says."""
    out: Dict[str, str] = {}
    try:
        if kind == "tsv":
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                parts = line.split("\t", 2)
                if len(parts) == 3 and parts[0].strip() == "failed":
                    out[parts[1].strip()] = _one_line(parts[2])
            return out
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return out
    for case in root.iter("testcase"):
        bad = next((c for c in case if c.tag in ("failure", "error")), None)
        if bad is None and case.get("status") != "fail":
            continue
        name, cls = case.get("name", ""), case.get("classname", "")
        if cls and cls != name:
            parts = cls.split(".")
            first = next((i for i, p in enumerate(parts) if p.startswith("test_")), 0)
            name = ".".join(parts[first:]) + "::" + name
        why = (bad.get("message") or "") if bad is not None else ""
        if not why.strip() or why.strip() == "Failed":  # ctest: the output's last lines say it
            lines = [ln for ln in (case.findtext("system-out") or "").splitlines() if ln.strip()]
            why = " | ".join(lines[-4:])
        out[name] = _one_line(why)
    return out


def read_results(kind: str, path: Path) -> List[Tuple[str, str]]:
    if not path.is_file():
        return []
    try:
        return read_junit(path) if kind == "junit" else read_tsv(path)
    except (ET.ParseError, OSError) as e:
        print(f"cannot read {path}: {e}")
        return []


def expected_ids(stage: str) -> List[str]:
    f = EXPECTED_DIR / f"{stage}.txt"
    if not f.is_file():
        return []
    return [ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]


def check(stage: str, kind: str, path: Path, summary: Path | None) -> int:
    results = read_results(kind, path)
    status: Dict[str, str] = {}
    for tid, st in results:
        # a repeated id (pytest reruns, ctest + cmocka dup) keeps its worst result
        if status.get(tid) != "failed":
            status[tid] = st
    expected = expected_ids(stage)
    counts = {s: sum(1 for v in status.values() if v == s) for s in ("passed", "failed", "skipped", "xfail")}
    problems = []
    if not (EXPECTED_DIR / f"{stage}.txt").is_file():
        problems.append(f"no expected list cluster-tests/stages/expected/{stage}.txt")
    if not results:
        problems.append(f"no results in {path}")
    missing = [t for t in expected if t not in status]
    failed = [t for t, s in status.items() if s == "failed"]
    skipped = [t for t, s in status.items() if s == "skipped"]
    new = [t for t in status if t not in set(expected)]
    for t in missing:
        problems.append(f"missing (in the expected list, did not run): {t}")
    for t in failed:
        problems.append(f"failed: {t}")
    for t in skipped:
        problems.append(f"skipped: {t}")
    nfail = len(failed) + len(skipped) + len(missing) + (0 if results else 1)
    nfail += 0 if (EXPECTED_DIR / f"{stage}.txt").is_file() else 1
    for p in problems[:60]:
        print(f"  [{stage}] {p}")
    if len(problems) > 60:
        print(f"  [{stage}] ... and {len(problems) - 60} more")
    for t in new[:20]:
        print(f"  [{stage}] new (not in cluster-tests/stages/expected/{stage}.txt yet): {t}")
    print(
        f"=== {stage}: {counts['passed']} passed, {nfail} failed "
        f"(expected {len(expected)} ids, {len(missing)} missing, {len(new)} new, "
        f"{counts['xfail']} xfail, {counts['skipped']} skipped)"
    )
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(f"{stage} {counts['passed']} {nfail} {len(expected)} {len(new)} {counts['xfail']}\n")
        why = failure_details(kind, path) if failed and path.is_file() else {}
        with open(summary.with_name("failures.txt"), "a", encoding="utf-8") as f:
            for t in (failed + skipped + missing)[:10]:
                kind_of = "failed" if t in failed else "skipped" if t in skipped else "missing"
                f.write(f"[{stage}] {kind_of}: {t}" + (f": {why[t]}" if why.get(t) else "") + "\n")
    return 0 if nfail == 0 else 1


def update(stage: str, kind: str, path: Path) -> int:
    # Every test that ran is expected, whatever its result: a failing test stays a failure
    # until it is fixed, it does not drop out of the count. Skipped ones are left out.
    ids = sorted({tid for tid, st in read_results(kind, path) if st != "skipped"})
    if not ids:
        print(f"no results in {path}; list not written")
        return 1
    EXPECTED_DIR.mkdir(exist_ok=True)
    out = EXPECTED_DIR / f"{stage}.txt"
    out.write_text("\n".join(ids) + "\n", encoding="utf-8")
    print(f"wrote {len(ids)} ids to {out}")
    return 0


def missing_stages(ran_file: Path) -> int:
    ran = set(ran_file.read_text().split()) if ran_file.is_file() else set()
    gone = sorted(p.stem for p in EXPECTED_DIR.glob("*.txt") if p.stem not in ran)
    for s in gone:
        print(f"=== {s}: 0 passed, 1 failed (stage has an expected list but did not run)")
    return len(gone)


def main(argv: List[str]) -> int:
    if len(argv) >= 4 and argv[0] == "check":
        summary = Path(argv[5]) if len(argv) >= 6 and argv[4] == "--summary" else None
        return check(argv[1], argv[2], Path(argv[3]), summary)
    if len(argv) == 4 and argv[0] == "update":
        return update(argv[1], argv[2], Path(argv[3]))
    if len(argv) == 2 and argv[0] == "missing-stages":
        return missing_stages(Path(argv[1]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
