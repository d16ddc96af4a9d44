"""`pytest tests/faults` runs the fast subset (part of `make test`); `--all-faults` (`make faults`, option defined in
tests/conftest.py) every kill point."""

from __future__ import annotations

from tests.faults.harness import KILL_POINTS
from tests.support import require_toolchain

require_toolchain()

# The fast subset's other crash/resume case (new-istiod-created) runs with the state in S3: test_shared_state.
FAST = {"resume_point": ["half-the-rollouts"], "rollback_point": ["injector-switched"]}


def pytest_generate_tests(metafunc):
    for name, fast in FAST.items():
        if name in metafunc.fixturenames:
            points = list(KILL_POINTS) if metafunc.config.getoption("--all-faults") else fast
            metafunc.parametrize(name, points)
