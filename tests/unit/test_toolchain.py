"""devcluster.toolchain.let_children_be_interrupted: tools started under a background job get SIGINT back."""

from __future__ import annotations

import subprocess
import sys

from devcluster.toolchain import REPO

# A parent that starts with SIGINT ignored, as a shell's background job does, and reports whether a child it
# starts inherits "ignored" (the Pulumi CLI then waits 5 s for every plugin it stops).
_PARENT = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
from devcluster.toolchain import let_children_be_interrupted
if sys.argv[1] == "restore":
    let_children_be_interrupted()
child = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout.strip())
"""


def _child_ignores_sigint(mode: str) -> bool:
    out = subprocess.run([sys.executable, "-c", _PARENT, mode], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_a_child_of_a_background_job_ignores_sigint_unless_restored():
    assert _child_ignores_sigint("leave")
    assert not _child_ignores_sigint("restore")
