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


def pytest_collection_modifyitems(items):
    """Cluster tiers first, unit tests last: with `make test`'s `--dist loadfile --no-loadscope-reorder`, the workers
    take whole files in this order, so the short unit files fill the end of the run instead of one long cluster file
    running alone while the other workers idle."""
    items.sort(key=lambda item: item.path.parent.name == "unit")
