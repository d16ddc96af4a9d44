"""The procedure an operator would run instead of this program: Istio's documented canary upgrade (istio.io, "Canary
Upgrades": install the new revision, relabel the namespaces, restart their workloads, uninstall the old revision),
scripted as a skilled operator would to move the plane to istio-system in one go: the CA copied first (one root of
trust; Istio's "Plug in CA certificates"), `istioctl install` of the revision with the same flags this program renders
the new plane with, every injected namespace relabelled, every Deployment and StatefulSet of every one of them
restarted at once, each waited for with `kubectl rollout status`, then `istioctl uninstall --revision default` (and
what it should have pruned, deleted by its labels). None
of this program's checks: no serving check, no in-use gate, nothing for pods no workload restarts, nothing for a
gateway the charm made. The bench runs it on the same fixture and machine as the program's wave
(bench.runs.migration_run with it in place of `pulumi up`)."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from migration import render
from migration.config import MigrationConfig

WAIT_SECONDS = 600


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
    namespaces = _run(env, "kubectl", "get", "namespace", "-l", "istio-injection=enabled",
                      "-o", "jsonpath={.items[*].metadata.name}").split()
    _run(env, "kubectl", "label", "namespace", *namespaces, "istio-injection-", f"istio.io/rev={revision}")
    with ThreadPoolExecutor(max(len(namespaces), 1)) as pool:
        list(pool.map(lambda ns: _run(env, "kubectl", "-n", ns, "rollout", "restart", "deployment,statefulset"),
                      namespaces))
    workloads = [(ns, ref) for ns in namespaces for ref in
                 _run(env, "kubectl", "-n", ns, "get", "deployment,statefulset", "-o", "name").split()]
    with ThreadPoolExecutor(max(len(workloads), 1)) as pool:
        list(pool.map(lambda w: _run(env, "kubectl", "-n", w[0], "rollout", "status", w[1],
                                     f"--timeout={WAIT_SECONDS}s"), workloads))
    # `istioctl uninstall --revision default` says "No resources will be pruned" on the charm's install (1.30-dev,
    # 2026-12-06, with -i kubeflow or an IstioOperator naming kubeflow: not pinned down why); the operator then
    # deletes what it would have selected: the default revision's control plane, by the labels istioctl puts on it.
    _run(env, "istioctl", "uninstall", "-y", "--revision", "default", "-i", source)
    _run(env, "kubectl", "delete", "--all-namespaces", "--wait=false", "-l", f"istio.io/rev=default,"
         f"operator.istio.io/component=Pilot,install.operator.istio.io/owning-resource-namespace={source}",
         "deployment,service,configmap,serviceaccount,role,rolebinding,horizontalpodautoscaler,"
         "poddisruptionbudget,mutatingwebhookconfiguration,validatingwebhookconfiguration,clusterrole,"
         "clusterrolebinding")
