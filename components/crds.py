"""The Istio CRD set: cluster-scoped, never deleted by this program in any stack."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Mapping

import pulumi

from components import PACKAGE
from components.objects import adoptable, declare


@dataclasses.dataclass(frozen=True)
class IstioCrdsArgs:
    """Which CRDs exist and how this stack comes to own them."""

    crds: tuple[Mapping[str, Any], ...]
    """The CRDs rendered by the pinned istioctl."""
    adopt: frozenset[str]
    """Names of the CRDs to import (those already on the cluster); the others are created."""
    live_metadata: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """CRD name -> {labels, annotations} seen on the cluster; kept on update, because pulumi-kubernetes replaces
    CRDs whole and would otherwise drop what others (helm, the charm, kubectl) put there."""


def with_live_metadata(crd: Mapping[str, Any], live: Mapping[str, Any] | None) -> dict[str, Any]:
    """crd with the live labels and annotations merged under the rendered ones (rendered wins on conflict)."""
    merged = copy.deepcopy(dict(crd))
    if not live:
        return merged
    meta = merged["metadata"]
    for field in ("labels", "annotations"):
        values = {**live.get(field, {}), **meta.get(field, {})}
        if values:
            meta[field] = values
    return merged


class IstioCrds(pulumi.ComponentResource):
    def __init__(self, name: str, args: IstioCrdsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:istio:Crds", name, None, opts)
        self.crds = {}
        for crd in args.crds:
            crd_name = crd["metadata"]["name"]
            declared = with_live_metadata(crd, args.live_metadata.get(crd_name))
            adopt = crd_name in args.adopt
            self.crds[crd_name] = declare(name, adoptable(declared) if adopt else declared,
                                          pulumi.ResourceOptions(parent=self, retain_on_delete=True,
                                                                 import_=crd_name if adopt else None))
        self.register_outputs({"names": sorted(self.crds)})
