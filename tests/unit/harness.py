"""The program's declare step under Pulumi mocks, fed plain data: every resource registration captured as the
engine would receive it. Nothing is monkeypatched: the test hands decide its inputs and declare its result."""

from __future__ import annotations

import dataclasses
import json
import runpy
from typing import Any

import pulumi
from pulumi.runtime import rpc, settings

from devcluster.toolchain import REPO
from migration import config as config_module
from migration.decide import decide
from migration.live_mesh import LiveMesh
from migration.target import KubeTarget
from tests.fixtures import recorded

PROGRAM = runpy.run_path(str(REPO / "__main__.py"), run_name="kfistio_program")  # defines, declares nothing
TARGET = KubeTarget(kubeconfig="/unit-tests/kubeconfig", context="unit-tests", server="https://unit.tests:6443")


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
    ignore_changes: tuple[str, ...]
    dependencies: tuple[str, ...]
    provider: str
    inputs: dict[str, Any]
    aliases: tuple[tuple[str, str], ...] = ()
    """(name, parent URN) of each alias: the names this resource had under another parent."""

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def namespace(self) -> str:
        return self.inputs.get("metadata", {}).get("namespace", "")

    @property
    def object_name(self) -> str:
        return self.inputs.get("metadata", {}).get("name", "")


def run_program(stack: str, config: dict[str, Any], live: LiveMesh, registered: list[Registered] | None = None,
                ) -> list[Registered]:
    """Load stack's config (values JSON-encoded unless strings) as the program does, decide with the recorded
    renders and `live`, and declare under mocks; return the registrations (also appended to `registered` as they
    happen, so a caller still sees them if the program raises)."""
    pulumi.runtime.set_mocks(Mocks(), project=config_module.PROJECT, stack=stack, preview=False)
    monitor = settings.get_monitor()
    registered = [] if registered is None else registered
    register = monitor.RegisterResource

    def capture(request):
        response = register(request)
        if request.type != "pulumi:pulumi:Stack":
            registered.append(Registered(
                type=request.type, name=request.name, urn=response.urn, parent=request.parent,
                custom=request.custom, import_id=request.importId, retain_on_delete=request.retainOnDelete,
                protect=request.protect, ignore_changes=tuple(request.ignoreChanges),
                dependencies=tuple(request.dependencies), provider=request.provider,
                aliases=tuple((a.spec.name, a.spec.parentUrn) for a in request.aliases),
                inputs=rpc.deserialize_properties(request.object) if request.custom else {}))
        return response

    monitor.RegisterResource = capture
    pulumi.runtime.set_all_config({f"{config_module.PROJECT}:{key}": value if isinstance(value, str)
                                   else json.dumps(value) for key, value in config.items()})

    @pulumi.runtime.test
    def program():
        cfg = config_module.load()
        PROGRAM["declare"](decide(cfg, recorded.renders(cfg), live, TARGET))

    program()
    return registered
