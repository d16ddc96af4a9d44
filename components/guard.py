"""The guard (migration.guard's policy and binding) as a component."""

from __future__ import annotations

import pulumi

from components import PACKAGE
from components.checks import refused_script
from components.commands import step
from components.objects import child_options, declare
from migration import guard
from migration.args import GuardArgs


class Guard(pulumi.ComponentResource):
    """Declared after what it protects. Its objects are `protect`ed, like the plane: `pulumi destroy` of the
    migrated stack is refused before it deletes anything (it would leave the default injector calling no istiod)."""

    def __init__(self, name: str, args: GuardArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Guard", name, None, opts)
        policy = declare(name, args.policy, child_options(self, opts, protect=True))
        binding = declare(name, args.binding, child_options(self, opts, depends_on=[policy], protect=True))
        # The update ends only once the guard refuses: admission loads a new binding a moment after it is written,
        # and a deletion in that moment (the old charm's purge right after `pulumi up`) would pass.
        step(f"{name}-enforced", refused_script(args.target, args.refused_probe, guard.REFUSAL), [args.refused_probe],
             args.target, child_options(self, opts, depends_on=[binding], protect=True))
        self.register_outputs({"policy": args.policy["metadata"]["name"]})
