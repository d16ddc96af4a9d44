"""The migrated stack upgrades the moved plane: Istio's revision-based (canary) upgrade inside istio-system, declared
with `pulumi config set revision` and `targetVersion`, then `pulumi up`; back to the version it replaced; and again.

The mesh is moved first at the pinned build (tools/pins.env), then upgraded to the next minor (1.31-dev, its own
istioctl and pilot-discovery), a canary namespace first (`canaryNamespaces`, kept for every later run) while
Charmed Kubeflow 2.0's profile controller forces istio-injection=enabled (demo.profile_controller), each run followed
by the injector history. Each upgrade must leave: one injector per
profile namespace in every state the API server went through, every proxy on the new revision in that revision's
`istioctl proxy-status`, no object of the replaced revision, CRD UIDs and every CR kept, a validator judging Istio
writes, and a stack that `refresh` and `preview --expect-no-changes` find clean.
"""

from __future__ import annotations

import json

import pytest

from demo import fixture
from demo.observe import read, snapshot
from demo.profile_controller import FORK, ProfileController
from devcluster import toolchain
from tests.faults.harness import cancel_dead_update, up_killed_at
from tests.next_owner import NEXT, NEXT_REVISION, next_istioctl, old_charm_purge_loses_nothing
from tests.support import (DEFAULT_INJECTOR, by_canary, config_file_with, followed, fresh_workspace,
                           live_crd_versions, purged, rendered_crd_specs)
from tests.upgrades import istiod_address, on_the_revision, revision_objects, set_revision, upgraded

PINNED = toolchain.pins()["ISTIO_VERSION"]
SIZE = fixture.FixtureSize(profiles=2, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)


@pytest.fixture(scope="module")
def mesh():
    toolchain.ensure("istio-next")  # the next minor's istioctl and pilot-discovery, built on first use
    with purged(fresh_workspace("upgrade")) as workspace:
        fixture.build(workspace.env, SIZE)
        workspace.up("migrated")  # the move, at the pinned build
        yield workspace


@pytest.fixture(scope="module")
def first(mesh):
    """The first upgrade, the first profile as its canary (soaked 5 s), with the fork's profile controller
    reconciling."""
    mesh.set_config("migrated", "kf-istio-migrate:canaryNamespaces", json.dumps(PROFILES[:1]))
    mesh.set_config("migrated", "kf-istio-migrate:canarySoakSeconds", "5")
    controller = ProfileController(str(mesh.cluster.kubeconfig), FORK)
    controller.start()
    try:
        return upgraded(mesh, NEXT_REVISION, NEXT, PROFILES)
    finally:
        controller.stop()


def test_preview_named_the_revision_that_comes_and_the_one_that_goes(first):
    phase = first["outputs"]["phase"]
    assert phase.startswith(f"upgrade: istiod-{NEXT_REVISION} ({NEXT}) comes beside istiod-kf-1-30 ({PINNED})"), phase
    assert first["outputs"]["crdSchemas"] == f"updated from {PINNED} to {NEXT}"
    assert first["outputs"]["leavingIstiodAddress"] == istiod_address("kf-1-30")


def test_the_upgrade_moves_every_sidecar_to_the_next_revision_with_one_injector_throughout(mesh, first):
    on_the_revision(mesh, first, NEXT_REVISION, NEXT, next_istioctl(), PROFILES)
    canary = [s for s in first["states"] if by_canary(s, PROFILES[0])]
    assert canary and not [h for s in canary for h in by_canary(s, PROFILES[1])], \
        "the canary namespace alone went first"
    moved = {(m["phase"], m["namespace"]) for m in first["outputs"]["moveAccount"]["moved"]}
    assert moved == {("canary", PROFILES[0]), ("rollout", PROFILES[1])}
    assert revision_objects(mesh.env, "kf-1-30") == [], "the replaced revision's objects are gone"
    assert live_crd_versions(mesh.env) == rendered_crd_specs(NEXT, next_istioctl())


def test_a_target_outside_the_skew_rule_and_a_legacy_stack_naming_the_old_revision_are_refused(mesh, first):
    """Bad input refused by preview before any change: a jump of three minors from the running revision, and the
    legacy stack (the way back to the charm) still naming the revision the upgrade replaced."""
    too_far = config_file_with(mesh, "migrated", {"revision": "kf-1-34", "targetVersion": "1.34-dev"}, "too-far")
    refused = mesh.pulumi("preview", "--stack", "migrated", "--config-file", str(too_far), check=False)
    assert refused.returncode != 0
    assert f"outside what an upgrade from istiod-{NEXT_REVISION} ({NEXT}) may do" in refused.stdout + refused.stderr
    mesh.init("legacy")
    stale = mesh.pulumi("preview", "--stack", "legacy", check=False)
    assert stale.returncode != 0
    assert f"runs revision {NEXT_REVISION} (upgraded by the migrated stack)" in stale.stdout + stale.stderr


def test_the_way_back_returns_every_sidecar_and_keeps_the_newer_crd_schemas(mesh, first):
    schemas = live_crd_versions(mesh.env)
    back = upgraded(mesh, "kf-1-30", PINNED, PROFILES)
    assert back["outputs"]["crdSchemas"].startswith(f"kept at {NEXT}'s")
    on_the_revision(mesh, back, "kf-1-30", PINNED, "istioctl", PROFILES)
    assert revision_objects(mesh.env, NEXT_REVISION) == []
    assert live_crd_versions(mesh.env) == schemas, "going back never downgrades the CRDs"


def test_a_second_upgrade_on_the_same_stack_and_the_old_charms_purge_after_it(mesh, first):
    again = upgraded(mesh, NEXT_REVISION, NEXT, PROFILES)
    on_the_revision(mesh, again, NEXT_REVISION, NEXT, next_istioctl(), PROFILES)
    assert revision_objects(mesh.env, "kf-1-30") == []
    old_charm_purge_loses_nothing(mesh.env, PROFILES[0], NEXT_REVISION)


def test_an_upgrade_killed_after_its_switch_goes_back_to_the_running_revision(mesh, first):
    """From any phase: `pulumi up` towards kf-1-30 SIGKILLed (the CLI, its plugins and commands) once the default
    injector calls the new istiod, then as the runbook says for an interrupted upgrade: `pulumi cancel`, `pulumi
    refresh` (the killed update's writes to objects the stack already held are not in its state), revision and
    targetVersion set back to kf-1-31's and `pulumi up`: the half-made revision is the one retired, with one injector
    throughout both runs."""
    env, before = mesh.env, snapshot(mesh.env)
    set_revision(mesh, "kf-1-30", PINNED)

    def switched(api) -> bool:
        hook = api.admission.read_mutating_webhook_configuration(DEFAULT_INJECTOR)
        return hook.webhooks[0].client_config.service.name == "istiod-kf-1-30"

    with followed(mesh, PROFILES) as killed:
        up_killed_at(mesh, "injector-switched-to-kf-1-30", probe=switched)
    cancel_dead_update(mesh)
    mesh.pulumi("refresh", "--stack", "migrated", "--yes")
    assert {d["metadata"]["name"] for d in read(env, "deployments", "istio-system", label_selector="app=istiod")
            ["items"]} == {"istiod-kf-1-30", f"istiod-{NEXT_REVISION}"}, "killed with both revisions running"
    back = upgraded(mesh, NEXT_REVISION, NEXT, PROFILES)
    on_the_revision(mesh, {**back, "before": before, "states": killed + back["states"]}, NEXT_REVISION, NEXT,
                    next_istioctl(), PROFILES)
    assert revision_objects(env, "kf-1-30") == []
