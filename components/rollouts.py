"""Move every workload in the mesh after the webhook switch, so the destination istiod re-injects it: restart the
ones nothing else controls, evict the pods of the rest, and apply the unmanagedPods policy to pods no workload
covers (migration.workloads decides which is which)."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from typing import Sequence

import pulumi

from components import PACKAGE, REPO
from components.commands import step
from components.objects import child_options
from migration.target import KubeTarget
from migration.workloads import Workload


@dataclasses.dataclass(frozen=True)
class RolloutsArgs:
    batches: tuple[tuple[Workload, ...], ...]
    """The workloads of each command (migration.plan.rollout_batches)."""
    per_workload: bool
    """Commands are named after their one workload (rolloutStrategy=workloads), else after the namespace."""
    sequential: bool
    """Each command waits for the one before (rolloutStrategy=one-namespace-at-a-time); else all start at once."""
    parallelism: int
    """At most this many workloads move at once, over every command (a slot each: live.slots)."""
    timeout_seconds: int
    """Limit for each workload's rollout, and for each evicted pod's replacement to become Ready."""
    istiod_address: str
    """The destination istiod; part of every trigger, so a re-run restarts only when the target changes."""
    leaving: str
    """The istiod address of the plane being left: only workloads with pods still on it are moved."""
    target: KubeTarget


def live_command(module: str, target: KubeTarget, *args: str) -> str:
    """`python -m live.<module>` against target (run from the repository, in this program's interpreter)."""
    return shlex.join([sys.executable, "-m", f"live.{module}", "--kubeconfig", target.kubeconfig,
                       "--context", target.context, *args])


def rollout_script(args: RolloutsArgs, batch: Sequence[Workload]) -> str:
    """Move the batch (one namespace's workloads) within the wave's bound: restart the uncontrolled ones, evict the
    others' pods (live.rollout). The wave is named after the cluster and the move, so only this migration's
    commands share its slots."""
    wave = f"{args.target.server}|{args.leaving}->{args.istiod_address}"
    evicted = [f"--evict={w.ref}" for w in batch if w.evict_because]
    return live_command("rollout", args.target, "--namespace", batch[0].namespace, "--wave", wave,
                        "--limit", str(args.parallelism), "--leaving", args.leaving, "--istiod", args.istiod_address,
                        "--timeout", str(args.timeout_seconds), *evicted,
                        *(w.ref for w in batch if not w.evict_because))


class Rollouts(pulumi.ComponentResource):
    """One Command per batch. All start as soon as the switch is done (one wave, bounded in workloads by the
    slots), or one after the other when sequential. The engine runs at most `--parallel` steps at once (default
    4 x CPUs), so that also caps how many commands can hold slots: runbook step 4."""

    def __init__(self, name: str, args: RolloutsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Rollouts", name, None, opts)
        self.commands = []
        for batch in args.batches:
            previous = self.commands[-1:] if args.sequential else []
            first = batch[0]
            self.commands.append(step(
                f"{name}-{first.namespace}" + (f"-{first.kind.lower()}-{first.name}" if args.per_workload else ""),
                rollout_script(args, batch), [args.istiod_address, first.namespace, *(w.ref for w in batch)],
                args.target, child_options(self, opts, depends_on=previous), directory=str(REPO)))
        self.register_outputs({"commands": len(self.commands),
                               "workloads": sum(len(batch) for batch in args.batches)})


@dataclasses.dataclass(frozen=True)
class UnmanagedPodsArgs:
    policy: str
    """`wait` or `evict` (`fail` never gets here: decide refuses first)."""
    timeout_seconds: int
    istiod_address: str
    leaving: str
    target: KubeTarget


class UnmanagedPods(pulumi.ComponentResource):
    """Running pods on the plane being left that no workload restarts (bare pods, Job pods, Argo steps): waits for
    them to finish, or evicts them. Which pods is decided when it runs, so a re-run after the move does nothing."""

    def __init__(self, name: str, args: UnmanagedPodsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:UnmanagedPods", name, None, opts)
        script = live_command("evict", args.target, "--leaving", args.leaving, "--istiod", args.istiod_address,
                              "--timeout", str(args.timeout_seconds), "--unmanaged", args.policy)
        self.command = step(name, script, [args.istiod_address, args.policy], args.target,
                            child_options(self, opts), directory=str(REPO))
        self.register_outputs({"policy": args.policy})
