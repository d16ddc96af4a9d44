"""Everything the program decides before declaring a resource: renders, the live mesh, what to adopt, the plan.

Read-only; `__main__` turns the result into components. Refusals raise plan.PreflightRefused before any mutation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from components.gateway import GatewayArgs, WORKLOAD, gateway_objects
from migration import discovery, plan, render
from migration.config import MigrationConfig
from migration.guard import POLICY


@dataclasses.dataclass(frozen=True)
class Decisions:
    topology: render.Topology
    crds: tuple[dict[str, Any], ...]
    adopt_crds: frozenset[str]
    control_plane: tuple[dict[str, Any], ...]
    adopt_objects: frozenset[tuple[str, str, str]]
    adopt_gateway: bool
    steps: plan.MigrationPlan | None
    """The switch/rollout/verify/teardown plan: the migration (migrated) or the way back (legacy); None when the
    legacy stack finds the default path already on the legacy istiod."""
    rolling_back: bool


GUARD = (("ValidatingAdmissionPolicyBinding", "", POLICY), ("ValidatingAdmissionPolicy", "", POLICY))


def decide(cfg: MigrationConfig) -> Decisions:
    legacy_rendered = render.render(render.legacy_input(cfg))
    migrated_rendered = render.render(render.migrated_input(cfg))
    migrated = cfg.topology == "migrated"
    rendered = migrated_rendered if migrated else legacy_rendered
    topology = render.topology(rendered, cfg.control_plane_namespace, cfg.control_plane_revision)
    live = discovery.read(cfg.source_namespace, cfg.target_namespace)
    crds = tuple(render.crds(rendered))
    control_plane = render.control_plane(rendered)
    if migrated:
        steps = plan.plan(live, cfg, legacy_rendered, topology.istiod_service)
        return Decisions(topology, crds, frozenset(c["metadata"]["name"] for c in crds), tuple(control_plane),
                         frozenset(), True, steps, False)

    # legacy: converge on the charm's layout from whatever is there (nothing, the charm's install, or a migration).
    # Rolling back: the default path was switched away, or a migration (even one stopped early) left objects of
    # the migrated plane; either way the way back switches, restarts, verifies and removes that plane.
    now = plan.default_injector_target(live)
    migrated_plane = render.control_plane(migrated_rendered)
    rolling_back = ((now is not None and now != (cfg.source_namespace, topology.istiod_service))
                    or bool(discovery.existing(migrated_plane)))
    steps = (plan.rollback_plan(live, cfg, migrated_plane, topology.istiod_service, GUARD)
             if rolling_back else None)
    switched = steps.switched if steps else set()
    live_webhooks = {w["metadata"]["name"]: w for w in live.mutating_webhooks + live.validating_webhooks}
    default_injector = plan.default_injector_name(live)
    objects = []
    for obj in control_plane:
        name = obj["metadata"]["name"]
        if name in switched:
            continue  # declared by the webhook switch
        if obj["kind"].endswith("WebhookConfiguration") and name in live_webhooks:
            obj = plan.as_declared(live_webhooks[name], obj["kind"])  # adopt as it is live (e.g. deactivated)
        elif obj["kind"] == "MutatingWebhookConfiguration" and default_injector not in (None, name):
            obj = plan.deactivated(obj)  # another webhook injects by default: never a second injector
        objects.append(obj)
    if steps and steps.ca_secret:
        objects.append(steps.ca_secret)
    gateway = gateway_objects(GatewayArgs(namespace=cfg.gateway_namespace, istiod_address="", revision="default",
                                          proxy_image="", gateway_cr_namespace=cfg.source_namespace))
    present = discovery.existing(list(crds) + objects + gateway)
    return Decisions(
        topology, crds, frozenset(n for k, _, n in present if k == "CustomResourceDefinition"), tuple(objects),
        frozenset(p for p in present if p[0] != "CustomResourceDefinition"),
        ("Deployment", cfg.gateway_namespace, WORKLOAD) in present, steps, rolling_back)
