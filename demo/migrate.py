"""The measured migration: `pulumi up --stack migrated` with the injector sampler running, then the checks."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from demo.kubeflow import PipelineSteps
from demo.observe import InjectorSampler, snapshot
from demo.verification import checks
from devcluster import proxy_events
from devcluster.workspace import Workspace


PIPELINE_STEP_SECONDS = 40
"""A running pipeline step finishes this long after `pulumi up` starts (the default unmanagedPods=wait waits)."""


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
    steps_finished: dict[str, float]
    """Pipeline step pods that finished during the update -> when (time.monotonic(), as the samples' `t`)."""


def migrate_and_verify(workspace: Workspace, profiles: list[str], shell: dict[str, str] | None = None) -> Migration:
    """Migrate the legacy mesh on workspace's cluster, running pulumi with the environment shell (default: the
    workspace's; the tests point its KUBECONFIG at another cluster); raises devcluster.workspace.PulumiFailed if
    `up` fails. Observations read the workspace's cluster."""
    env = workspace.env
    before = snapshot(env)
    workspace.init("migrated", env=shell)
    sampler = InjectorSampler(str(workspace.cluster.kubeconfig), profiles)
    steps = PipelineSteps(env, PIPELINE_STEP_SECONDS)
    sampler.start()
    steps.start()
    started = time.monotonic()
    try:
        workspace.up("migrated", env=shell)
    finally:
        samples = sampler.stop()
        finished = steps.stop()
    seconds = time.monotonic() - started
    clean = workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes", check=False,
                             env=shell).returncode == 0
    outputs = workspace.outputs("migrated")
    events = proxy_events.read(workspace.cluster.proxy_events)
    return Migration(checks(env, outputs, before, snapshot(env), samples, clean, events), samples, seconds, outputs,
                     finished)
