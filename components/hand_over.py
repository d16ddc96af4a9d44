"""The hand-over (handOver: release or helm): the stack lets go of everything it declares, and the cluster keeps it
exactly as it is."""

from __future__ import annotations

import pulumi

from components import PACKAGE, REPO
from components.checks import teardown_script
from components.commands import step
from components.guard import Guard
from components.objects import child_options, declare
from live import cli
from migration.args import DefaultTagArgs, HelmHandOverArgs, ReleaseArgs


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


def hand_over_script(args: HelmHandOverArgs) -> str:
    return cli.Disown.on(args.target, refs=args.refs).command_line()


class HelmHandOver(pulumi.ComponentResource):
    """After the stack has applied the charts' objects as their releases render them: one step ends the field
    ownership of the stack and of istioctl on them (live.disown), so Helm's first install and every later upgrade
    own what they render without a conflict. It runs once; the objects it touched are not applied again by this
    stack (the next step is `pulumi destroy`)."""

    def __init__(self, name: str, args: HelmHandOverArgs, opts: pulumi.ResourceOptions | None = None):
        # A type token is part of the URN on existing stacks: it stays as first declared.
        super().__init__(f"{PACKAGE}:release:HelmHandOver", name, None, opts)
        # From the repository, as every live step: a fleet's project directory is elsewhere.
        self.command = step(name, hand_over_script(args), list(args.refs), args.target, child_options(self, opts),
                            directory=str(REPO))
        self.register_outputs({"disowned": len(args.refs)})


class DefaultTag(pulumi.ComponentResource):
    """The moved default injector under the default tag's name in the target namespace, then one step deleting its
    former names. Created as a copy of the one it replaces (the same webhooks, calling the same istiod), so for the
    moment both exist a pod passes both and Istio's injection, which removes what it injected before injecting
    again, gives it one sidecar (docs/design.md, "The default tag's name"). Declared after the guard: the former
    injector is protected, and the guard lets the stack's own identity delete it only once it is handed over.
    Retained on delete, as the switch's webhooks."""

    def __init__(self, name: str, args: DefaultTagArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:release:DefaultTag", name, None, opts)
        injector = declare(name, args.injector, child_options(
            self, opts, retain_on_delete=True, import_=args.injector["metadata"]["name"] if args.exists else None))
        self.command = step(f"{name}-retire", teardown_script(args.retire.target, args.retire.objects),
                            [f"{k}/{ns}/{n}" for k, ns, n in args.retire.objects], args.retire.target,
                            child_options(self, opts, depends_on=[injector]))
        self.register_outputs({"injector": args.injector["metadata"]["name"]})
