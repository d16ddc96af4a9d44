"""The measured migration: `pulumi up --stack migrated` with the injector history followed (and, for the demo's
timeline, a recorder of every pod and the engine's event log), then the checks and the timeline (demo.timeline)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from kubernetes import config

from demo.kubeflow import PipelineSteps
from demo.observe import InjectorHistory, snapshot
from demo.timeline import Timeline, timeline_of
from demo.verification import checks
from devcluster import proxy_events
from devcluster.workspace import Workspace
from live.discovery import controllers
from update_timeline.event_log import EventLogTail
from update_timeline.recorder import PodRecorder


PIPELINE_STEP_SECONDS = 40
"""A running pipeline step finishes this long after `pulumi up` starts (the default unmanagedPods=wait waits)."""


@dataclasses.dataclass(frozen=True)
class Migration:
    rows: list[tuple[str, str, bool]]
    """The verification table."""
    states: list[dict[str, Any]]
    """Every state of the injector history (demo.observe.InjectorHistory), across the whole update."""
    seconds: float
    """Wall time of `pulumi up`."""
    outputs: dict[str, Any]
    """The migrated stack's outputs."""
    steps_finished: dict[str, float]
    """Pipeline step pods that finished during the update -> when (time.monotonic(), as the states' `t`)."""
    timeline: Timeline | None
    """The update's phases, each workload's move and the injectors over time, to draw (None unless asked for)."""


def migrate_and_verify(workspace: Workspace, profiles: list[str], shell: dict[str, str] | None = None,
                       timeline: bool = False) -> Migration:
    """Migrate the legacy mesh on workspace's cluster, running pulumi with the environment shell (default: the
    workspace's; the tests point its KUBECONFIG at another cluster); raises devcluster.workspace.PulumiFailed if
    `up` fails. Observations read the workspace's cluster. With timeline, every pod and the engine's events are
    recorded too (a watch of every pod and the event log cost CPU the tests do not need)."""
    env = workspace.env
    before = snapshot(env)
    workspace.init("migrated", env=shell)
    kubeconfig = str(workspace.cluster.kubeconfig)
    history = InjectorHistory(kubeconfig, profiles)
    steps = PipelineSteps(env, PIPELINE_STEP_SECONDS)
    event_log = workspace.cluster.dir / "engine-events.jsonl"
    recorders = (PodRecorder(kubeconfig), EventLogTail(event_log)) if timeline else ()
    for thread in (*recorders, history, steps):
        thread.start()
    started = time.monotonic()
    try:
        # --event-log exists only with PULUMI_DEBUG_COMMANDS; it changes nothing else the update does
        traced = ("--event-log", str(event_log)) if timeline else ()
        update = workspace.up("migrated", *traced,
                              env=(shell or env) | ({"PULUMI_DEBUG_COMMANDS": "true"} if timeline else {}))
    finally:
        ended = time.monotonic()
        states, finished = history.stop(), steps.stop()
        recorded = [r.stop() for r in recorders]
    seconds = ended - started
    clean = workspace.pulumi("preview", "--stack", "migrated", "--expect-no-changes", check=False,
                             env=shell).returncode == 0
    outputs = workspace.outputs("migrated")
    events = proxy_events.read(workspace.cluster.proxy_events)
    drawn = None
    if timeline:
        pod_events, stamped = recorded
        owners = controllers(config.new_client_from_config(config_file=kubeconfig))
        drawn = timeline_of(stamped, pod_events, owners, states, outputs, started, ended)
    return Migration(checks(env, outputs, before, snapshot(env), states, clean, events, precheck_said(update.stdout)),
                     states, seconds, outputs, finished, drawn)


def precheck_said(update_output: str) -> str | None:
    """The verdict of `istioctl x precheck` the stack's preflight printed in an update's output."""
    return next((line[line.index(PRECHECK):].strip() for line in update_output.splitlines() if PRECHECK in line), None)


PRECHECK = "istioctl x precheck -i"
