"""The migration's steps as resources: switch the default webhooks, restart workloads, verify, tear down."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from typing import Any, Mapping, Sequence

import pulumi
import pulumi_command as command

from components import PACKAGE
from components.objects import adoptable, child_options, declare
from migration.guard import protected


@dataclasses.dataclass(frozen=True)
class WebhookSwitchArgs:
    """The live default webhooks, already retargeted at the new istiod (migration.plan.retarget)."""

    injector: Mapping[str, Any]
    validator: Mapping[str, Any] | None


class WebhookSwitch(pulumi.ComponentResource):
    """Adopts the default injector and validator and points them at the new istiod: one write each, so every
    namespace has exactly one injector at every instant. Retained on delete: destroying this stack must never
    leave namespaces with no injector (rolling back points them at the old istiod again)."""

    def __init__(self, name: str, args: WebhookSwitchArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:WebhookSwitch", name, None, opts)
        hooks = [args.injector] + ([args.validator] if args.validator else [])
        self.webhooks = [declare(name, protected(adoptable(hook)), child_options(
            self, opts, import_=hook["metadata"]["name"], retain_on_delete=True)) for hook in hooks]
        self.register_outputs({"switched": [h["metadata"]["name"] for h in hooks]})


@dataclasses.dataclass(frozen=True)
class RolloutsArgs:
    workloads: Sequence[tuple[str, str]]
    """(namespace, Deployment) to restart."""
    parallelism: int
    """At most this many commands run at once (lanes of dependent commands)."""
    strategy: str
    """`namespaces` (one command per namespace, restarting all its Deployments together) or `deployments` (one
    command per Deployment)."""
    timeout_seconds: int
    """Limit for each `kubectl rollout status`."""
    istiod_address: str
    """The new istiod; part of every trigger, so a re-run restarts only when the target changes."""


def rollout_script(namespace: str, deployments: Sequence[str], timeout_seconds: int) -> str:
    """Restart the namespace's Deployments together, then wait for each rollout to complete."""
    q = shlex.quote
    names = " ".join(f"deployment/{q(d)}" for d in deployments)
    waits = " && ".join(f"kubectl -n {q(namespace)} rollout status deployment/{q(d)} --timeout={timeout_seconds}s"
                        for d in deployments)
    return f"kubectl -n {q(namespace)} rollout restart {names} && {waits}"


def rollout_batches(workloads: Sequence[tuple[str, str]], strategy: str) -> list[tuple[str, list[str]]]:
    """(namespace, Deployments) per command: one namespace each (`namespaces`) or one Deployment each."""
    if strategy == "deployments":
        return [(namespace, [deployment]) for namespace, deployment in workloads]
    batches: dict[str, list[str]] = {}
    for namespace, deployment in workloads:
        batches.setdefault(namespace, []).append(deployment)
    return list(batches.items())


class Rollouts(pulumi.ComponentResource):
    """Restarts every injected workload, after the webhook switch, so each is re-injected by the new istiod.
    Commands run in `parallelism` lanes: command i waits for command i-parallelism."""

    def __init__(self, name: str, args: RolloutsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Rollouts", name, None, opts)
        self.commands: list[command.local.Command] = []
        for index, (namespace, deployments) in enumerate(rollout_batches(args.workloads, args.strategy)):
            lane_previous = self.commands[index - args.parallelism] if index >= args.parallelism else None
            self.commands.append(command.local.Command(
                f"{name}-{namespace}" + (f"-{deployments[0]}" if args.strategy == "deployments" else ""),
                create=rollout_script(namespace, deployments, args.timeout_seconds),
                triggers=[args.istiod_address, namespace, *deployments],
                opts=child_options(self, opts, depends_on=[lane_previous] if lane_previous else [])))
        self.register_outputs({"count": len(self.commands)})


def serving_command(name: str, validator: str, timeout_seconds: int,
                    opts: pulumi.ResourceOptions) -> command.local.Command:
    """Waits until the new istiod really serves webhooks through the apiserver: istiod switches its own validator to
    failurePolicy=Fail only after the apiserver delivered it an invalid object and it rejected it."""
    check = f"kubectl get validatingwebhookconfiguration {shlex.quote(validator)} -o jsonpath='{{.webhooks[*].failurePolicy}}'"
    script = (f"for i in $(seq {timeout_seconds}); do [ \"$({check})\" = Fail ] && exit 0; sleep 1; done; "
              f"echo 'istiod never armed {validator}: is it serving?' >&2; exit 1")
    return command.local.Command(name, create=script, triggers=[validator], opts=opts)


def verification_command(name: str, istiod_address: str, namespaces: Sequence[str], gateway_namespace: str,
                         opts: pulumi.ResourceOptions) -> command.local.Command:
    """Fails the update, naming the pods, unless every sidecar and the gateway use the new istiod."""
    argv = [sys.executable, "-m", "migration.verify", "--istiod", istiod_address, "--gateway-namespace",
            gateway_namespace, *namespaces]
    return command.local.Command(name, create=shlex.join(argv), triggers=[istiod_address, *namespaces],
                                 dir=str(pulumi.runtime.get_root_directory()), opts=opts)


def teardown_command(name: str, objects: Sequence[tuple[str, str, str]],
                     opts: pulumi.ResourceOptions) -> command.local.Command:
    """Deletes the other control plane, in the given order (never CRDs, CRs, the gateway or user namespaces)."""
    # Each delete is retried briefly: right after the guard's binding is deleted, admission may still deny.
    deletes = [f"for i in 1 2 3 4 5 6 7 8 9 10; do kubectl delete {shlex.quote(kind)} {shlex.quote(obj)} "
               f"--ignore-not-found --wait=false{f' -n {shlex.quote(ns)}' if ns else ''} && break; sleep 1; "
               f"[ $i = 10 ] && exit 1; done" for kind, ns, obj in objects]
    return command.local.Command(name, create=" && ".join(deletes) or "true",
                                 triggers=[f"{k}/{ns}/{n}" for k, ns, n in objects], opts=opts)
