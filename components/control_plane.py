"""One Istio control plane (istiod, its config, RBAC and webhooks) in a namespace under a revision."""

from __future__ import annotations

from typing import Any, Mapping

import pulumi

from components import PACKAGE
from components.objects import child_options, declare, object_id
from migration.args import ControlPlaneArgs
from migration.live_mesh import object_id as id_of
from migration.owners import fields_owned_elsewhere

# Dependency order: the namespace; identities, permissions and config together (a binding may name an account or a
# role not created yet, and every phase costs the update one more round trip); then the workload, which needs all of
# them (its pods their account, istiod its mesh config and the copied CA before it starts), and its Service; then the
# webhooks that send API traffic to it (so no webhook ever points at an istiod that is not Available yet).
PHASES: tuple[tuple[str, ...], ...] = (
    ("Namespace",),
    ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Secret"),
    ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"),
    ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
)


SHARED_BY_REVISIONS = ("Namespace", "Secret")
"""What every revision of a plane shares: the namespace and the root of trust's Secret (ControlPlaneArgs.protect)."""


def phase_of(obj: Mapping[str, Any]) -> int:
    for index, kinds in enumerate(PHASES):
        if obj["kind"] in kinds:
            return index
    raise ValueError(f"no deployment phase for {obj['kind']} {obj['metadata']['name']}; add it to PHASES")


class IstioControlPlane(pulumi.ComponentResource):
    def __init__(self, name: str, args: ControlPlaneArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:istio:ControlPlane", name, None, opts)
        self.prefix = name
        """What its children's names start with (components.objects.resource_name)."""
        previous: list[pulumi.Resource] = []
        self.resources: dict[str, pulumi.Resource] = {}
        self.istiod_prerequisites: list[pulumi.Resource] = []
        """What istiod's Deployment waits for: once these are done, the update waits on istiod's pods for a while."""
        for index in range(len(PHASES)):
            if "Deployment" in PHASES[index]:
                self.istiod_prerequisites = list(previous)
            phase = [obj for obj in args.objects if phase_of(obj) == index]
            declared = [self._declare(name, args, obj, previous, opts) for obj in phase]
            self.resources.update({f"{obj['kind']}/{obj['metadata']['name']}": res
                                   for obj, res in zip(phase, declared)})
            previous = declared or previous
        self.register_outputs({"namespace": args.namespace, "revision": args.revision,
                               "objects": sorted(self.resources)})

    def _declare(self, name: str, args: ControlPlaneArgs, obj: Mapping[str, Any], previous: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None) -> pulumi.Resource:
        adopt = id_of(dict(obj)) in args.adopt
        if obj["kind"] == "Secret":  # the CA's private key: encrypted in the state
            obj = dict(obj, data=pulumi.Output.secret(obj["data"]))
        return declare(name, obj, child_options(
            self, opts, depends_on=previous, import_=object_id(obj) if adopt else None,
            protect=args.protect and obj["kind"] in SHARED_BY_REVISIONS,
            ignore_changes=fields_owned_elsewhere(obj) or None))
