"""Fixtures for the multi-process gossip cluster suite (proto/gossip.md).

* ``--nsrvd PATH`` (default: env NSRVD_BIN, else build/src/nsrvd under the repository root); the broker
  simulator is ``tools/nsrv-brokersim`` next to it (or env NSRV_BROKERSIM_BIN).
* ``cluster_factory(n=3, config=..., per_node=..., peer_port=...)``: a started cluster
  (clusterlib.Cluster) in the test's tmp dir; every node is stopped at teardown, and a node
  that does not exit cleanly on SIGTERM fails the test.
* ``sim_factory(namesrv_list, **BrokerSim kwargs)``: started simulators, closed at teardown
  (before the nodes).
* ``results``: ``results.record(name, dict)`` prints the figures and writes every record to
  a JSON file: env NSRV_CLUSTER_RESULTS, else <pytest basetemp>/cluster-results.json.
* Every test runs under an alarm: ``@pytest.mark.budget(seconds)`` (default 120), times
  NSRV_TEST_TIMEOUT_MULT.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # keep the source tree clean
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "lib"))

from brokersim import BrokerSim, find_binary  # noqa: E402
from clusterlib import Cluster  # noqa: E402
from nsrvd_proc import scaled, timeout_mult, use_binary  # noqa: E402
from testenv import refused  # noqa: E402

# The repository root is two levels up; the default build directory is build/ there.
DEFAULT_BIN = str(HERE.parents[1] / "build" / "src" / "nsrvd")
DEFAULT_BUDGET = 120


def pytest_addoption(parser):
    parser.addoption(
        "--nsrvd",
        action="store",
        default=os.environ.get("NSRVD_BIN", DEFAULT_BIN),
        help="path to the nsrvd binary (default: $NSRVD_BIN or %s)" % DEFAULT_BIN,
    )


def pytest_configure(config):
    if refused():
        raise pytest.UsageError(f"refused under CI=true (they weaken the tests): {refused()}")
    use_binary(config.getoption("--nsrvd"))
    config.addinivalue_line("markers", "budget(seconds): alarm for the whole test (default 120 s)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    m = item.get_closest_marker("budget")
    budget = int(scaled(m.args[0] if m else DEFAULT_BUDGET))

    def on_alarm(signum, frame):
        raise TimeoutError(f"test exceeded its {budget}s budget")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(budget)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session")
def nsrvd_bin(request) -> str:
    path = request.config.getoption("--nsrvd")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"nsrvd binary not found or not executable: {path}")
    return path


@pytest.fixture(scope="session")
def brokersim_bin(nsrvd_bin) -> str:
    path = find_binary(nsrvd_bin)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"nsrv-brokersim not found: {path}")
    return path


class Results:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "timeout_mult": timeout_mult(),
            "tests": {},
        }

    def record(self, name: str, figures: dict) -> None:
        print(f"\n[figures] {name}: {json.dumps(figures, sort_keys=True)}", flush=True)
        self.data["tests"].setdefault(name, {}).update(figures)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.path)


@pytest.fixture(scope="session")
def results(tmp_path_factory, nsrvd_bin) -> Results:
    env = os.environ.get("NSRV_CLUSTER_RESULTS")
    path = Path(env) if env else tmp_path_factory.getbasetemp() / "cluster-results.json"
    r = Results(path)
    r.data["nsrvd"] = nsrvd_bin
    yield r
    print(f"\n[figures] written to {path}")


@pytest.fixture
def cluster_factory(nsrvd_bin, tmp_path):
    clusters = []

    def make(n: int = 3, start: bool = True, **kw) -> Cluster:
        c = Cluster(nsrvd_bin, tmp_path / f"cluster{len(clusters)}", n=n, **kw)
        clusters.append(c)
        if start:
            c.start()
        return c

    yield make
    problems = []
    for c in clusters:
        problems += c.close()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def sim_factory(brokersim_bin, tmp_path):
    sims = []

    def make(namesrv, **kw) -> BrokerSim:
        kw.setdefault("binary", brokersim_bin)
        kw.setdefault("log_path", tmp_path / f"brokersim{len(sims)}.log")
        s = BrokerSim(namesrv, **kw)
        sims.append(s)
        s.start()
        return s

    yield make
    for s in sims:
        s.close()
