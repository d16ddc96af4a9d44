"""The canary phase as components: the chosen namespaces move first and are proven on the live mesh before the
default injector is switched (Canary); on the way back, every namespace an earlier release's canary relabelled
returns to the default injection path (CanaryPutBack). Each is one Command running live.canary against the stack's
cluster."""

from __future__ import annotations

import json

import pulumi

from components import PACKAGE, REPO
from components.commands import step
from components.objects import child_options
from components.rollouts import rollout_plan, wave_key
from live import cli
from migration.args import CanaryArgs, PutBackArgs


def canary_script(args: CanaryArgs) -> str:
    check = args.check
    wave = wave_key(check.target, check.leaving, check.istiod_address)
    return cli.Canary.on(check.target, istiod=check.istiod_address, leaving=check.leaving,
                         revision=check.revisions[0], leaving_revision=check.revisions[1], injector=args.injector,
                         namespaces=args.namespaces,
                         soak=args.soak_seconds, timeout=check.timeout_seconds, limit=args.parallelism, wave=wave,
                         istioctl_version=check.istioctl_version, istioctl=check.istioctl).command_line()


def put_back_script(args: PutBackArgs) -> str:
    return cli.Canary.on(args.target, put_back=True, revision=args.revision).command_line()


class Canary(pulumi.ComponentResource):
    """Moves canaryNamespaces to the destination plane and proves them (live.canary); a failed canary is put back
    and fails the update, so nothing after it (the switch of the default injector) runs. It runs again only if the
    namespaces or the destination change: a later `pulumi up` (canaryOnly unset) does not move them again."""

    def __init__(self, name: str, args: CanaryArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Canary", name, None, opts)
        self.command = step(name, canary_script(args), [args.check.istiod_address, *args.namespaces],
                            args.check.target, child_options(self, opts), directory=str(REPO),
                            stdin=json.dumps(rollout_plan(args.workloads), indent=1, sort_keys=True))
        self.register_outputs({"namespaces": list(args.namespaces)})


class CanaryPutBack(pulumi.ComponentResource):
    """The way back: namespaces an earlier release's canary relabelled to the migrated plane's revision return to
    the default injection path before the workloads move (once that plane is torn down, its revision injects
    nothing)."""

    def __init__(self, name: str, args: PutBackArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:CanaryPutBack", name, None, opts)
        self.command = step(name, put_back_script(args), [args.revision], args.target, child_options(self, opts),
                            directory=str(REPO))
        self.register_outputs({"revision": args.revision})
