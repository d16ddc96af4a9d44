"""`pytest tests/faults` runs the fast subset (part of `make test`); `--all-faults` (`make faults`, option defined in
tests/conftest.py) every kill point."""

from __future__ import annotations

from tests.faults.harness import KILL_POINTS
from tests.support import require_toolchain

require_toolchain()

FAST = {"rollback_point": ["injector-switched"]}
"""make test's kill points. resume_point has none: its file is collected only with --all-faults (the fast subset's
crash/resume case is test_shared_state's)."""


def pytest_ignore_collect(collection_path, config):
    """The fast subset's crash/resume case is test_shared_state's (killed half-way through the rollouts, with the
    state in S3); the file backend's, at every kill point, run with --all-faults."""
    return collection_path.name == "test_crash_resume.py" and not config.getoption("--all-faults")


def pytest_generate_tests(metafunc):
    for name in ("resume_point", "rollback_point"):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, list(KILL_POINTS) if metafunc.config.getoption("--all-faults") else FAST[name])
