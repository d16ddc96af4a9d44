"""The same migration when the legacy mesh was made by this program's `legacy` stack instead of the charm; then the
way back from the finished migration. The rows are computed when the fixture migrates, so the rollback (the one
test that changes the cluster) cannot affect them whatever the order."""

from __future__ import annotations

import pytest

from demo import fixture
from tests.integration.test_migration import CHECKS, PROFILES, migrated_mesh, old_charm_purge
from tests.support import fresh_workspace, purged, roll_back_and_check


@pytest.fixture(scope="module")
def migration():
    with purged(fresh_workspace("migstack")) as workspace:
        result, _ = migrated_mesh(workspace, fixture.build_with_legacy_stack)
        yield workspace, {row: (observed, ok) for row, observed, ok in result.rows}


@pytest.mark.parametrize("check", CHECKS)
def test_migration_from_legacy_stack(migration, check):
    observed, ok = migration[1][check]
    assert ok, f"{check}: {observed}"


def test_rollback_to_legacy_after_teardown_and_purge(migration):
    """The way back after the migration finished (old plane torn down, and the old charm's purge attempted), with a
    fresh legacy stack as the runbook says (the one that built this mesh has a stale state: its objects were torn
    down behind its back): a working legacy mesh again, one injector at every sample, nothing lost."""
    workspace = migration[0]
    old_charm_purge(workspace.env)
    workspace.pulumi("stack", "rm", "legacy", "--force", "--yes", "--preserve-config")
    roll_back_and_check(workspace, PROFILES)
