"""Restart every injected workload after the webhook switch, so the destination istiod re-injects it."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Sequence

import pulumi

from components import PACKAGE
from components.commands import step
from components.objects import child_options
from migration.target import KubeTarget


@dataclasses.dataclass(frozen=True)
class RolloutsArgs:
    batches: tuple[tuple[str, tuple[str, ...]], ...]
    """(namespace, Deployments) per restart command (migration.plan.rollout_batches)."""
    per_deployment: bool
    """Commands are named after their one Deployment (rolloutStrategy=deployments), else after the namespace."""
    parallelism: int
    """At most this many commands run at once (lanes of dependent commands)."""
    timeout_seconds: int
    """Limit for each `kubectl rollout status`."""
    istiod_address: str
    """The destination istiod; part of every trigger, so a re-run restarts only when the target changes."""
    target: KubeTarget


def rollout_script(target: KubeTarget, namespace: str, deployments: Sequence[str], timeout_seconds: int) -> str:
    """Restart the namespace's Deployments together, then wait for each rollout to complete."""
    kubectl = f"{target.kubectl()} -n {shlex.quote(namespace)}"
    names = " ".join(f"deployment/{shlex.quote(d)}" for d in deployments)
    waits = " && ".join(f"{kubectl} rollout status deployment/{shlex.quote(d)} --timeout={timeout_seconds}s"
                        for d in deployments)
    return f"{kubectl} rollout restart {names} && {waits}"


class Rollouts(pulumi.ComponentResource):
    """One Command per batch; command i waits for command i-parallelism."""

    def __init__(self, name: str, args: RolloutsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Rollouts", name, None, opts)
        self.commands = []
        for index, (namespace, deployments) in enumerate(args.batches):
            lane_previous = self.commands[index - args.parallelism] if index >= args.parallelism else None
            self.commands.append(step(
                f"{name}-{namespace}" + (f"-{deployments[0]}" if args.per_deployment else ""),
                rollout_script(args.target, namespace, deployments, args.timeout_seconds),
                [args.istiod_address, namespace, *deployments], args.target,
                child_options(self, opts, depends_on=[lane_previous] if lane_previous else [])))
        self.register_outputs({"commands": len(self.commands),
                               "deployments": sum(len(d) for _, d in args.batches)})
