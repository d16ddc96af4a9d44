"""The same migration when the legacy mesh was made by this program's `legacy` stack instead of the charm."""

from __future__ import annotations

import pytest

from demo import fixture
from tests.integration.test_migration import CHECKS, migrated_cluster


@pytest.fixture(scope="module")
def migration():
    cluster, env, rows, samples = migrated_cluster("migstack", fixture.build_with_legacy_stack)
    yield {"rows": rows, "samples": samples}
    cluster.down(purge=True)


@pytest.mark.parametrize("check", CHECKS)
def test_migration_from_legacy_stack(migration, check):
    observed, ok = migration["rows"][check]
    assert ok, f"{check}: {observed}"
