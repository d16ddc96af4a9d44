"""What the stack exports, assembled from what migration.decide decided: the names and values `pulumi preview` shows
before anything changes, and that operators (docs/runbook.md), the demo and the fleet table read back. Plain data in,
a dict out: a changed name or value here is a change on every existing stack.
"""

from __future__ import annotations

from typing import Any

from migration import guard, helm, render, versions
from migration.args import MigrationSteps, ReleaseArgs
from migration.config import MigrationConfig
from migration.live_mesh import LiveMesh
from migration.target import KubeTarget
from migration.version_policy import VersionPlan, crd_versions, newer
from migration.workloads import Moves


def stack_outputs(cfg: MigrationConfig, renders: render.Renders, live: LiveMesh, target: KubeTarget, *,
                  rendered: list[dict[str, Any]], topology: render.Topology, leaving: str, found: Moves,
                  steps: MigrationSteps | None, rolling_back: bool, release: ReleaseArgs | None,
                  releases: helm.HelmReleases | None) -> dict[str, Any]:
    """Output name -> value. After decide's own inputs, what it decided on the way: rendered and topology, this
    stack's plane as rendered; leaving, the istiod address of the plane moved away from; found, the workloads and
    unmanaged pods of the move; steps, the move (None: nothing to move); release and releases, the hand-over."""
    migrated = cfg.topology == "migrated"
    new_istiod = next(o for o in render.control_plane(renders.migrated) if o["kind"] == "Deployment")
    return {"handOver": _hand_over_output(release, migrated, releases, cfg.source_namespace), "topology": cfg.topology,
            "rollingBack": rolling_back, "cluster": target.server,
            "context": target.context, "sourceNamespace": cfg.source_namespace,
            "gatewayNamespace": cfg.gateway_namespace, "controlPlaneNamespace": cfg.control_plane_namespace,
            "revision": cfg.control_plane_revision, "istiodAddress": topology.istiod_address,
            "leavingIstiodAddress": leaving,
            "injectorWebhook": topology.injector_webhook, "validatorWebhook": topology.validator_webhook,
            "workloadMoves": _moves_output(found), "restartedWorkloads": len(found.workloads),
            "phase": _phase(steps, renders.versions, cfg.revision) if migrated else _phase(steps),
            "canary": _canary_output(steps),
            "unmanagedPods": [f"{pod}: {cfg.unmanaged_pods}" for pod in found.unmanaged],
            "removedObjects": len(steps.teardown.objects) if steps else 0,
            "inUseGate": steps.verification.judged_by if steps else "no move, no gate",
            "legacyIstiod": versions.describe(renders.versions.legacy_image),
            "migratedIstiod": versions.describe(versions.istiod_image(new_istiod)),
            "crdSchemas": _crd_schemas(renders.versions, migrated),
            "liveCrdVersions": crd_versions(live.crds),
            **(_helm_outputs(releases, render.control_plane(rendered), cfg.revision) if releases else {}),
            **({"istioctlFlags": _istioctl_flags(cfg, renders.versions)} if release and migrated else {})}


def _moves_output(found: Moves) -> dict[str, dict[str, int]]:
    """namespace -> 'restart Deployment' / 'evict StatefulSet' ... -> how many workloads (what preview shows)."""
    counts: dict[str, dict[str, int]] = {}
    for w in found.workloads:
        way = f"{'evict' if w.evict_because else 'restart'} {w.kind}"
        counts.setdefault(w.namespace, {})[way] = counts.get(w.namespace, {}).get(way, 0) + 1
    return counts


def _phase(steps: MigrationSteps | None, version_plan: VersionPlan | None = None, revision: str = "") -> str:
    """Which phase the next `pulumi up` runs (what preview shows): for the migrated stack, with version_plan and
    its revision, whether it upgrades the moved plane."""
    if steps is None:
        return "nothing to move"
    if version_plan and (previous := version_plan.previous):  # the same text during the upgrade and after it
        first = f"the canary ({', '.join(steps.canary.namespaces)}) moves and is proven, " if steps.canary else ""
        return (f"upgrade: istiod-{revision} ({version_plan.migrated.version}) comes beside istiod-"
                f"{previous.revision} ({previous.plane.version}), {first}the default injector and validator switch "
                f"to it, every workload restarts, then istiod-{previous.revision}'s objects are deleted")
    if steps.put_back:
        return "the way back: every namespace and workload returns to the legacy plane"
    if steps.canary is None:
        return "the whole mesh in one move: switch, then every workload"
    canary = ", ".join(steps.canary.namespaces)
    if steps.canary_only:
        return (f"canary only: {canary} move and are proven, then the update ends; the rest "
                f"({sum(len(b) for b in steps.rollouts.batches)} workload(s)) waits for "
                f"`pulumi config rm kf-istio-migrate:canaryOnly`")
    return f"canary first ({canary}, proven and soaked {steps.canary.soak_seconds}s), then the rest"


