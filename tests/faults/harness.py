"""Fault-suite machinery: a small legacy mesh on a fresh cluster, `pulumi up` SIGKILLed at a named point, and the
assertions every recovery must meet."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from kubernetes import client, config

from demo import fixture
from demo.observe import InjectorHistory, snapshot
from devcluster.workspace import Workspace
from migration.workloads import proxy_address
from tests.faults.proctree import kill_tree
from tests.next_owner import NEXT_ISTIOD
from tests.support import DEFAULT_INJECTOR, LEGACY_ISTIOD, NEW_ISTIOD, fresh_workspace

SIZE = fixture.FixtureSize(profiles=2, deployments=3, pod_stage_ms=150, kubeflow_shape=False)
NEW, OLD = NEW_ISTIOD, LEGACY_ISTIOD
PROFILES = fixture.profile_namespaces(SIZE)
NEW_VALIDATOR = "istio-validator-kf-1-30-istio-system"


class Api:
    """Typed reads for the kill-point probes (the kubernetes client, not kubectl: probes run several times a second)."""

    def __init__(self, kubeconfig: str):
        config.load_kube_config(kubeconfig)
        self.core, self.apps = client.CoreV1Api(), client.AppsV1Api()
        self.ext, self.admission = client.ApiextensionsV1Api(), client.AdmissionregistrationV1Api()
        self.checkpoint: Path | None = None
        """The checkpoint of the stack being updated (set by up_killed_at)."""

    def exists(self, read: Callable, *args) -> Any:
        try:
            return read(*args)
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise


def _istio_crds(api: Api) -> list:
    return [c for c in api.ext.list_custom_resource_definition().items if c.metadata.name.endswith(".istio.io")]


def _crds_adopted(api: Api) -> tuple[int, int]:
    """(Istio CRDs in the updated stack's last checkpoint, Istio CRDs on the cluster). Adopting a CRD the move does
    not change is an import, which writes nothing to the cluster: the checkpoint is where it shows."""
    try:
        resources = json.loads(api.checkpoint.read_text())["checkpoint"]["latest"].get("resources") or []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not written yet, or caught mid-write
        resources = []
    held = sum(1 for r in resources if r["type"] == "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
               and r.get("id", "").endswith(".istio.io"))
    return held, len(_istio_crds(api))


def _restarted(api: Api) -> int:
    return sum(1 for ns in fixture.profile_namespaces(SIZE) for d in api.apps.list_namespaced_deployment(ns).items
               if "kubectl.kubernetes.io/restartedAt" in (d.spec.template.metadata.annotations or {}))


def _available(api: Api, ns: str, name: str) -> bool:
    dep = api.exists(api.apps.read_namespaced_deployment, name, ns)
    return bool(dep and any(c.type == "Available" and c.status == "True" for c in dep.status.conditions or []))


def _service_namespace(hook_config) -> set[str]:
    return {h.client_config.service.namespace for h in hook_config.webhooks or []}


# Kill points in the order a migration passes them: (name, what is true when pulumi up is killed).
KILL_POINTS: dict[str, Callable[[Api], bool]] = {
    "first-crd-adopted": lambda api: _crds_adopted(api)[0] >= 1,
    "all-crds-adopted": lambda api: 0 < (counts := _crds_adopted(api))[1] == counts[0],
    "target-namespace-created": lambda api: api.exists(api.core.read_namespace, "istio-system") is not None,
    "ca-copied": lambda api: api.exists(api.core.read_namespaced_secret, "istio-ca-secret", "istio-system")
    is not None,
    "new-istiod-created": lambda api: api.exists(api.apps.read_namespaced_deployment, "istiod-kf-1-30",
                                                 "istio-system") is not None,
    "new-istiod-available": lambda api: _available(api, "istio-system", "istiod-kf-1-30"),
    "injector-switched": lambda api: _service_namespace(api.admission.read_mutating_webhook_configuration(
        DEFAULT_INJECTOR)) == {"istio-system"},
    "first-rollout": lambda api: _restarted(api) >= 1,
    "half-the-rollouts": lambda api: _restarted(api) >= SIZE.profiles * SIZE.deployments // 2,
    "all-rollouts-started": lambda api: _restarted(api) == SIZE.profiles * SIZE.deployments,
    "old-istiod-deleted": lambda api: api.exists(api.apps.read_namespaced_deployment, "istiod", "kubeflow") is None,
    "guard-created": lambda api: api.exists(api.admission.read_validating_admission_policy,
                                            "kfistio-protect-istio") is not None,
}


def _on_next(api: Api) -> int:
    """Profile pods whose sidecar the next revision injected."""
    plain = api.core.api_client.sanitize_for_serialization
    return sum(1 for ns in PROFILES for pod in api.core.list_namespaced_pod(ns).items
               if proxy_address(plain(pod)) == NEXT_ISTIOD)


# Kill points in the order the migrated stack's upgrade (kf-1-30 to kf-1-31, after the move) passes them.
UPGRADE_KILL_POINTS: dict[str, Callable[[Api], bool]] = {
    "next-istiod-created": lambda api: api.exists(api.apps.read_namespaced_deployment, "istiod-kf-1-31",
                                                  "istio-system") is not None,
    "next-istiod-available": lambda api: _available(api, "istio-system", "istiod-kf-1-31"),
    "injector-switched-to-next": lambda api: {h.client_config.service.name for h in api.admission.
                                              read_mutating_webhook_configuration(DEFAULT_INJECTOR).webhooks or []}
    == {"istiod-kf-1-31"},
    "first-pod-on-next": lambda api: _on_next(api) >= 1,
    "retired-istiod-deleted": lambda api: api.exists(api.apps.read_namespaced_deployment, "istiod-kf-1-30",
                                                     "istio-system") is None,
}


@dataclasses.dataclass
class Mesh:
    """A legacy mesh on its own cluster and workspace, the snapshot taken before any migration, and the injector
    history followed from then on."""

    workspace: Workspace
    before: dict[str, Any]
    history: InjectorHistory

    @property
    def env(self) -> dict[str, str]:
        return self.workspace.env

    def pulumi(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.workspace.pulumi(*args, check=check)

    def close(self) -> list[dict[str, Any]]:
        """The history's states (if it was not stopped already); the cluster is purged whatever they say."""
        try:
            return [] if self.history.stopped else self.history.stop()
        finally:
            self.workspace.cluster.down(purge=True)


def legacy_mesh(name: str) -> Mesh:
    """A fresh cluster with the legacy mesh and the injector history followed; Mesh.close() purges it (a failed
    build purges it here)."""
    workspace = fresh_workspace(name)
    try:
        fixture.build(workspace.env, SIZE)
    except BaseException:
        workspace.cluster.down(purge=True)
        raise
    history = InjectorHistory(str(workspace.cluster.kubeconfig), PROFILES)
    history.start()
    return Mesh(workspace, snapshot(workspace.env), history)


def up_killed_at(workspace: Workspace, point: str, stack: str = "migrated", timeout: float = 600,
                 probe: Callable[[Api], bool] | None = None) -> str:
    """`pulumi up --stack <stack>`, SIGKILLed (the CLI and every plugin and command it started: tests.faults.proctree)
    as soon as the kill point is observed (KILL_POINTS[point], or probe, named point). Returns the output so far;
    fails if the update ended before the point was reached."""
    api, probe = Api(workspace.env["KUBECONFIG"]), probe or KILL_POINTS[point]
    api.checkpoint = workspace.state_file(stack)
    log = workspace.cluster.dir / f"up-{stack}-{point}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["pulumi", "up", "--stack", stack, "--yes", "--skip-preview", "--non-interactive"],
                                cwd=workspace.dir, env=workspace.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.monotonic()
        deadline = started + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if probe(api):
                killed = kill_tree(proc.pid)
                proc.wait()
                output = log.read_text()
                done = len(re.findall(r" (created|imported|updated|replaced) \(", output))
                print(f"SIGKILL at {point}: {time.monotonic() - started:.1f}s into the update, {done} steps done, "
                      f"{len(killed)} processes killed")
                return output
            time.sleep(0.1)
        if proc.poll() is None:
            kill_tree(proc.pid)
    raise AssertionError(f"`pulumi up --stack {stack}` ended (exit {proc.returncode}) before kill point {point!r} "
                         f"was observed:\n{log.read_text()[-4000:]}")


def cancel_dead_update(workspace: Workspace, stack: str = "migrated") -> None:
    """The runbook's first step after a crash ("If `pulumi up` was interrupted"): `pulumi cancel`. If the crash hit
    while the CLI rewrote `<stack>.json.attrs` (the file backend's Go Cloud driver writes that metadata file in place;
    the state file itself is replaced atomically), every command fails with `failed to load checkpoint: EOF` until
    the empty file is removed, as the runbook says; anything else is a failure."""
    cancel = ("cancel", "--stack", stack, "--yes")
    result = workspace.pulumi(*cancel, check=False)
    if result.returncode and "failed to load checkpoint: EOF" in result.stdout + result.stderr:
        attrs = workspace.state_file(stack).with_suffix(".json.attrs")
        assert attrs.is_file() and attrs.stat().st_size == 0, f"EOF loading {stack}, but {attrs} is not empty"
        print(f"the crash left {attrs.name} empty; removed as the runbook says")
        attrs.unlink()
        result = workspace.pulumi(*cancel, check=False)
    assert result.returncode == 0, f"pulumi cancel failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
