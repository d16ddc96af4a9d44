"""The migration plan: a pure function of the live mesh, the config and the rendered control planes.

It decides what the migrated stack adopts (CRDs, the default injector and validator), what it copies (the CA) and
what it removes afterwards (the rendered legacy control plane, except the webhooks it retargeted); which workloads
it restarts is migration.workloads'. It refuses, naming the object, whenever moving on could lose
user configuration or leave a namespace with two injectors or none. Everything it returns is stable across runs,
so a second `pulumi up` after a completed migration changes nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Mapping

from migration.analysis import errors
from migration.canary import without_canary
from migration.config import MigrationConfig
from migration.marks import PROTECTED_LABEL, made_here
from migration.live_mesh import CA_SECRET_NAMES, LiveMesh
from migration.webhooks import DEFAULT_VALIDATOR, called_service, matching_webhooks
from migration.workloads import Workload

DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


class PreflightRefused(RuntimeError):
    """The cluster is not in a state this program can migrate safely; nothing was changed."""


@dataclasses.dataclass(frozen=True)
class MigrationPlan:
    ca_secret: dict[str, Any] | None
    """The CA Secret to create beside the destination istiod (same data as the origin's); None if already there."""
    default_injector: dict[str, Any]
    """The live default-path injector, retargeted at the new istiod (declared over the live object)."""
    default_validator: dict[str, Any] | None
    """The live default validator retargeted the same way, if the install has one."""
    teardown: tuple[tuple[str, str, str], ...]
    """(kind, namespace, name) of the old control plane, removed once every sidecar uses the new istiod."""

    @property
    def switched(self) -> set[str]:
        """Names of the webhook configurations the switch declares (retargeted, never torn down)."""
        return webhook_names(self.default_injector, self.default_validator)


def webhook_names(injector: Mapping[str, Any], validator: Mapping[str, Any] | None) -> set[str]:
    return {injector["metadata"]["name"]} | ({validator["metadata"]["name"]} if validator else set())


def as_declared(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A live object reduced to what a declaration carries (no status, uid, resourceVersion, managedFields)."""
    meta = obj["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in DROPPED_ANNOTATIONS}
    clean = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
             "metadata": {"name": meta["name"], "labels": dict(meta.get("labels") or {})},
             "webhooks": copy.deepcopy(obj.get("webhooks") or [])}
    if annotations:
        clean["metadata"]["annotations"] = annotations
    return clean


NEVER_MATCH = {"matchLabels": {"istio.io/deactivated": "never-match"}}


def deactivated(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A revision's injector made to match nothing, as istioctl leaves it when a default tag does the injecting."""
    new = copy.deepcopy(dict(obj))
    for hook in new["webhooks"]:
        hook["namespaceSelector"], hook["objectSelector"] = dict(NEVER_MATCH), dict(NEVER_MATCH)
    return new


def retarget(obj: Mapping[str, Any], kind: str, namespace: str, service: str, revision: str) -> dict[str, Any]:
    """obj with every webhook sent to namespace/service and labelled for revision, so that the new istiod (not the
    old) keeps its caBundle current. One object, one API write: the switch has no in-between state."""
    new = as_declared(obj, kind)
    new["metadata"]["labels"]["istio.io/rev"] = revision
    for hook in new["webhooks"]:
        hook["clientConfig"]["service"]["namespace"] = namespace
        hook["clientConfig"]["service"]["name"] = service
    return new


def tag_injector_name(namespace: str, tag: str = "default") -> str:
    """The name Istio gives a revision tag's injector for a control plane in namespace (the istiod chart's
    revision-tags-mwc.yaml, which istioctl and Helm both render): `istioctl tag set`, `istioctl tag remove` and the
    chart's `revisionTags` find and update the tag's injector under this name."""
    return f"istio-revision-tag-{tag}" if namespace == "istio-system" else f"istio-revision-tag-{tag}-{namespace}"


def as_default_tag(injector: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The default injector under the default tag's name for a plane in namespace, labelled for that tag as
    istioctl labels it: the same webhooks, so creating it beside the one it replaces sends every pod to the same
    istiod with the same template."""
    renamed = copy.deepcopy(dict(injector))
    renamed["metadata"] = {**renamed["metadata"], "name": tag_injector_name(namespace),
                           "labels": {**(renamed["metadata"].get("labels") or {}), "istio.io/tag": "default"}}
    return renamed


def former_default_injector_names(source: str) -> tuple[str, str]:
    """Where the charm's install kept the default injector in source: its default tag's injector, or on installs
    without a tag the revision's own (the chart's names for istioNamespace=source)."""
    return tag_injector_name(source), f"istio-sidecar-injector-{source}"


def _same_webhooks(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two injectors that call the same istiod for the same pods (caBundles aside, which istiod keeps current)."""
    def hooks(obj):
        return [{k: v for k, v in h.items() if k != "clientConfig"} | {"service": called_service(h)}
                for h in obj.get("webhooks") or []]
    return hooks(a) == hooks(b)


def _renamed_pair(found: list[dict[str, Any]], cfg: MigrationConfig) -> bool:
    """Two default injectors that are one being renamed to the default tag's name in the target namespace (a
    hand-over cut off between creating the new name and deleting the former): the same webhooks, under exactly
    those two names."""
    names = {w["metadata"]["name"] for w in found}
    return (len(found) == 2 and _same_webhooks(*found) and tag_injector_name(cfg.target_namespace) in names
            and bool(names & set(former_default_injector_names(cfg.source_namespace))))


def default_injectors(live: LiveMesh) -> list[dict[str, Any]]:
    """The MutatingWebhookConfigurations on the default injection path (istio-injection=enabled), by name."""
    hits = {name for name, _ in matching_webhooks(live.mutating_webhooks, {"istio-injection": "enabled"})}
    return sorted((w for w in live.mutating_webhooks if w["metadata"]["name"] in hits),
                  key=lambda w: w["metadata"]["name"])


def default_injector_name(live: LiveMesh) -> str | None:
    """Name of the MutatingWebhookConfiguration on the default injection path, if any."""
    found = default_injectors(live)
    return found[0]["metadata"]["name"] if found else None


def default_injector_target(live: LiveMesh) -> tuple[str, str] | None:
    """(namespace, service) the default injection path sends pods to now; None on a cluster without Istio."""
    found = default_injectors(live)
    return called_service(found[0]["webhooks"][0]) if found else None


def default_path_switched(live: LiveMesh) -> bool:
    """This program switched the default injection path once (the injector carries the guard's label, which only
    the switch puts on a default injector), whichever istiod it sends pods to now."""
    return any(PROTECTED_LABEL in (w["metadata"].get("labels") or {}) for w in default_injectors(live))


def _default_injector(live: LiveMesh, cfg: MigrationConfig) -> dict[str, Any]:
    found = default_injectors(live)
    if _renamed_pair(found, cfg):
        return next(w for w in found if w["metadata"]["name"] == tag_injector_name(cfg.target_namespace))
    if len(found) != 1:
        raise PreflightRefused(
            f"expected exactly one MutatingWebhookConfiguration injecting namespaces labelled istio-injection=enabled,"
            f" found {[w['metadata']['name'] for w in found] or 'none'}; fix the injectors (istioctl analyze, IST0139)"
            f" before migrating")
    return found[0]


def _default_validator(live: LiveMesh) -> dict[str, Any] | None:
    defaults = [w for w in live.validating_webhooks if w["metadata"]["name"].startswith(DEFAULT_VALIDATOR)]
    return defaults[0] if defaults else None


def _refuse_unsafe(live: LiveMesh, cfg: MigrationConfig, new_service: str, retiring_service: str | None) -> None:
    if not live.serves_admission_policies:
        raise PreflightRefused(f"the cluster (Kubernetes {live.kubernetes_version or 'unknown'}) does not serve "
                               f"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes >= 1.30): the "
                               f"guard that keeps the old charm's hooks from deleting the migrated mesh needs it; "
                               f"upgrade the cluster first")
    if precheck_errors := errors(live.precheck):
        raise PreflightRefused(f"`istioctl x precheck -i {cfg.target_namespace}` found what would break an install "
                               f"there: {'; '.join(map(str, precheck_errors))}; fix it first")
    if cfg.source_namespace not in live.namespaces:
        raise PreflightRefused(f"source namespace {cfg.source_namespace} does not exist; set "
                               f"kf-istio-migrate:sourceNamespace to the namespace that runs istiod")
    if not live.crds:
        raise PreflightRefused("no Istio CRDs (*.istio.io) on the cluster: there is no mesh to migrate")
    serving = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in live.istiod_deployments}
    ours = {new_service, retiring_service} - {None}
    if not any(ns == cfg.source_namespace for ns, _ in serving) and \
            not any(ns == cfg.target_namespace and name in ours for ns, name in serving):
        raise PreflightRefused(f"no istiod Deployment in {cfg.source_namespace}; nothing to migrate from there")
    foreign = sorted(name for ns, name in serving if ns == cfg.target_namespace and name not in ours)
    if foreign:
        raise PreflightRefused(f"{cfg.target_namespace} already runs istiod Deployment(s) {foreign} that this "
                               f"program does not own; remove them or choose another targetNamespace")
    source_ca, target_ca = live.ca_secrets.get(cfg.source_namespace, {}), live.ca_secrets.get(cfg.target_namespace, {})
    for name, data in target_ca.items():
        if name in source_ca and data.get("ca-cert.pem") != source_ca[name].get("ca-cert.pem"):
            raise PreflightRefused(f"Secret {cfg.target_namespace}/{name} holds a different root certificate than "
                                   f"{cfg.source_namespace}/{name}: two roots would break mTLS between old and new "
                                   f"sidecars; delete it (the migration copies the source CA)")
    for ns, labels in sorted(live.namespaces.items()):
        hits = matching_webhooks(live.mutating_webhooks, labels)
        names = {name for name, _ in hits}
        if len(names) > 1 and not _renamed_pair([w for w in live.mutating_webhooks if w["metadata"]["name"] in names],
                                                cfg):
            raise PreflightRefused(f"namespace {ns} is already matched by several injectors {hits}; "
                                   f"fix that before migrating")


def _ca_secret(live: LiveMesh, origin: str, destination: str) -> dict[str, Any]:
    """A copy of origin's CA Secret (cacerts wins over istio-ca-secret) for destination."""
    source = live.ca_secrets.get(origin, {})
    name = next((n for n in CA_SECRET_NAMES if n in source), "istio-ca-secret")
    if name not in source:
        raise PreflightRefused(f"no CA Secret (cacerts or istio-ca-secret) in {origin}: the istiod in {destination} "
                               f"would mint a second root and break mTLS; let istiod create its CA first")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": destination},
              "data": dict(source[name])}
    if name == "istio-ca-secret":
        secret["type"] = "istio.io/ca-root"
    return secret


