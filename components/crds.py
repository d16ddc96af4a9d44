"""The Istio CRD set: cluster-scoped, never deleted by this program in any stack."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import pulumi

from components import PACKAGE
from components.objects import child_options, declare


@dataclasses.dataclass(frozen=True)
class IstioCrdsArgs:
    """Which CRDs exist and how this stack comes to own them."""

    crds: tuple[Mapping[str, Any], ...]
    """The CRDs as declared: rendered, with the live labels and annotations merged in (migration.decide)."""
    adopt: frozenset[str]
    """Names of the CRDs to import (those already on the cluster); the others are created."""
    as_they_stand: frozenset[str] = frozenset()
    """Names of the adopted CRDs declared exactly as they are on the cluster: importing them writes nothing there."""

    @property
    def change_the_cluster(self) -> bool:
        """Some CRD is created or gets a new schema, which the control plane must wait for."""
        return {c["metadata"]["name"] for c in self.crds} != self.as_they_stand


class IstioCrds(pulumi.ComponentResource):
    """Every CRD is retained on delete: removing it from the program or destroying the stack leaves it (and so every
    custom resource of its kind) on the cluster."""

    def __init__(self, name: str, args: IstioCrdsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:istio:Crds", name, None, opts)
        self.crds = {}
        for crd in args.crds:
            crd_name = crd["metadata"]["name"]
            self.crds[crd_name] = declare(name, crd, child_options(
                self, opts, retain_on_delete=True, import_=crd_name if crd_name in args.adopt else None))
        self.register_outputs({"names": sorted(self.crds)})
