"""Integration fixtures: one embedded cluster per test session, real binaries from the pinned toolchain."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from devcluster.cluster import Cluster


def run(argv: list[str], env: dict[str, str], *, cwd=None, check: bool = True, input: str | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a real command; on failure, fail the test with its output."""
    proc = subprocess.run(argv, env=env, cwd=cwd, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}"
                    f"\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def poll(condition, timeout: float, what: str):
    """condition's first truthy result within timeout seconds; fails the test naming what it waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def fresh_cluster(name: str) -> tuple[Cluster, dict[str, str]]:
    """A new embedded cluster named <name>-<pid> with a Pulumi backend of its own, and the environment for its
    clients. The caller purges it (cluster.down(purge=True))."""
    cluster = Cluster(f"{name}-{os.getpid()}")
    cluster.down(purge=True)
    cluster.up()
    (cluster.dir / "pulumi").mkdir()
    return cluster, cluster.env() | {"PULUMI_BACKEND_URL": f"file://{cluster.dir / 'pulumi'}"}


@pytest.fixture(scope="session")
def cluster():
    """A fresh embedded cluster for this session (name from KFISTIO_TEST_CLUSTER, default test-<pid>)."""
    c = Cluster(os.environ.get("KFISTIO_TEST_CLUSTER", f"test-{os.getpid()}"))
    c.down(purge=True)
    c.up()
    yield c
    c.down(purge=True)


@pytest.fixture(scope="session")
def kubectl(cluster):
    env = cluster.env()

    def _kubectl(*args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
        return run(["kubectl", *args], env, check=check, input=input)

    return _kubectl
