"""Shared test setup: the repository on sys.path and the pinned toolchain (istioctl renders) on PATH."""

from __future__ import annotations

import os
import sys

from devcluster import toolchain

sys.path.insert(0, str(toolchain.REPO))
os.environ["PATH"] = os.pathsep.join([str(toolchain.bin_dir()), str(toolchain.VENV_BIN), os.environ["PATH"]])


def pytest_addoption(parser):
    # Here, not in tests/faults/conftest.py: pytest reads options only from conftests it loads at startup.
    parser.addoption("--all-faults", action="store_true",
                     help="tests/faults: crash/resume and rollback at every kill point, not only the fast subset")
