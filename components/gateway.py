"""The ingress gateway as the istio-gateway charm deploys it (objects from migration.gateway)."""

from __future__ import annotations

import json
import shlex

import pulumi

from components import PACKAGE
from components.commands import step
from components.objects import child_options, declare, object_id
from migration.args import GatewayArgs
from migration.marks import PURGE_SELECTOR_LABEL
from migration.live_mesh import ObjectId
from migration.live_mesh import object_id as id_of
from migration.owners import fields_owned_elsewhere
from migration.target import KubeTarget


def unlabel_pods_script(deployment: ObjectId, target: KubeTarget) -> str:
    """kubectl patch taking the purge label off deployment's pod template (idempotent: null removes, or no-op)."""
    _, namespace, name = deployment
    patch = {"spec": {"template": {"metadata": {"labels": {PURGE_SELECTOR_LABEL: None}}}}}
    return (f"{target.kubectl()} -n {shlex.quote(namespace)} patch deployment {shlex.quote(name)} "
            f"--type=strategic -p {shlex.quote(json.dumps(patch))}")


class IngressGateway(pulumi.ComponentResource):
    def __init__(self, name: str, args: GatewayArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:kubeflow:IngressGateway", name, None, opts)
        first = [step(f"{name}-unlabel-pods-{d[2]}", unlabel_pods_script(d, args.target), ["/".join(d)],
                      args.target, child_options(self, opts)) for d in args.purge_proof]
        self.resources = {}
        for obj in args.objects:
            if args.patches:  # retained: removing the patch must not hand the charm's fields back half-empty
                options = child_options(self, opts, depends_on=first, retain_on_delete=True)
            else:
                # The Gateway custom resource is user config (every VirtualService names it): never deleted by this
                # program, also when a stack stops declaring it.
                adopt = id_of(dict(obj)) in args.adopt
                options = child_options(self, opts, import_=object_id(obj) if adopt else None,
                                        ignore_changes=fields_owned_elsewhere(obj) or None,
                                        retain_on_delete=obj["kind"] == "Gateway")
            self.resources[f"{obj['kind']}/{obj['metadata']['name']}"] = declare(name, obj, options,
                                                                               patch=args.patches)
        self.register_outputs({"istiodAddress": args.istiod_address, "objects": sorted(self.resources)})