def _switch(live: LiveMesh, cfg: MigrationConfig, namespace: str, service: str, revision: str,
            teardown_objects: list[dict[str, Any]], extra_teardown: tuple[tuple[str, str, str], ...],
            ca_secret: dict[str, Any] | None) -> MigrationPlan:
    """Send the default injection path and validation to namespace/service, restart, then tear the rest down."""
    # Never a canary's webhooks (live.fold removes them in the switch's write).
    injector = retarget(without_canary(_default_injector(live, cfg)), "MutatingWebhookConfiguration", namespace,
                        service, revision)
    validator = _default_validator(live)
    if validator is not None:
        validator = retarget(validator, "ValidatingWebhookConfiguration", namespace, service, revision)
    switched = webhook_names(injector, validator)
    teardown = extra_teardown + tuple(sorted(
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in teardown_objects
        if o["kind"] != "CustomResourceDefinition" and o["metadata"]["name"] not in switched))
    return MigrationPlan(
        ca_secret=ca_secret, default_injector=injector, default_validator=validator, teardown=teardown)


TAG_SERVICE = "istiod-revision-tag-default"
"""The Service `istioctl install` creates beside istiod for the default tag (not in the rendered manifest). Always
in the teardown (deleting a missing object is a no-op), so the teardown is the same before and after the move."""


