"""kf-istio-migrate: the Istio control plane of Charmed Kubeflow, before (`legacy`) and after (`migrated`) its move.

Gather, then decide purely, then declare: load config; resolve the one cluster this stack acts on; read which Istio
runs there and plan each plane's version; render both planes with the matching istioctl; read the cluster; decide
every component's Args (refusing before any mutation); declare the components in phase order, all through one
explicit kubernetes provider. `migrated` moves the mesh to the target namespace;
`legacy` converges on the charm's layout, which after a migration is the way back.
"""

import concurrent.futures
import dataclasses
import json
import os
import pathlib

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.canary import Canary, CanaryPutBack
from components.checks import MeshAnalysis, RetiredRevision, ServingCheck, Teardown, Verification
from components.control_plane import IstioControlPlane
from components.crds import IstioCrds
from components.gateway import IngressGateway
from components.guard import Guard
from components.hand_over import DefaultTag, HelmHandOver, let_go
from components.rollouts import Rollouts, UnmanagedPods
from components.webhook_switch import WebhookSwitch
from live import analyze, discovery, target as live_target
from migration import config, istioctls, plan, render
from migration.account import move_account
from migration.decide import Decisions, decide, objects_to_look_up
from migration.secrets import weak_secrets
from migration.version_policy import plan_versions


def gather_and_decide() -> Decisions:
    """Everything read-only: config, renders, the cluster. Raises pulumi.RunError (one line) on refusal."""
    try:
        cfg = config.load()
        kube = pulumi.Config("kubernetes")
        root = pathlib.Path(pulumi.runtime.get_root_directory())
        target = live_target.resolve(kube.get("kubeconfig"), kube.get("context"), os.environ, root)
        istiods, installed = discovery.istio_installs(target, cfg.source_namespace)
        versions = plan_versions(cfg, istiods, lambda: istioctls.default_version(cfg.istioctl), installed)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            # Istio's own preflight for the plane this stack installs: a process of its own, read-only, so it runs
            # while the planes are rendered and the cluster is read.
            precheck = pool.submit(analyze.precheck, istioctls.find(versions.migrated.version, cfg.istioctl),
                                   cfg.target_namespace, target.kubeconfig, target.context) \
                if cfg.topology == "migrated" else None
            renders = render.render_both(cfg, versions)
            live = discovery.read(target, (cfg.source_namespace, cfg.target_namespace),
                                  objects_to_look_up(cfg, renders), istiods)
            if precheck is not None:
                live = dataclasses.replace(live, precheck=precheck.result())
                pulumi.log.info(f"istioctl x precheck -i {cfg.target_namespace}: "
                                f"{'; '.join(map(str, live.precheck)) or 'no issues'}")
        decided = decide(cfg, renders, live, target)
        pulumi.log.info(f"this update: {decided.outputs['phase']}")
    except (config.ConfigError, live_target.TargetError, render.RenderError, analyze.AnalysisFailed) as err:
        raise pulumi.RunError(str(err)) from None
    except plan.PreflightRefused as err:
        raise pulumi.RunError(f"preflight refused: {err}") from None
    if decided.holds_ca_key:
        stack_file = root / f"Pulumi.{pulumi.get_stack()}.yaml"
        settings = yaml.safe_load(stack_file.read_text()) if stack_file.is_file() else {}
        if problem := weak_secrets(settings or {}, os.environ):
            raise pulumi.RunError(f"preflight refused: {problem}")
    return decided


