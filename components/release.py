"""The release: the stack lets go of everything it declares, and the cluster keeps it exactly as it is."""

from __future__ import annotations

import pulumi

from components.guard import Guard
from migration.args import ReleaseArgs


def let_go(args: ReleaseArgs):
    """A transform for every resource of the stack: retained on delete and no longer protected, so that `pulumi
    destroy` then removes each from the state without a call to the cluster (no provider Delete, no Command's delete
    script runs). The guard's policy and binding, unless the operator keeps them, are the one thing destroy deletes.
    Options only: the `pulumi up` that applies it writes nothing on the cluster."""

    def transform(resource: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
        goes = not args.keep_guard and isinstance(resource.opts.parent, Guard)
        released = pulumi.ResourceOptions(protect=False, retain_on_delete=not goes)
        return pulumi.ResourceTransformResult(resource.props, pulumi.ResourceOptions.merge(resource.opts, released))

    return transform
