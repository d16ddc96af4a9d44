"""The measured migration: `pulumi up --stack migrated` with the injector sampler running, then the checks."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from demo.observe import InjectorSampler, snapshot
from demo.verification import checks
from devcluster.workspace import Workspace


@dataclasses.dataclass(frozen=True)
class Migration:
    rows: list[tuple[str, str, bool]]
    """The verification table."""
    samples: list[dict[str, Any]]
    """The injector sampler's samples, across the whole update."""
    seconds: float
    """Wall time of `pulumi up`."""
    outputs: dict[str, Any]
    """The migrated stack's outputs."""


def migrate_and_verify(workspace: Workspace, profiles: list[str], shell: dict[str, str] | None = None) -> Migration:
    """Migrate the legacy mesh on workspace's cluster, running pulumi with the environment shell (default: the
    workspace's; the tests point its KUBECONFIG at another cluster); raises devcluster.workspace.PulumiFailed if
    `up` fails. Observations read the workspace's cluster."""
    env = workspace.env
    before = snapshot(env)
    workspace.init("migrated", env=shell)
    sampler = InjectorSampler(str(workspace.cluster.kubeconfig), profiles)
    sampler.start()
    started = time.monotonic()
    try:
        workspace.up("migrated", env=shell)
    finally:
        samples = sampler.stop()
    seconds = time.monotonic() - started
    clean = workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes", check=False,
                             env=shell).returncode == 0
    outputs = workspace.outputs("migrated")
    return Migration(checks(env, outputs, before, snapshot(env), samples, clean, profiles), samples, seconds, outputs)
