"""One measured run on a fresh embedded cluster: a migration (P1/P2) or a series of previews (P3)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.analysis import step_phases, summarize_run
from bench.churn import ChurnGenerator
from bench.recorder import WorkloadRecorder
from bench.steps import EventLogTail
from demo import fixture
from demo.observe import InjectorSampler
from devcluster import procstat, proxy_events
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO
from devcluster.workspace import Workspace


def migration_run(label: str, size: fixture.FixtureSize, overrides: dict[str, Any], churn_rate: float,
                  out: Path, log=print) -> dict[str, Any]:
    """Build the legacy fixture on a fresh cluster, then `pulumi up --stack migrated` with the Deployment recorder,
    the injector sampler, the churn generator and the engine's event log followed. The cluster is removed
    afterwards; the event log is kept as out/events-LABEL.jsonl."""
    workspace = Workspace(Cluster.fresh(f"bench-{label}")).create(**overrides)
    cluster, env = workspace.cluster, workspace.env
    try:
        started = time.monotonic()
        fixture.build(env, size)
        log(f"  [{label}] fixture ({size.profiles}x{size.deployments}) built in {time.monotonic() - started:.0f}s")
        workspace.init("migrated")
        idle = procstat.cores_over(cluster, 10)  # every simulated proxy connected to the legacy istiod, no change
        namespaces = fixture.profile_namespaces(size)
        recorders = [WorkloadRecorder(str(cluster.kubeconfig), kind) for kind in ("Deployment", "StatefulSet")]
        sampler = InjectorSampler(str(cluster.kubeconfig), namespaces)
        churn = ChurnGenerator(str(cluster.kubeconfig), namespaces, churn_rate)
        event_log, debug_logs = cluster.dir / "engine-events.jsonl", Path(env["PULUMI_HOME"]) / "logs"
        steps = EventLogTail(event_log)
        for thread in (*recorders, sampler, churn, steps):
            thread.start()
        logged_before = _bytes(debug_logs)
        started, wall_started, cpu_before = time.monotonic(), time.time(), procstat.cpu(cluster)
        try:
            # --event-log exists only with PULUMI_DEBUG_COMMANDS; it changes nothing else the update does
            workspace.up("migrated", "--event-log", str(event_log), env=env | {"PULUMI_DEBUG_COMMANDS": "true"})
        finally:
            ended, wall_ended, cpu_after = time.monotonic(), time.time(), procstat.cpu(cluster)
            records, samples, stamped = churn.stop(), sampler.stop(), steps.stop()
            time.sleep(1)  # the last rollout's final status update
            events = sorted((e for r in recorders for e in r.stop()), key=lambda e: e["t"])
        result = summarize_run(label, started, ended, events, samples, records, namespaces)
        result["config"] = overrides
        result["phases"] = step_phases(stamped, started)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(event_log, out / f"events-{label}.jsonl")
        result["state_mb"] = round(workspace.state_file("migrated").stat().st_size / 1e6, 2)
        result["debug_log_mb"] = round((_bytes(debug_logs) - logged_before) / 1e6, 1)
        logged = proxy_events.read(cluster.proxy_events)
        result["data_plane"] = {
            **proxy_events.data_plane(logged, wall_started, wall_ended),
            "proxies": len({e["pod"] for e in logged
                            if e["event"] == "connected" and proxy_events.seconds(e["time"]) < wall_started}),
            "istiod_cores_all_connected": idle["istiod"], "proxysim_cores_all_connected": idle["proxysim"],
            "proxysim_cores_during_up": round((cpu_after["proxysim"] - cpu_before["proxysim"]) / (ended - started), 3)}
        log(f"  [{label}] migrated in {result['wall_s']}s (lower bound {result['lower_bound_s']}s)")
        return result
    finally:
        cluster.down(purge=True)


def preview_run(sizes: list[int], deployments: int, repeats: int, log=print) -> dict[int, float]:
    """`pulumi preview --stack migrated` wall time (best of repeats) as the fixture grows through sizes namespaces.
    Deployments have 0 replicas here: a preview reads Deployments, not pods, and it keeps 3200 of them cheap."""
    workspace = Workspace(Cluster.fresh("bench-preview")).create()
    cluster, env = workspace.cluster, workspace.env
    seconds: dict[int, float] = {}
    try:
        workspace.init("migrated")
        built = 0
        for n in sorted(sizes):
            size = fixture.FixtureSize(profiles=n - built, deployments=deployments, replicas=0, first_profile=built,
                                        kubeflow_shape=False)
            if built == 0:
                fixture.build(env, size)
            else:
                fixture.grow(env, size)
            built = n
            times = []
            for _ in range(repeats):
                started = time.monotonic()
                workspace.pulumi("preview", "--stack", "migrated")
                times.append(time.monotonic() - started)
            seconds[n] = min(times)
            log(f"  [preview] {n} namespaces x {deployments} Deployments: {seconds[n]:.1f}s "
                f"(runs: {', '.join(f'{t:.1f}' for t in times)})")
        return seconds
    finally:
        cluster.down(purge=True)


def _bytes(directory: Path) -> int:
    """What the files under directory hold (the CLI's debug logs: one file per command)."""
    return sum(f.stat().st_size for f in directory.glob("**/*") if f.is_file()) if directory.exists() else 0


def git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
