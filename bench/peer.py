"""The procedure an operator would run instead of this program: Istio's documented canary upgrade (istio.io, "Canary
Upgrades": install the new revision, relabel the namespaces, restart their workloads, uninstall the old revision),
scripted as a skilled operator would to move the plane to istio-system in one go: the CA copied first (one root of
trust; Istio's "Plug in CA certificates"), `istioctl install` of the revision with the same flags this program renders
the new plane with, every injected namespace relabelled, every Deployment and StatefulSet of every one of them
restarted at once, each waited for with `kubectl rollout status`, then `istioctl uninstall --revision default` (and
what it should have pruned, deleted by its labels). None
of this program's checks: no serving check, no in-use gate, nothing for pods no workload restarts, nothing for a
gateway the charm made. The bench runs it on the same fixture and machine as the program's wave
(bench.runs.migration_run with it in place of `pulumi up`), and, for the stack's upgrade, Istio's canary upgrade
between two revisions (revision_upgrade)."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from migration import render
from migration.config import MigrationConfig
from migration.guard import ALLOW_DELETE_ANNOTATION
from migration.render import revision_service
from migration.version_policy import PlaneVersion, image_values

WAIT_SECONDS = 600
PLANE_KINDS = ("deployment,service,configmap,serviceaccount,role,rolebinding,horizontalpodautoscaler,"
               "poddisruptionbudget,mutatingwebhookconfiguration,validatingwebhookconfiguration,clusterrole,"
               "clusterrolebinding")
"""The kinds of a control plane's objects istioctl installs."""


def _run(env: dict[str, str], *argv: str, input: str | None = None) -> str:
    proc = subprocess.run(list(argv), env=env, input=input, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the peer procedure's `{' '.join(argv[:4])} ...` failed: "
                           f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
    return proc.stdout


def canary_upgrade(env: dict[str, str], cfg: MigrationConfig) -> None:
    """Run the procedure against the cluster env's KUBECONFIG names."""
    source, target, revision = cfg.source_namespace, cfg.target_namespace, cfg.revision
    _run(env, "kubectl", "create", "namespace", target)
    ca = json.loads(_run(env, "kubectl", "-n", source, "get", "secret", "istio-ca-secret", "-o", "json"))
    _run(env, "kubectl", "create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "type": ca.get("type"), "data": ca["data"],
        "metadata": {"name": "istio-ca-secret", "namespace": target}}))
    _run(env, "istioctl", "install", "-y", *render.istioctl_args(render.migrated_input(cfg))[2:])
    moved = _relabelled(env, "istio-injection=enabled", revision)
    _restart_and_wait(env, moved)
    # `istioctl uninstall --revision default` says "No resources will be pruned" on the charm's install (1.30-dev,
    # 2026-12-06, with -i kubeflow or an IstioOperator naming kubeflow: not pinned down why); the operator then
    # deletes what it would have selected: the default revision's control plane, by the labels istioctl puts on it.
    _run(env, "istioctl", "uninstall", "-y", "--revision", "default", "-i", source)
    _delete_plane(env, f"istio.io/rev=default,operator.istio.io/component=Pilot,"
                       f"install.operator.istio.io/owning-resource-namespace={source}")


def revision_upgrade(env: dict[str, str], cfg: MigrationConfig, istioctl: str, leaving: str) -> None:
    """Istio's canary upgrade of the moved plane (istio.io, "Canary Upgrades"), scripted as above: `istioctl install`
    of cfg's revision at cfg's targetVersion with istioctl (the new version's, as the docs say), the namespaces the
    leaving revision injects (by `istio-injection=enabled` or `istio.io/rev=<leaving>`) relabelled to the new
    revision, their Deployments and StatefulSets restarted at once and waited for, then `istioctl uninstall
    --revision <leaving>` (and what it did not prune, deleted by its labels). Against the cluster env's KUBECONFIG
    names."""
    # The new version's images from the registry the running ones come from: the hub (and any variant) of the
    # leaving istiod's image, the new version's tag.
    image = _run(env, "kubectl", "-n", cfg.target_namespace, "get", "deployment", revision_service(leaving),
                 "-o", "jsonpath={.spec.template.spec.containers[0].image}")
    plane = PlaneVersion(cfg.target_version, image_values(image, cfg.target_version))
    _run(env, istioctl, "install", "-y", *render.istioctl_args(render.migrated_input(cfg, plane))[2:])
    moved = sorted(set(_relabelled(env, "istio-injection=enabled", cfg.revision))
                   | set(_relabelled(env, f"istio.io/rev={leaving}", cfg.revision)))
    _restart_and_wait(env, moved)
    # The stack's guard refuses deleting the plane it installed until each object says it may go, as its message
    # tells the operator.
    leaving_plane = f"istio.io/rev={leaving},operator.istio.io/component=Pilot"
    _run(env, "kubectl", "annotate", "--all-namespaces", "--overwrite", "-l", leaving_plane, PLANE_KINDS,
         f"{ALLOW_DELETE_ANNOTATION}=true")
    _run(env, istioctl, "uninstall", "-y", "--revision", leaving, "-i", cfg.target_namespace)
    _delete_plane(env, leaving_plane)


def _relabelled(env: dict[str, str], selector: str, revision: str) -> list[str]:
    """The namespaces selector matches, labelled `istio.io/rev=<revision>` instead of `istio-injection`."""
    namespaces = _run(env, "kubectl", "get", "namespace", "-l", selector,
                      "-o", "jsonpath={.items[*].metadata.name}").split()
    if namespaces:
        _run(env, "kubectl", "label", "--overwrite", "namespace", *namespaces, "istio-injection-",
             f"istio.io/rev={revision}")
    return namespaces


def _restart_and_wait(env: dict[str, str], namespaces: list[str]) -> None:
    """Every Deployment and StatefulSet of namespaces restarted at once, then each waited for with `kubectl rollout
    status`."""
    with ThreadPoolExecutor(max(len(namespaces), 1)) as pool:
        list(pool.map(lambda ns: _run(env, "kubectl", "-n", ns, "rollout", "restart", "deployment,statefulset"),
                      namespaces))
    workloads = [(ns, ref) for ns in namespaces for ref in
                 _run(env, "kubectl", "-n", ns, "get", "deployment,statefulset", "-o", "name").split()]
    with ThreadPoolExecutor(max(len(workloads), 1)) as pool:
        list(pool.map(lambda w: _run(env, "kubectl", "-n", w[0], "rollout", "status", w[1],
                                     f"--timeout={WAIT_SECONDS}s"), workloads))


def _delete_plane(env: dict[str, str], selector: str) -> None:
    """A control plane's objects, selected by the labels istioctl puts on them, deleted without waiting."""
    _run(env, "kubectl", "delete", "--all-namespaces", "--wait=false", "-l", selector, PLANE_KINDS)
