"""The guard (migration.guard's policy and binding) as a component."""

from __future__ import annotations

import pulumi

from components import PACKAGE
from components.objects import child_options, declare
from migration.args import GuardArgs


class Guard(pulumi.ComponentResource):
    """Declared after what it protects. Its objects are `protect`ed, like the plane: `pulumi destroy` of the
    migrated stack is refused before it deletes anything (it would leave the default injector calling no istiod)."""

    def __init__(self, name: str, args: GuardArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Guard", name, None, opts)
        policy = declare(name, args.policy, child_options(self, opts, protect=True))
        declare(name, args.binding, child_options(self, opts, depends_on=[policy], protect=True))
        self.register_outputs({"policy": args.policy["metadata"]["name"]})
