"""One Istio control plane (istiod, its config, RBAC and webhooks) in a namespace under a revision."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import pulumi

from components import PACKAGE
from components.objects import adoptable, assigned_fields, declare, object_id

# Dependency order: identities and permissions, then config, then the workload and its Service, then the webhooks
# that send API traffic to it (so no webhook ever points at an istiod that is not Available yet).
PHASES: tuple[tuple[str, ...], ...] = (
    ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
    ("ConfigMap", "Secret"),
    ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"),
    ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
)


def phase_of(obj: Mapping[str, Any]) -> int:
    for index, kinds in enumerate(PHASES):
        if obj["kind"] in kinds:
            return index
    raise ValueError(f"no deployment phase for {obj['kind']} {obj['metadata']['name']}; add it to PHASES")


@dataclasses.dataclass(frozen=True)
class ControlPlaneArgs:
    """A rendered control plane and where it goes."""

    namespace: str
    """The control plane's namespace (values.global.istioNamespace)."""
    revision: str
    """Its revision (`default` for the charm's install)."""
    objects: tuple[Mapping[str, Any], ...]
    """Rendered objects other than CRDs."""
    create_namespace: bool
    """Declare the namespace too (false where another owner, e.g. a Juju model, created it)."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Resources that must exist first (the CRDs)."""
    adopt: frozenset[tuple[str, str, str]] = frozenset()
    """(kind, namespace, name) of objects already on the cluster: imported (and taken over), not created."""
    mark: Callable[[dict[str, Any]], dict[str, Any]] = dict
    """Applied to every object before it is declared (the migrated stack labels its plane for the guard)."""
    protect: bool = False
    """Pulumi `protect` on every object: this stack refuses to delete or replace them (the migrated plane)."""


class IstioControlPlane(pulumi.ComponentResource):
    def __init__(self, name: str, args: ControlPlaneArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:istio:ControlPlane", name, None, opts)
        previous: list[pulumi.Resource] = list(args.depends_on)
        if args.create_namespace:
            namespace = declare(name, args.mark({"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": args.namespace}}),
                                pulumi.ResourceOptions(parent=self, depends_on=previous, protect=args.protect))
            previous = [namespace]
        self.resources: dict[str, pulumi.Resource] = {}
        for index in range(len(PHASES)):
            phase = [obj for obj in args.objects if phase_of(obj) == index]
            declared = [self._declare(name, args, obj, previous) for obj in phase]
            self.resources.update({f"{obj['kind']}/{obj['metadata']['name']}": res
                                   for obj, res in zip(phase, declared)})
            previous = declared or previous
        self.register_outputs({"namespace": args.namespace, "revision": args.revision,
                               "objects": sorted(self.resources)})

    def _declare(self, name: str, args: ControlPlaneArgs, obj: Mapping[str, Any],
                 previous: list[pulumi.Resource]) -> pulumi.Resource:
        meta = obj["metadata"]
        adopt = (obj["kind"], meta.get("namespace", ""), meta["name"]) in args.adopt
        marked = args.mark(dict(obj))
        return declare(name, adoptable(marked) if adopt else marked, pulumi.ResourceOptions(
            parent=self, depends_on=previous, import_=object_id(obj) if adopt else None, protect=args.protect,
            ignore_changes=assigned_fields(obj) if adopt else None))
