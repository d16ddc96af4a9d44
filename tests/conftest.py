"""Shared by every tier: the repository on sys.path. The toolchain is the integration and fault tiers' business
(their conftests), so `make unit` runs with no toolchain and no cluster."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


def pytest_addoption(parser):
    # Here, not in tests/faults/conftest.py: pytest reads options only from conftests it loads at startup.
    parser.addoption("--all-faults", action="store_true",
                     help="tests/faults: crash/resume and rollback at every kill point, not only the fast subset")