def declare(d: Decisions) -> None:
    """The components in phase order, every Kubernetes object through one provider bound to d.target."""
    if d.release:
        # Before any resource: the transform applies to those declared after it.
        pulumi.runtime.register_resource_transform(let_go(d.release))
    # ConfigMaps are updated in place, as istiod expects of its mesh and injector config. The provider's default
    # replaces one whose data changes, and with the same name that is an apply followed by a delete of the object
    # just applied (the guard refuses it on a migrated plane; elsewhere the ConfigMap would be gone).
    provider = k8s.Provider("cluster", kubeconfig=d.target.kubeconfig, context=d.target.context,
                            enable_config_map_mutable=True)
    on_cluster = lambda *after: pulumi.ResourceOptions(providers=[provider], depends_on=list(after))  # noqa: E731
    # Moving (either way): first Istio's analyzers look at the mesh as it is, refusing conflicting webhooks before
    # any change. Rolling back: then lift the guard, which refuses what the way back creates (an istiod in the
    # source namespace).
    analysis = MeshAnalysis("analyze-before", d.steps.verification, on_cluster()) if d.steps else None
    first = [analysis] if analysis else []
    lifted = [Teardown("lift-guard", d.lift_guard, on_cluster(*first))] if d.lift_guard else first
    # Phase 1: CRDs (adopted where they exist, with the labels and annotations others put on them; never deleted).
    # Phase 2: the control plane, with the CA copied in before istiod starts (one root of trust). It waits for the
    # CRDs only when they change on the cluster (created, or a new schema).
    crds = IstioCrds("istio-crds", d.crds, on_cluster(*lifted)) if d.crds.change_the_cluster else None
    control_plane = IstioControlPlane("control-plane", d.control_plane, on_cluster(*lifted, *([crds] if crds else [])))
    gateway_after, switch, teardown, canary = [control_plane], None, None, None
    moving = d.steps and not d.steps.canary_only
    if d.steps:
        # Phase 3: once the destination istiod serves, the canary namespaces move and are proven (if asked); then
        # point the default injector and validator at it (one write each).
        serving = ServingCheck("istiod-serving", d.steps.serving, on_cluster(control_plane))
        if d.steps.canary:
            canary = Canary("canary", d.steps.canary, on_cluster(serving))
    if moving:
        switch = WebhookSwitch("webhook-switch", d.steps.switch, on_cluster(canary or serving), held_by=control_plane,
                               canary=canary.command if canary else None)
        gateway_after = [switch]
    if not d.steps or moving:
        # Phase 4: the gateway talks to this topology's istiod (its Deployment rolls when that changes).
        gateway = IngressGateway("ingress-gateway", d.gateway, on_cluster(*gateway_after))
    if moving:
        # Phase 4: restart or evict every workload in the mesh, wait for (or evict) pods no workload covers. On the
        # way back, canary namespaces first return to the default injection path.
        moved_after = [switch, *([CanaryPutBack("canary-put-back", d.steps.put_back, on_cluster(switch))]
                                 if d.steps.put_back else [])]
        rollouts = Rollouts("rollout", d.steps.rollouts, on_cluster(*moved_after))
        unmanaged = UnmanagedPods("unmanaged-pods", d.steps.unmanaged, on_cluster(*moved_after))
    if crds is None:
        # CRDs adopted as they stand: importing them writes nothing on the cluster, so they need not come first, and
        # they are costly: the engine turns each import into steps one at a time, and the program (de)serializes
        # each ~100 KB CRD on its one thread. Imported beside istiod's start or right after the switch they held up
        # the webhooks, the switch or the rollout command's registration by ~5 s on the bench (docs/benchmarks.md,
        # 2026-12-04). So they come once the check of pods no workload covers is done: that command and the
        # rollouts start together and it ends first, so the imports run while the workloads roll. With no switch
        # (the legacy stack, a rollback), they come while istiod starts.
        crds = IstioCrds("istio-crds", d.crds, on_cluster(
            *lifted, *([unmanaged] if moving else control_plane.istiod_prerequisites)))
    if moving:
        # 5: the in-use gate (no running pod left on the old plane); 6: remove the other control plane, only once
        # this stack owns every CRD (retained on delete).
        verified = Verification("verify-sidecars", d.steps.verification, analysis,
                                on_cluster(rollouts, unmanaged, gateway))
        teardown = Teardown(d.steps.teardown_name, d.steps.teardown, on_cluster(verified, crds))
        if d.retired:
            # After an upgrade of the moved plane: the guard lets the replaced revision's objects go, and the engine
            # deletes them at the end of the update (this program no longer declares them).
            RetiredRevision("retired-revision", d.retired, on_cluster(verified))
    guard = None
    if d.guard:
        # Phase 7: refuse deletion of the CRDs and the new plane (e.g. by the old charm's `istioctl uninstall --purge`).
        guard = Guard("guard", d.guard, on_cluster(*[r for r in (crds, control_plane, switch, teardown) if r]))
    if d.default_tag:
        # Handed over: the default injector under the name Istio's tools look for, once the guard lets the stack
        # delete the former one.
        DefaultTag("default-tag", d.default_tag, on_cluster(*[r for r in (switch, teardown, guard) if r]))
    if d.helm_hand_over:
        # Handed to Helm: once the charts' objects are applied as their releases render them, end this stack's (and
        # istioctl's) ownership of their fields, so that Helm owns what it renders.
        HelmHandOver("helm-hand-over", d.helm_hand_over, on_cluster(crds, control_plane))
    for name, value in d.outputs.items():
        pulumi.export(name, value)
    if d.steps:
        # Every workload moved (from each moving command's account line) and every pod left to unmanagedPods.
        moving_commands = [("canary", canary.command)] if canary else []
        moving_commands += [("rollout", c) for c in rollouts.commands] if moving else []
        pulumi.export("moveAccount", pulumi.Output.all(*[c.stdout for _, c in moving_commands]).apply(
            lambda outputs: move_account(zip([phase for phase, _ in moving_commands], outputs),
                                         d.outputs["unmanagedPods"])))
    if analysis:
        pulumi.export("analysisBefore", analysis.command.stdout.apply(lambda out: json.loads(out) if out else []))


if __name__ == "__main__":
    declare(gather_and_decide())
