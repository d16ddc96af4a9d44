"""The ingress gateway as the istio-gateway charm deploys it (objects from migration.gateway)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import pulumi

from components import PACKAGE
from components.objects import assigned_fields, child_options, declare, object_id
from migration.mesh import ObjectId
from migration.mesh import object_id as id_of


@dataclasses.dataclass(frozen=True)
class GatewayArgs:
    objects: tuple[Mapping[str, Any], ...]
    """The gateway's objects as declared (migration.gateway, marked by migration.decide)."""
    adopt: frozenset[ObjectId] = frozenset()
    """Objects already on the cluster: imported (the migrated stack takes over what the charm or legacy stack made)."""
    istiod_address: str = ""
    """The istiod the gateway talks to (an output of the component)."""


class IngressGateway(pulumi.ComponentResource):
    def __init__(self, name: str, args: GatewayArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:kubeflow:IngressGateway", name, None, opts)
        self.resources = {}
        for obj in args.objects:
            adopt = id_of(dict(obj)) in args.adopt
            self.resources[f"{obj['kind']}/{obj['metadata']['name']}"] = declare(
                name, obj, child_options(self, opts, import_=object_id(obj) if adopt else None,
                                         ignore_changes=assigned_fields(obj) if adopt else None))
        self.register_outputs({"istiodAddress": args.istiod_address, "objects": sorted(self.resources)})
