"""The same migration when the legacy mesh was made by this program's `legacy` stack instead of the charm; then the
way back from the finished migration. The rows are computed when the fixture migrates, so the rollback (the one
test that changes the cluster) cannot affect them whatever the order. A small mesh of Deployments: who made the
control plane is what differs from tests/integration/test_migration.py, whose mesh has Kubeflow's shape."""

from __future__ import annotations

import pytest

from demo import fixture
from demo.observe import read
from tests.integration.test_migration import CHECKS, migrated_mesh
from tests.next_owner import old_charm_purge
from tests.support import fresh_workspace, purged, roll_back_and_check


SIZE = fixture.FixtureSize(profiles=2, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)


@pytest.fixture(scope="module")
def migration():
    with purged(fresh_workspace("migstack")) as workspace:
        result, _ = migrated_mesh(workspace, fixture.build_with_legacy_stack, SIZE)
        yield workspace, {row: (observed, ok) for row, observed, ok in result.rows}


@pytest.mark.parametrize("check", CHECKS)
def test_migration_from_legacy_stack(migration, check):
    observed, ok = migration[1][check]
    assert ok, f"{check}: {observed}"


def test_rollback_by_the_legacy_stack_that_built_the_mesh(migration):
    """The way back after the migration finished (old plane torn down, and the old charm's purge attempted), run by
    the legacy stack that built this mesh: it already holds the default injector and validator in its control
    plane, and its state still lists the torn-down plane, so `pulumi up --refresh`. A working legacy mesh again, one
    injector at every state, nothing lost, and the default webhooks switched back in place: the same objects (UIDs),
    never deleted and re-created. Then `pulumi refresh` and `preview --expect-no-changes` on that stack: clean."""
    workspace = migration[0]
    env = workspace.env
    old_charm_purge(env)
    defaults = default_webhook_uids(env)
    assert any(key.startswith("MutatingWebhookConfiguration/") for key in defaults), defaults
    roll_back_and_check(workspace, PROFILES, "--refresh")
    after = default_webhook_uids(env)  # now with the legacy plane's own webhooks again, created anew
    assert {key: after.get(key) for key in defaults} == defaults
    # A Pulumi user's day-2 habits on the stack that rolled back: it still declares the way back as it ran it.
    workspace.pulumi("refresh", "--stack", "legacy", "--yes")
    workspace.pulumi("preview", "--stack", "legacy", "--expect-no-changes", "--diff")


def default_webhook_uids(env: dict[str, str]) -> dict[str, str]:
    """kind/name -> uid of the Istio webhooks that are not the migrated revision's: after the move, the default
    injector (and validator, if any) the switch retargeted; the legacy plane's others are torn down."""
    return {f"{w['kind']}/{w['metadata']['name']}": w["metadata"]["uid"]
            for resource in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
            for w in read(env, resource)["items"]
            if "istio" in w["metadata"]["name"] and "kf-1-30" not in w["metadata"]["name"]}
