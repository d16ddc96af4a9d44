"""Move every workload in the mesh after the webhook switch, so the destination istiod re-injects it: restart the
ones nothing else controls, evict the pods of the rest, and apply the unmanagedPods policy to pods no workload
covers (migration.workloads decides which is which)."""

from __future__ import annotations

import json
from typing import Sequence

import pulumi

from components import PACKAGE, REPO
from components.commands import step
from components.objects import child_options
from live import cli
from migration.args import RolloutsArgs, UnmanagedPodsArgs
from migration.target import KubeTarget
from migration.workloads import Workload


def wave_key(target: KubeTarget, leaving: str, istiod: str) -> str:
    """The wave a moving command's slots belong to: named after the cluster and the move, so only this migration's
    commands share them."""
    return f"{target.server}|{leaving}->{istiod}"


def rollout_script(args: RolloutsArgs) -> str:
    """live.rollout within the wave's bound. Which workloads is the command's standard input (rollout_plan)."""
    wave = wave_key(args.target, args.leaving, args.istiod_address)
    return cli.Rollout.on(args.target, wave=wave, limit=args.parallelism, leaving=args.leaving,
                          istiod=args.istiod_address, timeout=args.timeout_seconds).command_line()


def unmanaged_pods_script(args: UnmanagedPodsArgs) -> str:
    return cli.Evict.on(args.target, leaving=args.leaving, istiod=args.istiod_address, timeout=args.timeout_seconds,
                        unmanaged=args.policy).command_line()


def rollout_plan(batch: Sequence[Workload]) -> dict[str, dict[str, list[str]]]:
    """live.rollout's PLAN: namespace -> the workloads restarted and those whose pods are evicted."""
    plan: dict[str, dict[str, list[str]]] = {}
    for w in batch:
        moves = plan.setdefault(w.namespace, {"restart": [], "evict": []})
        moves["evict" if w.evict_because else "restart"].append(w.ref)
    return plan


def command_name(name: str, strategy: str, batch: Sequence[Workload]) -> str:
    first = batch[0]
    if strategy == "wave":
        return f"{name}-wave"
    return f"{name}-{first.namespace}" + (f"-{first.kind.lower()}-{first.name}" if strategy == "workloads" else "")


class Rollouts(pulumi.ComponentResource):
    """One Command per batch: by default one for every workload in the mesh (rolloutStrategy=wave), so the engine's
    `--parallel` (steps at once, 4 x CPUs by default) never caps the wave; its standard input names each workload
    (shown by `pulumi preview --diff`). All start as soon as the switch is done, bounded in workloads by the
    slots, or one after the other (one-namespace-at-a-time)."""

    def __init__(self, name: str, args: RolloutsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Rollouts", name, None, opts)
        self.commands = []
        script = rollout_script(args)
        for batch in args.batches:
            previous = self.commands[-1:] if args.strategy == "one-namespace-at-a-time" else []
            self.commands.append(step(
                command_name(name, args.strategy, batch), script,
                [args.istiod_address, *(f"{w.namespace}/{w.ref}" for w in batch)], args.target,
                child_options(self, opts, depends_on=previous), directory=str(REPO),
                stdin=json.dumps(rollout_plan(batch), indent=1, sort_keys=True)))
        moved = rollout_plan([w for batch in args.batches for w in batch])
        self.register_outputs({"commands": len(self.commands), "workloads": moved})


class UnmanagedPods(pulumi.ComponentResource):
    """Running pods on the plane being left that no workload restarts (bare pods, Job pods, Argo steps): waits for
    them to finish, or evicts them. Which pods is decided when it runs, so a re-run after the move does nothing."""

    def __init__(self, name: str, args: UnmanagedPodsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:UnmanagedPods", name, None, opts)
        self.command = step(name, unmanaged_pods_script(args), [args.istiod_address, args.policy], args.target,
                            child_options(self, opts), directory=str(REPO))
        self.register_outputs({"policy": args.policy})
