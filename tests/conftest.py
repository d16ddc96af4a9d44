"""Shared test setup: the repository on sys.path and the pinned toolchain (istioctl renders) on PATH."""

from __future__ import annotations

import os
import sys

from devcluster import toolchain

sys.path.insert(0, str(toolchain.REPO))
os.environ["PATH"] = os.pathsep.join([str(toolchain.bin_dir()), str(toolchain.VENV_BIN), os.environ["PATH"]])
