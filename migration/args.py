"""What each component is given, as plain data: migration.decide fills every Args, and the component of the same
name in components/ turns it into resources. Listed in phase order; MigrationSteps, last, groups the Args of a move's
steps (decided by migration.decide, described by migration.outputs)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from migration.live_mesh import ObjectId
from migration.target import KubeTarget
from migration.workloads import Workload


@dataclasses.dataclass(frozen=True)
class IstioCrdsArgs:
    """Which CRDs exist and how this stack comes to own them."""

    crds: tuple[Mapping[str, Any], ...]
    """The CRDs as declared: rendered, with the live labels and annotations merged in (migration.decide)."""
    adopt: frozenset[str]
    """Names of the CRDs to import (those already on the cluster); the others are created."""
    as_they_stand: frozenset[str] = frozenset()
    """Names of the adopted CRDs declared exactly as they are on the cluster: importing them writes nothing there."""

    @property
    def change_the_cluster(self) -> bool:
        """Some CRD is created or gets a new schema, which the control plane must wait for."""
        return {c["metadata"]["name"] for c in self.crds} != self.as_they_stand


@dataclasses.dataclass(frozen=True)
class ControlPlaneArgs:
    """A control plane as declared (rendered objects, marked and adapted by migration.decide) and where it goes."""

    namespace: str
    """The control plane's namespace (values.global.istioNamespace)."""
    revision: str
    """Its revision (`default` for the charm's install)."""
    objects: tuple[Mapping[str, Any], ...]
    """Objects other than CRDs, including the Namespace when this stack owns it and the CA Secret when copied."""
    adopt: frozenset[ObjectId] = frozenset()
    """Objects already on the cluster: imported (and taken over), not created."""
    protect: bool = False
    """Pulumi `protect` on what every revision of the plane shares (its namespace, the root of trust's Secret): the
    stack refuses to delete or replace them, and `pulumi destroy` fails before deleting anything (the migrated
    plane). A revision's own objects stay unprotected, so that the stack's upgrade deletes them once it declares a
    new revision (the guard refuses anyone else)."""


@dataclasses.dataclass(frozen=True)
class ServingCheckArgs:
    validator: str
    """The destination istiod's own ValidatingWebhookConfiguration."""
    timeout_seconds: int
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class WebhookSwitchArgs:
    """The live default webhooks, already retargeted at the destination istiod and marked (migration.decide)."""

    injector: Mapping[str, Any] | None
    """None once handed over: the default injector is then the DefaultTag's, under the default tag's name."""
    validator: Mapping[str, Any] | None
    target: KubeTarget
    """Where live.fold folds a canary's webhooks into the switch (the injector's write)."""
    fold: bool = False
    """A canary may be on the injector when the switch writes it (the stack declares one, or it is the way back):
    live.fold runs first. Otherwise no step stands between the serving check and the switch."""
    live_canary: tuple[str, ...] = ()
    """The way back: the canary namespaces the live default injector holds, which the fold's triggers name so that
    a way back run again after a canary was made folds it too (the migrated stack's fold follows its canary step)."""


@dataclasses.dataclass(frozen=True)
class GatewayArgs:
    objects: tuple[Mapping[str, Any], ...]
    """The gateway's objects as declared (migration.gateway, marked by migration.decide)."""
    adopt: frozenset[ObjectId] = frozenset()
    """Whole objects already on the cluster: imported (the legacy stack takes over the one it made)."""
    patches: bool = False
    """objects are server-side-apply patches of a gateway another owner made (never created, never deleted)."""
    purge_proof: tuple[ObjectId, ...] = ()
    """Deployments whose pod template loses the label `istioctl uninstall --purge` deletes pods by (a server-side
    apply patch cannot remove a field another manager set, so a strategic-merge patch does it, first)."""
    istiod_address: str = ""
    """The istiod the gateway talks to (an output of the component)."""
    target: KubeTarget | None = None


@dataclasses.dataclass(frozen=True)
class RolloutsArgs:
    batches: tuple[tuple[Workload, ...], ...]
    """The workloads of each command (migration.plan.rollout_batches)."""
    strategy: str
    """rolloutStrategy: how commands are named (`wave`: one for all; `workloads`: after their one workload; else
    after the namespace) and whether each waits for the one before (`one-namespace-at-a-time`)."""
    parallelism: int
    """At most this many workloads move at once, over every command (a slot each: live.slots)."""
    timeout_seconds: int
    """Limit for each workload's rollout, and for each evicted pod's replacement to become Ready."""
    istiod_address: str
    """The destination istiod; part of every trigger, so a re-run restarts only when the target changes."""
    leaving: str
    """The istiod address of the plane being left: only workloads with pods still on it are moved."""
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class UnmanagedPodsArgs:
    policy: str
    """`wait` or `evict` (`fail` never gets here: decide refuses first)."""
    timeout_seconds: int
    istiod_address: str
    leaving: str
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class VerificationArgs:
    istiod_address: str
    """The destination istiod."""
    leaving: str
    """The plane being left: no running pod in the cluster may still use it."""
    target: KubeTarget
    istioctl_version: str
    """The destination plane's Istio version: its istioctl asks both planes which proxies they serve."""
    istioctl: str | None
    """That istioctl's configured path (kf-istio-migrate:istioctl), else istioctl-<version> or istioctl on PATH."""
    timeout_seconds: int
    """How long restarted pods' proxies get to connect to the destination before the gate fails."""
    revisions: tuple[str, str]
    """The istio.io/rev of the destination's istiods and of the leaving plane's."""
    require_live_view: bool = False
    """Fail while the live view cannot be had, instead of judging by pod specs alone (requireLiveView)."""

    @property
    def judged_by(self) -> str:
        """Who judges that no pod is left (what the preview shows)."""
        live = "pod specs, then the control planes' live view (istioctl proxy-status)"
        return (f"{live}, required: the gate fails while it cannot be had" if self.require_live_view
                else f"{live}; pod specs alone where that view cannot be had (set requireLiveView to fail instead)")


