"""Fixtures for the single-node nsrvd black-box suite.

* ``--nsrvd PATH`` (default: env NSRVD_BIN, else build/src/nsrvd under the repository root).
* ``nsrvd``: a fresh server per test; extra properties via ``@pytest.mark.nsrvd_config(k=v)``.
* ``nsrvd_factory``: start more servers (or with special configs) inside a test.
* ``connect``: open Connections that are closed before the servers stop.
* Teardown sends SIGTERM, requires exit code 0, and (unless NSRV_EXPECT_CLEAN_EXIT=0) no
  sanitizer report in the captured output.
* Every test runs under an alarm (90 s x NSRV_TEST_TIMEOUT_MULT).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))

from nsrvd_proc import NsrvdProcess, scaled, use_binary  # noqa: E402
from testenv import knob, refused  # noqa: E402
from rmq import Connection, NamesrvClient  # noqa: E402

# The repository root is two levels up; the default build directory is build/ there.
DEFAULT_BIN = str(Path(__file__).resolve().parents[2] / "build" / "src" / "nsrvd")
TEST_ALARM_SECONDS = 90


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
    config.addinivalue_line("markers", "slow: takes several seconds (idle timeouts, expiry, shutdown waits)")
    config.addinivalue_line("markers", "nsrvd_config(**props): extra properties for the nsrvd fixture")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Bound every test in time even if a socket wait was forgotten somewhere."""

    def on_alarm(signum, frame):
        raise TimeoutError(f"test exceeded {scaled(TEST_ALARM_SECONDS):.0f}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(scaled(TEST_ALARM_SECONDS)))
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


def _expect_clean_exit() -> bool:
    return knob("NSRV_EXPECT_CLEAN_EXIT", "1") != "0"


@pytest.fixture
def nsrvd_factory(nsrvd_bin, tmp_path):
    """start(config=None, *, wait_boot=True, name=None, **kw) -> NsrvdProcess."""
    procs = []

    def start(config=None, *, wait_boot=True, name=None, port=None, **kw):
        idx = len(procs)
        name = name or f"nsrvd{idx}"
        workdir = tmp_path / name
        p = NsrvdProcess(nsrvd_bin, workdir, config, port=port, name=name, **kw)
        procs.append(p)
        p.start(wait_boot=wait_boot)
        return p

    start.procs = procs
    yield start

    problems = []
    for p in procs:
        if p.proc is None:
            continue
        if p.died_unexpectedly():
            problems.append(f"{p.name}: died during the test (exit code {p.proc.poll()})\n{p.tail()}")
            p.kill()  # closes its output files
        elif not p._stopped_by_test:
            rc = p.terminate(timeout=10)
            if rc is None:
                problems.append(f"{p.name}: did not exit within {scaled(10):.0f}s of SIGTERM\n{p.tail()}")
            elif rc != 0:
                problems.append(f"{p.name}: exit code {rc} after SIGTERM (want 0)\n{p.tail()}")
        else:
            p.kill()  # no-op if it already exited
        if _expect_clean_exit():
            errs = p.sanitizer_errors()
            if errs:
                problems.append(f"{p.name}: sanitizer report {errs}\n{p.tail(20000)}")
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


DEFAULT_TEST_CONFIG = {"shutdownWaitTimeSeconds": 3}


@pytest.fixture
def nsrvd(request, nsrvd_factory) -> NsrvdProcess:
    cfg = dict(DEFAULT_TEST_CONFIG)
    for m in reversed(list(request.node.iter_markers("nsrvd_config"))):
        cfg.update(m.kwargs)
    return nsrvd_factory(cfg)


@pytest.fixture
def connect(nsrvd_factory):
    """connect(server=None, **Connection kwargs) -> Connection. Depends on nsrvd_factory so
    connections close before the servers are stopped."""
    conns = []

    def _connect(server, **kw):
        kw.setdefault("timeout", scaled(5))
        c = Connection("127.0.0.1", server.port, **kw)
        conns.append(c)
        return c

    yield _connect
    for c in conns:
        c.close()


@pytest.fixture
def conn(nsrvd, connect) -> Connection:
    return connect(nsrvd)


@pytest.fixture
def ns(conn) -> NamesrvClient:
    return NamesrvClient(conn)
