"""Integration tier: the pinned toolchain (a clear failure naming `make setup` when it is not built) and one shared
embedded cluster for the tests that only need a cluster; tests that migrate make their own (tests.support)."""

from __future__ import annotations

import os
import subprocess

import pytest

from devcluster.cluster import Cluster
from tests.support import require_toolchain, run

require_toolchain()


@pytest.fixture(scope="session")
def cluster():
    """A fresh embedded cluster for this session (name from KFISTIO_TEST_CLUSTER, default test-<pid>)."""
    c = Cluster.fresh(os.environ.get("KFISTIO_TEST_CLUSTER", f"test-{os.getpid()}"))
    yield c
    c.down(purge=True)


@pytest.fixture(scope="session")
def kubectl(cluster):
    env = cluster.env()

    def _kubectl(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
        return run(["kubectl", *args], env, check=check, input=input)

    return _kubectl