@dataclasses.dataclass(frozen=True)
class CanaryArgs:
    """The canary phase (live.canary): between the destination istiod serving and the switch of the default
    injector."""

    namespaces: tuple[str, ...]
    """canaryNamespaces, whose new pods the default injector sends to the destination (one write)."""
    injector: str
    """The default injector's name: the switch's."""
    workloads: tuple[Workload, ...]
    """Their workloads, moved the way each kind allows (as the rollouts do)."""
    soak_seconds: int
    parallelism: int
    """At most this many of them move at once."""
    check: VerificationArgs
    """The planes (the canary gate asks the destination's istiods for its proxies' sync state), the istioctl, and
    the time the proxies get to connect and sync before the gate fails and the canary is put back."""


@dataclasses.dataclass(frozen=True)
class PutBackArgs:
    """The way back: every namespace an earlier release's canary relabelled to the migrated plane's revision returns
    to the default injection path, which the switch points at the legacy istiod, before the rollouts move their
    workloads."""

    revision: str
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class TeardownArgs:
    objects: tuple[ObjectId, ...]
    """The other control plane, in deletion order (never CRDs, CRs, the gateway or user namespaces)."""
    target: KubeTarget
    admitted_after: Mapping[str, Any] | None = None
    """An object the API server must admit (a server-side dry run: nothing is created) before the step ends."""


@dataclasses.dataclass(frozen=True)
class RetiredRevisionArgs:
    """After the migrated stack's upgrade: the revision it replaced, whose plane objects the engine deletes at the end
    of the update (no longer declared) once the guard lets them go."""

    revision: str
    namespace: str
    """Its control plane's namespace (the target namespace)."""
    istiod_uid: str
    """Which instance of the revision (its istiod's UID): the step runs again for each retirement, also of a revision
    name that comes back (an upgrade, its way back cut off before this step, then forward again)."""
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class GuardArgs:
    policy: Mapping[str, Any]
    binding: Mapping[str, Any]
    target: KubeTarget
    refused_probe: str
    """A guarded object (`kind/name`) whose server-side dry-run deletion the update retries until the guard refuses
    it: the API server's admission loads a new policy and binding a moment after they are written."""


@dataclasses.dataclass(frozen=True)
class DefaultTagArgs:
    """Handed over: the default injector under the default tag's name in the target namespace (created, or adopted
    once it exists), then its former names deleted."""

    injector: Mapping[str, Any]
    exists: bool
    """It is on the cluster already (adopted); else it is created."""
    retire: TeardownArgs
    """The default injector's former names (deleting a missing one is a no-op)."""


@dataclasses.dataclass(frozen=True)
class HelmHandOverArgs:
    """handOver=helm: the objects Istio's charts render, whose former appliers' field ownership ends (live.disown)
    once the stack has applied them as the releases render them."""

    refs: tuple[str, ...]
    """`apiVersion/kind/namespace/name` of each (migration.helm.object_refs)."""
    target: KubeTarget


@dataclasses.dataclass(frozen=True)
class ReleaseArgs:
    """The stack lets go: every resource retained on delete and no longer protected (components.hand_over)."""

    keep_guard: bool
    """The guard stays on the cluster when the stack is destroyed (else destroy deletes its policy and binding)."""


@dataclasses.dataclass(frozen=True)
class MigrationSteps:
    """The switch and what follows it: the migration (migrated) or the way back (legacy)."""

    serving: ServingCheckArgs
    switch: WebhookSwitchArgs
    rollouts: RolloutsArgs
    unmanaged: UnmanagedPodsArgs
    verification: VerificationArgs
    teardown: TeardownArgs
    teardown_name: str
    canary: CanaryArgs | None = None
    """canaryNamespaces: moved and proven between the destination serving and the switch."""
    canary_only: bool = False
    """canaryOnly: the update ends after the canary (no switch, rollouts, verification or teardown)."""
    put_back: PutBackArgs | None = None
    """The way back: canary namespaces return to the default injection path before the workloads move."""
