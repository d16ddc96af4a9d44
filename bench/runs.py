"""One measured run on a fresh embedded cluster: a migration (P1/P2) or a series of previews (P3)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from bench.analysis import NEW_ISTIOD, OLD_ISTIOD, summarize_run
from bench.churn import ChurnGenerator
from bench.peer import canary_upgrade, revision_upgrade
from demo import fixture
from demo.observe import InjectorHistory
from devcluster import procstat, proxy_events
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO
from devcluster.workspace import Workspace
from migration import config
from migration.render import revision_service
from update_timeline.event_log import EventLogTail
from update_timeline.recorder import WorkloadRecorder
from update_timeline.spans import step_phases


DATA_PLANE_SETTLE_S = 15


def migration_run(label: str, size: fixture.FixtureSize, overrides: dict[str, Any], churn_rate: float,
                  out: Path, debug_log: bool = True, log=print, peer: bool = False,
                  upgrade_to: tuple[str, str] | None = None) -> dict[str, Any]:
    """Build the legacy fixture on a fresh cluster, then `pulumi up --stack migrated` with the Deployment recorder,
    the injector history, the churn generator and the engine's event log followed; without debug_log, the stock
    CLI runs without its automatic debug log (Workspace.without_debug_log). With peer, Istio's documented canary
    upgrade (bench.peer) runs instead of `pulumi up`, watched the same way. With upgrade_to (revision, version), the
    mesh is moved first (not measured), and what is measured is the stack's upgrade to that revision and version
    (`pulumi config set revision`, `targetVersion`, `pulumi up`), or with peer, Istio's canary upgrade between the two
    revisions with that version's istioctl. The cluster is removed afterwards; the event log is kept as
    out/events-LABEL.jsonl."""
    workspace = Workspace(Cluster.fresh(f"bench-{label}")).create(**overrides)
    cluster, env = workspace.cluster, workspace.env
    try:
        started = time.monotonic()
        fixture.build(env, size)
        log(f"  [{label}] fixture ({size.profiles}x{size.deployments}) built in {time.monotonic() - started:.0f}s")
        workspace.init("migrated")
        settings = config.from_mapping({"topology": "migrated", **overrides})
        leaving, new_istiod, old_istiod = settings.revision, NEW_ISTIOD, OLD_ISTIOD
        if upgrade_to:
            started = time.monotonic()
            workspace.up("migrated")
            log(f"  [{label}] moved (not measured) in {time.monotonic() - started:.0f}s")
            revision, version = upgrade_to
            workspace.set_config("migrated", "kf-istio-migrate:revision", revision)
            workspace.set_config("migrated", "kf-istio-migrate:targetVersion", version)
            old_istiod = (settings.target_namespace, revision_service(leaving))
            settings = config.from_mapping({"topology": "migrated", **overrides, "revision": revision,
                                            "targetVersion": version})
            new_istiod = (settings.target_namespace, revision_service(revision))
        idle = procstat.cores_over(cluster, 10)  # every simulated proxy connected to the istiod it leaves, no change
        namespaces = fixture.profile_namespaces(size)
        recorders = [WorkloadRecorder(str(cluster.kubeconfig), kind) for kind in ("Deployment", "StatefulSet")]
        history = InjectorHistory(str(cluster.kubeconfig), namespaces)
        churn = ChurnGenerator(str(cluster.kubeconfig), namespaces, churn_rate)
        event_log, debug_logs = cluster.dir / "engine-events.jsonl", Path(env["PULUMI_HOME"]) / "logs"
        steps = EventLogTail(event_log)
        for thread in (*recorders, history, churn, steps):
            thread.start()
        if not debug_log:
            workspace.without_debug_log()
        logged_before, cli_cpu_before = _bytes(debug_logs), _children_cpu_s()
        started, wall_started, cpu_before = time.monotonic(), time.time(), procstat.cpu(cluster)
        try:
            if peer and upgrade_to:
                revision_upgrade(env, settings, f"istioctl-{upgrade_to[1]}", leaving)
            elif peer:
                canary_upgrade(env, settings)
            else:
                # --event-log exists only with PULUMI_DEBUG_COMMANDS; it changes nothing else the update does
                workspace.up("migrated", "--event-log", str(event_log), env=env | {"PULUMI_DEBUG_COMMANDS": "true"})
        finally:
            ended, wall_ended, cpu_after = time.monotonic(), time.time(), procstat.cpu(cluster)
            cli_cpu = _children_cpu_s() - cli_cpu_before
            records, states, stamped = churn.stop(), history.stop(), steps.stop()
            time.sleep(1)  # the last rollout's final status update
            events = sorted((e for r in recorders for e in r.stop()), key=lambda e: e["t"])
        result = summarize_run(label, started, ended, events, states, records, namespaces,
                               slots=settings.rollout_parallelism
                               if settings.rollout_strategy == "wave" and not peer else None,
                               new_istiod=new_istiod, old_istiod=old_istiod)
        result["config"], result["debug_log"], result["cli_cpu_s"] = overrides, debug_log, round(cli_cpu, 1)
        result["peer"], result["procedure"] = peer, "upgrade" if upgrade_to else "move"
        if not peer:
            result["phases"] = step_phases(stamped, started)
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(event_log, out / f"events-{label}.jsonl")
            result["state_mb"] = round(workspace.state_file("migrated").stat().st_size / 1e6, 2)
            result["debug_log_mb"] = round((_bytes(debug_logs) - logged_before) / 1e6, 1)
        # The data plane is watched a while past the end: the last step of either procedure deletes the old istiod,
        # and a proxy still on it loses its stream only as its pod goes.
        time.sleep(DATA_PLANE_SETTLE_S)
        logged = proxy_events.read(cluster.proxy_events)
        result["data_plane"] = {
            **proxy_events.data_plane(logged, wall_started, wall_ended + DATA_PLANE_SETTLE_S),
            "proxies": len({e["pod"] for e in logged
                            if e["event"] == "connected" and proxy_events.seconds(e["time"]) < wall_started}),
            "istiod_cores_all_connected": idle["istiod"], "proxysim_cores_all_connected": idle["proxysim"],
            "proxysim_cores_during_up": round((cpu_after["proxysim"] - cpu_before["proxysim"]) / (ended - started), 3)}
        log(f"  [{label}] migrated in {result['wall_s']}s (lower bound {result['lower_bound_s']}s)")
        return result
    finally:
        cluster.down(purge=True)


def preview_run(sizes: list[int], deployments: int, repeats: int,
                log=print) -> tuple[dict[int, float], dict[int, tuple[int, float]]]:
    """`pulumi preview --stack migrated` wall time (best of repeats) as the fixture grows through sizes namespaces,
    and, at each size, a plain preview of as many resources (bench/plain: ConfigMaps) on the same cluster: returns
    ({namespaces: seconds}, {namespaces: (resources, plain seconds)}). Deployments have 0 replicas here: a preview
    reads Deployments, not pods, and it keeps 3200 of them cheap. Both previews print JSON (`--json`), so neither
    pays for a progress display the other does not."""
    workspace = Workspace(Cluster.fresh("bench-preview")).create()
    cluster, env = workspace.cluster, workspace.env
    plain = program_workspace(cluster, "plain", "plain-preview", REPO / "bench" / "plain", "plain", {})
    seconds: dict[int, float] = {}
    plains: dict[int, tuple[int, float]] = {}
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
            times, resources = timed_previews(workspace, "migrated", repeats)
            seconds[n] = min(times)
            plain.set_config("plain", "plain-preview:count", str(resources - 2))  # + the stack and its provider
            plain_times, plain_resources = timed_previews(plain, "plain", repeats)
            plains[n] = (plain_resources, min(plain_times))
            log(f"  [preview] {n} namespaces x {deployments} Deployments: {seconds[n]:.1f}s for {resources} "
                f"resources (runs: {', '.join(f'{t:.1f}' for t in times)}); plain preview of {plain_resources}: "
                f"{plains[n][1]:.1f}s")
        return seconds, plains
    finally:
        cluster.down(purge=True)


def program_workspace(cluster: Cluster, directory: str, project: str, program: Path, stack: str,
                      config: dict[str, str]) -> Workspace:
    """A project beside the cluster's (in its directory `directory`) that runs program, a bench program of this
    repository, with one stack and its config."""
    workspace = Workspace(cluster, directory)
    workspace.dir.mkdir(parents=True, exist_ok=True)
    (cluster.dir / "pulumi").mkdir(exist_ok=True)
    settings = {"name": project, "main": os.path.relpath(program, workspace.dir),
                "runtime": {"name": "python", "options": {"virtualenv": str(REPO / ".venv")}}}
    (workspace.dir / "Pulumi.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    (workspace.dir / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    workspace.init(stack)
    return workspace


def timed_previews(workspace: Workspace, stack: str, repeats: int) -> tuple[list[float], int]:
    """Seconds of each of repeats `pulumi preview --json`, and how many resources the preview planned."""
    times, summary = [], {}
    for _ in range(repeats):
        started = time.monotonic()
        proc = workspace.pulumi("preview", "--stack", stack, "--json")
        times.append(time.monotonic() - started)
        summary = json.loads(proc.stdout).get("changeSummary", {})
    return times, sum(summary.values())


def _children_cpu_s() -> float:
    """CPU seconds of the child processes this process has waited for (pulumi up: the CLI, and through it the
    language host and program, the providers and every command they ran)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _bytes(directory: Path) -> int:
    """What the files under directory hold (the CLI's debug logs: one file per command)."""
    return sum(f.stat().st_size for f in directory.glob("**/*") if f.is_file()) if directory.is_dir() else 0


def git_commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
