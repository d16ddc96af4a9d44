"""The measured migration: `pulumi up --stack migrated` with the injector sampler running, then the checks."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from demo import fixture
from demo.observe import InjectorSampler, snapshot
from demo.verification import checks
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO


def pulumi(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pulumi {' '.join(args)} failed (exit {proc.returncode}):\n"
                           f"{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}")
    return proc


def migrate_and_verify(cluster: Cluster, env: dict[str, str], size: fixture.FixtureSize,
                       ) -> tuple[list[tuple[str, str, bool]], list[dict[str, Any]], float]:
    """Migrate the legacy mesh on cluster; return the verification rows, the sampler's samples and the up's time."""
    before = snapshot(env)
    pulumi(env, "stack", "init", "migrated")
    sampler = InjectorSampler(str(cluster.kubeconfig), fixture.profile_namespaces(size))
    sampler.start()
    started = time.monotonic()
    try:
        pulumi(env, "up", "--stack", "migrated", "--yes", "--skip-preview")
    finally:
        samples = sampler.stop()
    duration = time.monotonic() - started
    second = subprocess.run(["pulumi", "preview", "--stack", "migrated", "--expect-no-changes", "--non-interactive"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    return checks(env, before, snapshot(env), samples, duration, second.returncode == 0, size), samples, duration
