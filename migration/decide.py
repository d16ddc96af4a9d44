"""Everything the program decides before declaring a resource, as a pure function of plain data:
decide(cfg, renders, live, target) -> each component's finished Args, and the stack's outputs, which migration.outputs
assembles from them. No I/O here: __main__ gathers first.

`migrated` moves the mesh to the target namespace; `legacy` converges on the charm's layout, which after (or
during) a migration is the way back. Refusals raise plan.PreflightRefused.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any, Mapping

from migration import guard, helm, istioctls, plan, render, versions
from migration.args import (CanaryArgs, ControlPlaneArgs, DefaultTagArgs, GatewayArgs, GuardArgs, HelmHandOverArgs,
                            IstioCrdsArgs, MigrationSteps, PutBackArgs, ReleaseArgs, RetiredRevisionArgs, RolloutsArgs,
                            ServingCheckArgs, TeardownArgs, UnmanagedPodsArgs, VerificationArgs, WebhookSwitchArgs)
from migration.canary import canary_namespaces, injection_labels, on_default_path
from migration.config import MigrationConfig
from migration.gateway import GatewayLayout, gateway_objects, gateway_patches
from migration.marks import (adoptable, annotated, installed_by_istioctl, made_here, proven_by_serving_check, protected,
                             purge_proof)
from migration.live_mesh import LiveMesh, object_id
from migration.outputs import stack_outputs
from migration.target import KubeTarget
from migration.version_policy import VersionPlan, check_crds_not_downgraded, newer
from migration.workloads import Moves, moves


@dataclasses.dataclass(frozen=True)
class Decisions:
    target: KubeTarget
    crds: IstioCrdsArgs
    control_plane: ControlPlaneArgs
    gateway: GatewayArgs
    steps: MigrationSteps | None
    """None when the legacy stack finds the default path on the legacy istiod and no migrated plane."""
    guard: GuardArgs | None
    """The migrated stack's guard (none in legacy)."""
    lift_guard: TeardownArgs | None
    """Rolling back: the guard's binding, deleted before anything else (it refuses an istiod in the source
    namespace and Istio webhooks calling it, which is what the way back creates)."""
    release: ReleaseArgs | None
    """handOver=release or helm: the stack lets go of everything it declares (components.hand_over)."""
    helm_hand_over: HelmHandOverArgs | None
    """handOver=helm: the charts' objects, applied as their releases render them, then disowned."""
    default_tag: DefaultTagArgs | None
    """handOver=release or helm: the default injector takes the default tag's name in the target namespace."""
    retired: RetiredRevisionArgs | None
    """The migrated stack upgraded the moved plane: the revision it replaced, let go of once no sidecar uses it."""
    outputs: dict[str, Any]
    """What the stack exports (migration.outputs.stack_outputs)."""

    @property
    def holds_ca_key(self) -> bool:
        """The stack's state will hold a CA private key (a copied CA Secret)."""
        return any(o["kind"] == "Secret" for o in self.control_plane.objects)


def _gateway_layout(cfg: MigrationConfig, topology: render.Topology) -> GatewayLayout:
    return GatewayLayout(namespace=cfg.gateway_namespace, istiod_address=topology.istiod_address,
                         revision=cfg.control_plane_revision, proxy_image=topology.proxy_image,
                         gateway_cr_namespace=cfg.source_namespace)


def objects_to_look_up(cfg: MigrationConfig, renders: render.Renders) -> list[dict[str, Any]]:
    """The objects whose existence decide needs (live.discovery looks each up once)."""
    gateway = gateway_objects(_gateway_layout(cfg, render.topology(renders.legacy, cfg.source_namespace, "default")))
    if cfg.topology == "migrated":
        return gateway
    return render.control_plane(renders.legacy) + render.control_plane(renders.migrated) + gateway


def with_live_metadata(crd: Mapping[str, Any], live: Mapping[str, Any] | None) -> dict[str, Any]:
    """crd with the live labels and annotations merged under the rendered ones (rendered wins on conflict):
    pulumi-kubernetes replaces CRDs whole and would otherwise drop what others (helm, the charm) put there."""
    merged = copy.deepcopy(dict(crd))
    meta = merged["metadata"]
    for field in ("labels", "annotations"):
        values = {**((live or {}).get(field) or {}), **(meta.get(field) or {})}
        if values:
            meta[field] = values
    return merged


