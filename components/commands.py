"""A kubectl-driven step as a pulumi-command resource, bound to the stack's one cluster."""

from __future__ import annotations

from typing import Sequence

import pulumi
import pulumi_command as command

from migration.target import KubeTarget


def step(name: str, script: str, triggers: Sequence[str], target: KubeTarget,
         opts: pulumi.ResourceOptions, directory: str | None = None,
         stdin: pulumi.Input[str] | None = None) -> command.local.Command:
    """A Command that runs script against target (KUBECONFIG from the resolved target, never the shell's).

    It runs on create and whenever triggers change (a replacement). Any other input change, such as the path of
    the resolved kubeconfig or stdin, is an update that runs `true`: a step is never repeated just because the way
    to reach the same cluster changed."""
    return command.local.Command(name, create=script, update="true", triggers=list(triggers),
                                 environment=target.environment(), dir=directory, stdin=stdin, opts=opts)