def plan(live: LiveMesh, cfg: MigrationConfig, legacy_objects: list[dict[str, Any]], new_service: str,
         retiring_service: str | None = None) -> MigrationPlan:
    """Plan the move of cfg.source_namespace's control plane to cfg.target_namespace (service new_service), or the
    upgrade of the moved plane to it from the revision whose istiod is retiring_service. The legacy objects are
    the teardown's either way (deleting what is gone is a no-op): the same step on every run."""
    _refuse_unsafe(live, cfg, new_service, retiring_service)
    return _switch(live, cfg, cfg.target_namespace, new_service, cfg.revision, legacy_objects,
                   (("Service", cfg.source_namespace, TAG_SERVICE),),
                   _ca_secret(live, cfg.source_namespace, cfg.target_namespace))


def rollback_plan(live: LiveMesh, cfg: MigrationConfig, migrated_objects: list[dict[str, Any]],
                  legacy_service: str, guard: tuple[tuple[str, str, str], ...]) -> MigrationPlan:
    """Plan the way back: the default path returns to the legacy istiod, then the migrated plane (its guard
    binding first, so the protected objects can go) is removed. CRDs and CRs stay, as always.

    The same plan once the way back is done (the legacy stack's later runs): the target namespace's CA Secrets are
    removed under both names (deleting a missing one is a no-op), and a CA the way back copied into the source
    namespace stays declared (it carries MADE_HERE): dropping it would delete the root of trust."""
    if not live.crds:
        raise PreflightRefused("no Istio CRDs (*.istio.io) on the cluster: there is no mesh to roll back")
    source = live.ca_secrets.get(cfg.source_namespace, {})
    ca_secret = None
    if live.ca_secrets.get(cfg.target_namespace):  # none if the migration stopped before copying the CA
        copied = _ca_secret(live, cfg.target_namespace, cfg.source_namespace)
        same = source.get(copied["metadata"]["name"], {}).get("ca-cert.pem") == copied["data"].get("ca-cert.pem")
        if source and not same:
            raise PreflightRefused(f"the CA in {cfg.source_namespace} differs from {cfg.target_namespace}'s: rolling "
                                   f"back would split the root of trust; restore {cfg.source_namespace}'s CA Secret")
        ca_secret = None if same else copied
    if ca_secret is None and any(("Secret", cfg.source_namespace, name) in live.made_here for name in source):
        ca_secret = _ca_secret(live, cfg.source_namespace, cfg.source_namespace)
    target_cas = tuple({"kind": "Secret", "metadata": {"namespace": cfg.target_namespace, "name": name}}
                       for name in CA_SECRET_NAMES)
    return _switch(live, cfg, cfg.source_namespace, legacy_service, "default", [*migrated_objects, *target_cas], guard,
                   made_here(ca_secret) if ca_secret else None)


def rollout_batches(workloads: tuple[Workload, ...], strategy: str) -> tuple[tuple[Workload, ...], ...]:
    """The workloads of each restart command: all of them (`wave`), one namespace each (`namespaces`,
    `one-namespace-at-a-time`) or one workload each (`workloads`)."""
    if strategy == "wave":
        return (workloads,) if workloads else ()
    if strategy == "workloads":
        return tuple((w,) for w in workloads)
    batches: dict[str, list[Workload]] = {}
    for workload in workloads:
        batches.setdefault(workload.namespace, []).append(workload)
    return tuple(tuple(batch) for batch in batches.values())