def _canary_output(steps: MigrationSteps | None) -> dict[str, Any]:
    """The canary's namespaces and the workloads it moves, by namespace and way."""
    if steps is None or steps.canary is None:
        return {}
    return {"namespaces": list(steps.canary.namespaces), "soakSeconds": steps.canary.soak_seconds,
            "workloadMoves": _moves_output(Moves(steps.canary.workloads, ())),
            "restartedWorkloads": len(steps.canary.workloads),
            "gate": "every proxy connected and SYNCED to the new istiod (istioctl proxy-status), every pod Ready, "
                    "no istio-proxy restart, each namespace's new pods still sent to the new istiod; again after the "
                    "soak"}


def _hand_over_output(release: ReleaseArgs | None, migrated: bool, releases: helm.HelmReleases | None,
                      source: str) -> str:
    """What the stack holds, and what `pulumi destroy` would do (preview shows it)."""
    if release is None:
        return ("held by this stack (protected: `pulumi destroy` is refused; set handOver=release to let go)"
                if migrated else "held by this stack")
    guard_fate = (f"the guard stays, owned by nothing, refusing only the {source} model's charms (and anyone's "
                  f"deletion of an Istio CRD, the namespace or the root's Secret; lift it: kubectl delete "
                  f"validatingadmissionpolicybinding {guard.POLICY})" if release.keep_guard
                  else "destroy deletes the guard")
    helm_next = (f"; then Helm takes over (outputs helmValues and helmCommands): releases {releases.base} (chart "
                 f"base) and {releases.istiod} (chart istiod) in {releases.namespace}" if releases else "")
    return (f"released: `pulumi destroy` empties this stack and leaves every object on the cluster; "
            f"{guard_fate}{helm_next}")


def _helm_outputs(releases: helm.HelmReleases, plane: list[dict[str, Any]], revision: str) -> dict[str, Any]:
    """The values file both charts take, and the commands that install them over what runs."""
    commands = ["pulumi stack output helmValues > istio-values.yaml", "pulumi destroy"]
    commands += [f"helm upgrade --install {releases.release_of(chart)} <charts>/{chart} --namespace "
                 f"{releases.namespace} --values istio-values.yaml" for chart in helm.CHARTS]
    return {"helmValues": helm.values_yaml(plane, revision), "helmCommands": commands}


def _istioctl_flags(cfg: MigrationConfig, version_plan: VersionPlan) -> list[str]:
    """The flags istioctl rendered the moved plane with: what the next owner's `istioctl install --revision <new>`
    takes (with its own revision and image tag) so that the new plane is configured as the moved one."""
    return render.istioctl_args(render.migrated_input(cfg, version_plan.migrated))[2:]


def _crd_schemas(version_plan: VersionPlan, migrated: bool) -> str:
    """What this stack does to the CRDs' schemas (preview shows it): a version jump or an upgrade rewrites them as
    `istioctl install --revision` would, the way back to the charm returns them to the recorded version, and going
    back from an upgrade keeps them (migration.decide)."""
    legacy, new_plane = version_plan.legacy.version, version_plan.migrated.version
    if migrated and (previous := version_plan.previous):  # the same text during the upgrade and after it
        if newer(previous.plane.version, new_plane):
            return f"kept at {previous.plane.version}'s (going back to {new_plane} keeps the newer schemas)"
        if previous.plane.version != new_plane:
            return f"updated from {previous.plane.version} to {new_plane}"
        return f"kept at {new_plane}"
    if legacy == new_plane:
        return f"kept at {legacy}"
    old, new = (legacy, new_plane) if migrated else (new_plane, legacy)
    return f"updated from {old} to {new}"
