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
    parallelism: int
    """At most this many commands run at once (lanes of dependent commands)."""
    timeout_seconds: int
    """Limit for each `kubectl rollout status`, and for each evicted pod's replacement to become Ready."""
    istiod_address: str
    """The destination istiod; part of every trigger, so a re-run restarts only when the target changes."""
    leaving: str
    """The istiod address of the plane being left: evictions pick the pods still on it."""
    target: KubeTarget


def live_command(module: str, target: KubeTarget, *args: str) -> str:
    """`python -m live.<module>` against target (run from the repository, in this program's interpreter)."""
    return shlex.join([sys.executable, "-m", f"live.{module}", "--kubeconfig", target.kubeconfig,
                       "--context", target.context, *args])


def rollout_script(args: RolloutsArgs, batch: Sequence[Workload]) -> str:
    """Restart the batch's uncontrolled workloads together and wait for each; then evict the others' pods."""
    namespace = batch[0].namespace
    kubectl = f"{args.target.kubectl()} -n {shlex.quote(namespace)}"
    restart = [shlex.quote(f"{w.kind.lower()}/{w.name}") for w in batch if not w.evict_because]
    evict = [w.ref for w in batch if w.evict_because]
    parts = [f"{kubectl} rollout restart {' '.join(restart)}"] if restart else []
    parts += [f"{kubectl} rollout status {ref} --timeout={args.timeout_seconds}s" for ref in restart]
    if evict:
        parts.append(live_command("evict", args.target, "--leaving", args.leaving, "--istiod", args.istiod_address,
                                  "--timeout", str(args.timeout_seconds), "--namespace", namespace, *evict))
    return " && ".join(parts)


class Rollouts(pulumi.ComponentResource):
    """One Command per batch; command i waits for command i-parallelism."""

    def __init__(self, name: str, args: RolloutsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Rollouts", name, None, opts)
        self.commands = []
        for index, batch in enumerate(args.batches):
            lane_previous = self.commands[index - args.parallelism] if index >= args.parallelism else None
            first = batch[0]
            self.commands.append(step(
                f"{name}-{first.namespace}" + (f"-{first.kind.lower()}-{first.name}" if args.per_workload else ""),
                rollout_script(args, batch), [args.istiod_address, first.namespace, *(w.ref for w in batch)],
                args.target, child_options(self, opts, depends_on=[lane_previous] if lane_previous else []),
                directory=str(REPO)))
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
