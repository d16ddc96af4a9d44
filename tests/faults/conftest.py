"""`pytest tests/faults` runs the fast subset (part of `make test`); `--all-faults` (`make faults`, option defined in
tests/conftest.py) every kill point."""

from __future__ import annotations

from tests.faults.harness import KILL_POINTS, UPGRADE_KILL_POINTS
from tests.support import require_toolchain

require_toolchain()

FAST = {"rollback_point": ["injector-switched"]}
"""make test's kill points. resume_point and upgrade_point have none: their files are collected only with
--all-faults (the fast subset's crash/resume case is test_shared_state's; the upgrade's, after its switch, is
tests/integration/test_upgrade.py's)."""
ALL_FAULTS_ONLY = ("test_crash_resume.py", "test_upgrade_crash.py")


def pytest_ignore_collect(collection_path, config):
    """The fast subset's crash/resume cases are test_shared_state's (killed half-way through the rollouts, with the
    state in S3) and test_upgrade's (after the upgrade's switch); the file backend's at every kill point, of the move
    and of the upgrade, run with --all-faults."""
    return collection_path.name in ALL_FAULTS_ONLY and not config.getoption("--all-faults")


def pytest_generate_tests(metafunc):
    for name, points in (("resume_point", KILL_POINTS), ("rollback_point", KILL_POINTS),
                         ("upgrade_point", UPGRADE_KILL_POINTS)):
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, list(points) if metafunc.config.getoption("--all-faults") else FAST[name])
