"""The Istio CRD set: cluster-scoped, never deleted by this program in any stack."""

from __future__ import annotations

import pulumi

from components import PACKAGE
from components.objects import child_options, declare
from migration.args import IstioCrdsArgs


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