def as_live(crd: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """crd declared as it stands on the cluster, whatever the rendering says of its spec."""
    return with_live_metadata({**crd, "spec": copy.deepcopy(live["spec"])}, live)


def with_live_defaults(crd: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """crd with the live labels and annotations merged in, and the spec fields the API server defaulted (such as
    `conversion`) taken from live: declared so once its schema changes, it is declared the same on the runs after,
    when it stands as rendered."""
    merged = with_live_metadata(crd, live)
    live_spec = live.get("spec") or {}
    return {**merged, "spec": {**{k: copy.deepcopy(v) for k, v in live_spec.items() if k not in crd["spec"]},
                               **merged["spec"]}}


def as_live_if_unchanged(crd: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any] | None:
    """crd declared exactly as it stands on the cluster (with_live_defaults) when rendering changes nothing on it;
    else None. Imported as it stands, it needs no update step: the engine carries it without a server-side apply or
    a second checkpoint."""
    merged = with_live_defaults(crd, live)
    meta = merged["metadata"]
    if merged["spec"] != (live.get("spec") or {}) or \
            any((meta.get(f) or {}) != (live.get(f) or {}) for f in ("labels", "annotations")):
        return None
    return merged


def _crds(rendered: list[dict[str, Any]], live: LiveMesh, keep_live: bool = False) -> IstioCrdsArgs:
    """Every CRD; those on the cluster are adopted: as they stand when rendering changes nothing (the move
    itself) or when keep_live (a newer version's schemas, which going back never downgrades), else with their new
    schema forced over the field managers that applied the old one (a version jump)."""
    crds = render.crds(rendered)
    adopt = frozenset(c["metadata"]["name"] for c in crds if c["metadata"]["name"] in live.crds)

    as_they_stand = {c["metadata"]["name"]: standing for c in crds if c["metadata"]["name"] in adopt
                     and (standing := (as_live(c, live.crds[c["metadata"]["name"]]) if keep_live else
                                       as_live_if_unchanged(c, live.crds[c["metadata"]["name"]])))}

    def declared(crd: dict[str, Any]) -> dict[str, Any]:
        name = crd["metadata"]["name"]
        if name not in adopt:
            return crd
        return as_they_stand.get(name) or adoptable(with_live_defaults(crd, live.crds[name]))

    return IstioCrdsArgs(crds=tuple(declared(c) for c in crds), adopt=adopt, as_they_stand=frozenset(as_they_stand))


def _gateway(cfg: MigrationConfig, topology: render.Topology, live: LiveMesh, target: KubeTarget) -> GatewayArgs:
    """A gateway another owner made (the istio-gateway charm): patched, only where the move must change it; the
    migrated stack also protects it for the guard and takes the purge label off its pods. The migrated stack never
    creates a gateway object the charm did not make, and leaves the Gateway CR to its owner. The legacy stack on a
    cluster without a gateway, or with the one it made: whole objects (what is missing created, the rest its own)."""
    layout = _gateway_layout(cfg, topology)
    whole = gateway_objects(layout)
    deployment = next(object_id(o) for o in whole if o["kind"] == "Deployment")
    migrated = cfg.topology == "migrated"
    if migrated or (deployment in live.present and deployment not in live.made_here):
        patches = gateway_patches(layout, live.present, protect=migrated, live_env=live.proxy_env.get(deployment))
        return GatewayArgs(objects=tuple(adoptable(p) for p in patches), patches=True,
                           purge_proof=(deployment,) if migrated and deployment in live.present else (),
                           istiod_address=topology.istiod_address, target=target)
    objects, adopt = [], set()
    for obj in whole:
        present = object_id(obj) in live.present
        if obj["kind"] == "Gateway" and present and object_id(obj) not in live.made_here:
            continue  # the move does not change the Gateway CR: it stays with whoever made it, untouched
        # The Gateway CR this stack made is declared as it stands: no force annotation on user config (and none
        # needed, its fields are the ones it applied).
        objects.append(adoptable(obj) if present and obj["kind"] != "Gateway" else obj)
        adopt |= {object_id(obj)} if present else set()
    return GatewayArgs(objects=tuple(objects), adopt=frozenset(adopt), istiod_address=topology.istiod_address,
                       target=target)


def _moves(cfg: MigrationConfig, live: LiveMesh, leaving: str, destination: str, gateway: GatewayArgs) -> Moves:
    """Every workload to restart or evict; refuses (unmanagedPods=fail) when running pods on the plane being left
    have no workload to restart them."""
    found = moves(live.pods, live.controllers, live.namespaces, live.mutating_webhooks, leaving, destination,
                  excluded=[object_id(o) for o in gateway.objects if o["kind"] == "Deployment"])
    if found.unmanaged and cfg.unmanaged_pods == "fail":
        raise plan.PreflightRefused(
            f"{len(found.unmanaged)} running pod(s) use {leaving} and no workload can restart them: "
            f"{', '.join(found.unmanaged)}; let them finish or delete them, or set kf-istio-migrate:unmanagedPods "
            f"to wait or evict")
    return found


def _release(cfg: MigrationConfig, live: LiveMesh) -> ReleaseArgs | None:
    """handOver=release (or helm) lets go of a finished move only: with an istiod still in the namespace the stack
    moves away from, the stack would leave two control planes behind, nothing owning either."""
    if cfg.hand_over == "none":
        return None
    away = cfg.source_namespace if cfg.topology == "migrated" else cfg.target_namespace
    left = sorted(f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in live.istiod_deployments
                  if d["metadata"]["namespace"] == away)
    if left:
        raise plan.PreflightRefused(
            f"kf-istio-migrate:handOver {cfg.hand_over} lets go of a finished move only, but istiod still runs in "
            f"{away} ({', '.join(left)}): run `pulumi up` without handOver until the move is done, then release")
    return ReleaseArgs(keep_guard=cfg.keep_guard)


def _live_canary(live: LiveMesh) -> tuple[str, ...]:
    """The canary namespaces the live default injector holds (a canary made, not yet switched or put back)."""
    found = plan.default_injectors(live)
    return canary_namespaces(found[0]) if found else ()


def _check_canary(cfg: MigrationConfig, live: LiveMesh, new_service: str) -> None:
    """Refuse canary namespaces off the default injection path (the canary moves what the default injector
    injects), canaryOnly once the mesh moved, and a run that declares no canary while the default injector holds
    one: the switch folds a canary in only after a canary step of its stack (live.fold)."""
    held = _live_canary(live)
    if held and not cfg.canary_namespaces:
        raise plan.PreflightRefused(
            f"the default injector holds a canary of {', '.join(held)} (its new pods go to the new istiod), but "
            f"kf-istio-migrate:canaryNamespaces is not set: set it back to {json.dumps(list(held))} to finish the "
            f"move (`pulumi config rm kf-istio-migrate:canaryOnly` alone ends canary-only runs), or run the legacy "
            f"stack to go back")
    for ns in cfg.canary_namespaces:
        labels = live.namespaces.get(ns)
        if labels is None:
            raise plan.PreflightRefused(f"canary namespace {ns} (kf-istio-migrate:canaryNamespaces) does not exist")
        if not on_default_path(labels):
            raise plan.PreflightRefused(
                f"canary namespace {ns} is not on the default injection path (labels "
                f"{injection_labels(labels) or 'none'}, not "
                f"istio-injection=enabled): the canary moves such namespaces only; remove it from "
                f"kf-istio-migrate:canaryNamespaces")
    if cfg.canary_only and plan.default_injector_target(live) == (cfg.target_namespace, new_service):
        raise plan.PreflightRefused(
            "kf-istio-migrate:canaryOnly stops before the default injector is switched, but it already sends pods to "
            f"{new_service}.{cfg.target_namespace}: the mesh has moved; `pulumi config rm kf-istio-migrate:canaryOnly`")


def _default_tag(cfg: MigrationConfig, steps: plan.MigrationPlan, live: LiveMesh,
                 target: KubeTarget) -> DefaultTagArgs | None:
    """Handing over: the moved default injector under the name Istio's tools give the default tag's injector in the
    target namespace (`istioctl tag set default` and the chart's revisionTags then update it in place instead of
    adding a second injector beside it), and its former names retired."""
    if cfg.topology != "migrated" or cfg.hand_over == "none":
        return None
    injector = protected(adoptable(plan.as_default_tag(steps.default_injector, cfg.target_namespace)))
    exists = injector["metadata"]["name"] in {w["metadata"]["name"] for w in live.mutating_webhooks}
    former = tuple(("MutatingWebhookConfiguration", "", name)
                   for name in plan.former_default_injector_names(cfg.source_namespace))
    return DefaultTagArgs(injector=injector, exists=exists, retire=TeardownArgs(objects=former, target=target))


def _steps(cfg: MigrationConfig, topology: render.Topology, steps: plan.MigrationPlan, found: Moves,
           left: tuple[str, str], target: KubeTarget, version: str, default_tag: DefaultTagArgs | None,
           plane: list[dict[str, Any]], live_canary: tuple[str, ...]) -> MigrationSteps:
    """left: the istiod address and revision of the plane moved away from; version: the Istio version of the plane
    moved to, whose istioctl asks the control planes which proxies they serve (the in-use gate's live view);
    live_canary: the canary the way back finds on the default injector. The
    canary namespaces' workloads move with the canary, the rest after the switch. Handed over, the switch keeps
    neither the injector (default_tag's) nor a validator the plane declares (the base chart's, handed to Helm)."""
    injector = None if default_tag else protected(adoptable(steps.default_injector))
    in_plane = {(o["kind"], o["metadata"]["name"]) for o in plane}
    validator = (protected(adoptable(steps.default_validator)) if steps.default_validator and
                 ("ValidatingWebhookConfiguration", steps.default_validator["metadata"]["name"]) not in in_plane
                 else None)
    leaving, leaving_revision = left
    verification = VerificationArgs(
        istiod_address=topology.istiod_address, leaving=leaving, target=target, istioctl_version=version,
        istioctl=istioctls.configured_for(version, cfg.istioctl), timeout_seconds=cfg.rollout_timeout_seconds,
        require_live_view=cfg.require_live_view, revisions=(cfg.control_plane_revision, leaving_revision))
    canary = tuple(w for w in found.workloads if w.namespace in cfg.canary_namespaces)
    rest = tuple(w for w in found.workloads if w.namespace not in cfg.canary_namespaces)
    return MigrationSteps(
        serving=ServingCheckArgs(validator=topology.validator_webhook, timeout_seconds=cfg.rollout_timeout_seconds,
                                 target=target),
        switch=WebhookSwitchArgs(injector=injector, validator=validator, target=target,
                                 fold=bool(cfg.canary_namespaces) or cfg.topology == "legacy", live_canary=live_canary),
        rollouts=RolloutsArgs(
            batches=plan.rollout_batches(rest, cfg.rollout_strategy),
            strategy=cfg.rollout_strategy, parallelism=cfg.rollout_parallelism,
            timeout_seconds=cfg.rollout_timeout_seconds, istiod_address=topology.istiod_address, leaving=leaving,
            target=target),
        unmanaged=UnmanagedPodsArgs(policy=cfg.unmanaged_pods, timeout_seconds=cfg.unmanaged_pods_timeout_seconds,
                                    istiod_address=topology.istiod_address, leaving=leaving, target=target),
        verification=verification,
        teardown=TeardownArgs(objects=steps.teardown, target=target),
        teardown_name=("teardown-legacy-control-plane" if cfg.topology == "migrated"
                       else "teardown-migrated-control-plane"),
        canary=(CanaryArgs(namespaces=cfg.canary_namespaces, injector=steps.default_injector["metadata"]["name"],
                           workloads=canary, soak_seconds=cfg.canary_soak_seconds,
                           parallelism=cfg.rollout_parallelism, check=verification)
                if cfg.canary_namespaces else None),
        canary_only=cfg.canary_only,
        put_back=PutBackArgs(revision=cfg.revision, target=target) if cfg.topology == "legacy" else None)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _legacy_plane(cfg: MigrationConfig, rendered: list[dict[str, Any]], live: LiveMesh,
                  steps: plan.MigrationPlan | None) -> list[dict[str, Any]]:
    """The charm's plane as declared: webhooks found on the cluster are adopted as they are live (e.g.
    deactivated), a rendered injector is deactivated when another webhook injects by default, the switched ones are
    left to the switch. What the stack creates carries MADE_HERE, so that its later runs declare it as they created
    it (a webhook re-declared as it is live would differ in every field the API server defaults). Everything is
    adoptable, created or found: the same declaration on every run."""
    switched = steps.switched if steps else set()
    live_webhooks = {w["metadata"]["name"]: w for w in live.mutating_webhooks + live.validating_webhooks}
    default_injector = plan.default_injector_name(live)
    objects = [_namespace(cfg.source_namespace)] if cfg.create_source_namespace else []
    for obj in render.control_plane(rendered):
        name = obj["metadata"]["name"]
        if name in switched:
            continue
        found = object_id(obj) in live.present and object_id(obj) not in live.made_here
        if obj["kind"].endswith("WebhookConfiguration") and found and name in live_webhooks:
            obj = plan.as_declared(live_webhooks[name], obj["kind"])
        elif obj["kind"] == "MutatingWebhookConfiguration" and default_injector not in (None, name):
            obj = plan.deactivated(obj)  # never a second injector
        objects.append(obj if found else made_here(obj))
    if steps and steps.ca_secret:
        objects.append(steps.ca_secret)
    return [adoptable(o) for o in objects]


def decide(cfg: MigrationConfig, renders: render.Renders, live: LiveMesh, target: KubeTarget) -> Decisions:
    migrated = cfg.topology == "migrated"
    releases = (helm.HelmReleases(base=cfg.helm_base_release, istiod=cfg.helm_istiod_release,
                                  namespace=cfg.target_namespace) if cfg.hand_over == "helm" else None)
    rendered = renders.migrated if migrated else renders.legacy
    topology = render.topology(rendered, cfg.control_plane_namespace, cfg.control_plane_revision)
    # The plane moved away from: the legacy one, or once the migrated stack upgraded the moved plane, the revision
    # it replaced (retiring now, or as recorded), so that every later run declares the same steps.
    previous = renders.versions.previous if migrated else None
    if previous:
        leaving, leaving_revision = render.revision_address(cfg.target_namespace, previous.revision), previous.revision
    elif migrated:
        leaving = render.topology(renders.legacy, cfg.source_namespace, "default").istiod_address
        leaving_revision = "default"
    else:
        leaving = render.topology(renders.migrated, cfg.target_namespace, cfg.revision).istiod_address
        leaving_revision = cfg.revision
    # Going back from an upgrade keeps the newer version's CRD schemas, as Istio's canary rollback does.
    keep_crds = previous is not None and newer(previous.plane.version, renders.versions.migrated.version)
    if migrated:
        if not keep_crds:
            check_crds_not_downgraded(renders.versions, live.crds)
        retiring = renders.versions.retiring
        steps = plan.plan(live, cfg, renders.legacy, topology.istiod_service,
                          retiring_service=render.revision_service(retiring.revision) if retiring else None)
        _check_canary(cfg, live, topology.istiod_service)
        # Not handed to Helm, the plane is istioctl's: labelled as its install labels it (Helm's are the release's).
        version = renders.versions.migrated.version
        installed = [o if releases else installed_by_istioctl(o, version, cfg.target_namespace, cfg.revision)
                     for o in render.control_plane(rendered)]
        plane = [_namespace(cfg.target_namespace), *(_recording(o, renders.versions) for o in installed),
                 steps.ca_secret]
        # adoptable: a create cut off by a crash is re-applied on resume, over its own earlier field manager.
        # Handed to Helm, istiod's pods carry the label purge selects again: the chart renders it, and a pod
        # template that differed from the chart's would restart istiod at the first `helm upgrade`.
        marked = (lambda o: protected(helm.owned_by_release(o, releases))) if releases else purge_proof
        objects = [adoptable(marked(proven_by_serving_check(o))) for o in plane if o]
        adopt: frozenset = frozenset()
        rolling_back = False
    else:
        if cfg.source_namespace not in live.namespaces and not cfg.create_source_namespace:
            # The charm's layout lives in the Juju model's namespace; a cluster without it has no mesh of the charms
            # to keep or return to, and installing one half-way (CRDs first) helps no one.
            raise plan.PreflightRefused(
                f"source namespace {cfg.source_namespace} does not exist: the legacy layout lives in the Juju model's "
                f"namespace; set kf-istio-migrate:sourceNamespace to it (or createSourceNamespace true on a cluster "
                f"with no Juju model, to model the layout there)")
        now = plan.default_injector_target(live)
        migrated_plane = render.control_plane(renders.migrated)
        # Also once the way back is done: the stack keeps declaring it as it ran (each step re-runs only if its
        # triggers change, and then does only what is left), so that its next run proposes nothing.
        rolling_back = ((now is not None and now != (cfg.source_namespace, topology.istiod_service))
                        or any(object_id(o) in live.present for o in migrated_plane)
                        or plan.default_path_switched(live))
        steps = (plan.rollback_plan(live, cfg, migrated_plane, topology.istiod_service, guard.OBJECTS)
                 if rolling_back else None)
        objects = _legacy_plane(cfg, rendered, live, steps)
        adopt = frozenset(object_id(o) for o in objects if object_id(o) in live.present)
    gateway = _gateway(cfg, topology, live, target)
    found = _moves(cfg, live, leaving, topology.istiod_address, gateway) if steps else Moves((), ())
    policy, binding = guard.guard_objects(cfg.source_namespace, cfg.target_namespace,
                                          handed_over=cfg.hand_over != "none")
    release = _release(cfg, live)
    crds = _crds(rendered, live, keep_live=keep_crds)
    if releases:
        crds = IstioCrdsArgs(crds=tuple(helm.owned_by_release(c, releases) for c in crds.crds), adopt=crds.adopt)
    default_tag = _default_tag(cfg, steps, live, target) if steps else None
    moving = _steps(cfg, topology, steps, found, (leaving, leaving_revision), target,
                    (renders.versions.migrated if migrated else renders.versions.legacy).version,
                    default_tag, objects, () if migrated else _live_canary(live)) if steps else None
    return Decisions(
        target=target, crds=crds,
        control_plane=ControlPlaneArgs(namespace=cfg.control_plane_namespace, revision=cfg.control_plane_revision,
                                       objects=tuple(objects), adopt=adopt, protect=migrated),
        gateway=gateway,
        steps=moving,
        # Not while canaryOnly holds the move before the switch: the guard refuses updates of the webhooks that
        # call the legacy istiod, which keeps their caBundle current while it still injects.
        guard=GuardArgs(policy=adoptable(policy), binding=adoptable(binding), target=target,
                        refused_probe=f"customresourcedefinition/{crds.crds[0]['metadata']['name']}")
        if migrated and not cfg.canary_only else None,
        lift_guard=TeardownArgs(objects=guard.OBJECTS[:1], target=target,
                                admitted_after=guard.lift_probe(cfg.source_namespace)) if rolling_back else None,
        release=release,
        default_tag=default_tag,
        retired=(RetiredRevisionArgs(revision=previous.revision, namespace=cfg.target_namespace,
                                     istiod_uid=previous.istiod_uid, target=target) if previous else None),
        helm_hand_over=(HelmHandOverArgs(refs=tuple(helm.object_refs([*crds.crds, *objects])), target=target)
                        if releases else None),
        outputs=stack_outputs(cfg, renders, live, target, rendered=rendered, topology=topology, leaving=leaving,
                              found=found, steps=moving, rolling_back=rolling_back, release=release,
                              releases=releases))


def _recording(obj: dict[str, Any], version_plan: VersionPlan) -> dict[str, Any]:
    """The new istiod's Deployment records the legacy istiod's image and image values (the way back and a re-run
    need them after the teardown), and after an upgrade, the revision and version it replaced."""
    if obj["kind"] != "Deployment" or version_plan.legacy_image is None:
        return obj
    values = json.dumps(dict(version_plan.legacy.values), sort_keys=True)
    previous = version_plan.previous
    return annotated(obj, {versions.RECORD_ANNOTATION: version_plan.legacy_image,
                           versions.RECORD_VALUES_ANNOTATION: values,
                           **({versions.PREVIOUS_REVISION_ANNOTATION: previous.revision,
                               versions.PREVIOUS_VERSION_ANNOTATION: previous.plane.version,
                               versions.PREVIOUS_ISTIOD_UID_ANNOTATION: previous.istiod_uid} if previous else {})})
