"""Shared by every tier: the repository on sys.path, and SIGINT restored for the tools (see
let_children_be_interrupted). The toolchain is the integration and fault tiers' business
(their conftests), so `make unit` runs with no toolchain and no cluster."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from devcluster.toolchain import let_children_be_interrupted  # noqa: E402

let_children_be_interrupted()  # pulumi under a background `make test` would wait 5 s per plugin it stops


def pytest_addoption(parser):
    # Here, not in tests/faults/conftest.py: pytest reads options only from conftests it loads at startup.
    parser.addoption("--all-faults", action="store_true",
                     help="tests/faults: crash/resume and rollback at every kill point, not only the fast subset")


LONGEST_FIRST = ("test_upgrade.py", "test_migration.py", "test_guard.py", "test_canary.py", "test_runbook.py",
                 "test_fleet.py", "test_live_proxies.py", "test_migration_from_legacy_stack.py", "test_shared_state.py",
                 "test_version_jump.py", "test_bad_inputs.py", "test_rollback_before_teardown.py",
                 "test_cluster_smoke.py", "test_legacy_adoption.py", "test_rollback_from_phase.py")
"""The cluster files that take longest, longest first (a fresh clone's `make test`, 2026-12-07, at 33bc52c: 520 s for
test_upgrade.py down to 66 s for test_rollback_from_phase.py; the others take 40 s or less)."""


def pytest_collection_modifyitems(items):
    """The longest cluster files first, the other cluster files next, unit tests last: with `make test`'s `--dist
    loadfile --no-loadscope-reorder`, each worker takes the next whole file in this order when it is free, so the
    short files fill the end of the run instead of one long file running alone while the other workers idle."""
    def rank(item) -> tuple[bool, int]:
        name = item.path.name
        order = LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
        return item.path.parent.name == "unit", order

    items.sort(key=rank)
