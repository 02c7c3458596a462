"""Environment knobs of the test suites, and the rule that CI runs without the weakening ones.

A knob that makes a check weaker (longer waits, fewer repetitions, a shorter measuring
window, a higher memory limit, ignoring sanitizer reports) is for a developer's machine.
Under ``CI=true`` (how .ci/run and run-all-tests.sh are started in CI) setting one is an
error, so a CI configuration cannot quietly prove less than the suite says. Sanitizer
builds get their longer waits from the binary itself (``nsrvd_proc.timeout_mult``), not
from the environment.

    python3 cluster-tests/lib/testenv.py    # exit 1 and name them if CI=true and any is set
"""

from __future__ import annotations

import os
import sys
from typing import Optional

WEAKENING = (
    "NSRV_TEST_TIMEOUT_MULT",  # scales every wait and alarm
    "NSRV_EXPECT_CLEAN_EXIT",  # 0: sanitizer reports at teardown are ignored
    "NSRV_TEST_RSS_LIMIT_MB",  # memory bound of the big-input node tests
    "NSRV_RESTART_BROKERS",  # size of the restart test
    "NSRV_RESTART_REPS",
    "NSRV_RESTART_NOGOSSIP_REPS",
    "NSRV_BW_WINDOW_S",  # bandwidth measuring window
    "NSRV_GOSSIP_KNOWN_BUGS",
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def refused() -> list:
    """Weakening knobs set in this environment while CI=true."""
    if not in_ci():
        return []
    return [k for k in WEAKENING if k in os.environ]


class WeakeningKnobUnderCI(RuntimeError):
    pass


def knob(name: str, default: Optional[str] = None) -> Optional[str]:
    """The value of a test knob; a weakening one set under CI=true raises."""
    value = os.environ.get(name)
    if value is not None and name in WEAKENING and in_ci():
        raise WeakeningKnobUnderCI(f"{name}={value} weakens the tests and is refused under CI=true")
    return default if value is None else value


if __name__ == "__main__":
    bad = refused()
    for k in bad:
        print(f"refused under CI=true: {k}={os.environ[k]} weakens the tests (unset it)")
    sys.exit(1 if bad else 0)
