"""devcluster.toolchain: tools started under a background job get SIGINT back; the demo builds only what it runs."""

from __future__ import annotations

import subprocess
import sys

from devcluster import toolchain
from devcluster.cluster import COMPONENTS, PYTHON_COMPONENTS
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


def test_the_demo_builds_what_a_cluster_and_the_program_run_and_no_test_only_tool():
    sets = toolchain.toolsets()
    demo = set(sets.pop(toolchain.DEMO_TOOLS))
    cluster_binaries = {name for name in COMPONENTS if name not in PYTHON_COMPONENTS}
    program = {"pulumi", "pulumi-language-python", "pulumi-language-python-exec", "pulumi-resource-kubernetes",
               "pulumi-resource-command", "istioctl", "pilot-discovery"}
    assert cluster_binaries | program <= demo
    next_minor = toolchain.pins()["ISTIO_NEXT_VERSION"]
    assert set(sets["istio-next"]) == {f"istioctl-{next_minor}", f"pilot-discovery-{next_minor}"}
    assert not [name for binaries in sets.values() for name in binaries if name in demo], "a test-only tool in demo"
