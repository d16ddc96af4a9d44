"""Run __main__.py under Pulumi mocks and capture every resource registration as the engine would receive it."""

from __future__ import annotations

import dataclasses
import json
import runpy
from typing import Any

import pulumi
from pulumi.runtime import rpc, settings

from devcluster.toolchain import REPO
from migration.config import PROJECT


def _no_cluster(*_):
    raise AssertionError("this test gave run_program no recorded LiveMesh, but the program read the cluster")


def _exists(live, obj) -> bool:
    """What a recorded LiveMesh says exists: its CRDs, webhooks and istiod Deployments."""
    name = obj["metadata"]["name"]
    if obj["kind"] == "CustomResourceDefinition":
        return name in live.crds
    if obj["kind"].endswith("WebhookConfiguration"):
        return any(w["metadata"]["name"] == name for w in live.mutating_webhooks + live.validating_webhooks)
    return any(d["metadata"]["name"] == name and d["metadata"].get("namespace") == obj["metadata"].get("namespace")
               for d in live.istiod_deployments) and obj["kind"] == "Deployment"


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return [args.resource_id or f"{args.name}-id", args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


@dataclasses.dataclass(frozen=True)
class Registered:
    """One RegisterResource request: what the engine would create, adopt or retain."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    import_id: str
    retain_on_delete: bool
    protect: bool
    dependencies: tuple[str, ...]
    inputs: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def namespace(self) -> str:
        return self.inputs.get("metadata", {}).get("namespace", "")

    @property
    def object_name(self) -> str:
        return self.inputs.get("metadata", {}).get("name", "")


def run_program(stack: str, config: dict[str, Any], registered: list[Registered] | None = None,
                live=None) -> list[Registered]:
    """Run the program for stack with config (values JSON-encoded unless strings); return its registrations.

    Registrations are also appended to `registered` as they happen, so a caller still sees them if the program
    raises. `live` (a migration.discovery.LiveMesh) stands in for the cluster that preflight reads."""
    from migration import discovery
    discovery.read = (lambda *_: live) if live is not None else _no_cluster
    discovery.existing = lambda objects: {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
                                          for o in objects if live is not None and _exists(live, o)}
    pulumi.runtime.set_mocks(Mocks(), project=PROJECT, stack=stack, preview=False)
    monitor = settings.get_monitor()
    registered = [] if registered is None else registered
    register = monitor.RegisterResource

    def capture(request):
        response = register(request)
        if request.type != "pulumi:pulumi:Stack":
            registered.append(Registered(
                type=request.type, name=request.name, urn=response.urn, parent=request.parent,
                custom=request.custom, import_id=request.importId, retain_on_delete=request.retainOnDelete,
                protect=request.protect,
                dependencies=tuple(request.dependencies),
                inputs=rpc.deserialize_properties(request.object) if request.custom else {}))
        return response

    monitor.RegisterResource = capture
    pulumi.runtime.set_all_config({f"{PROJECT}:{key}": value if isinstance(value, str) else json.dumps(value)
                                   for key, value in config.items()})

    @pulumi.runtime.test
    def program():
        runpy.run_path(str(REPO / "__main__.py"), run_name="__main__")

    program()
    return registered
