"""SIGKILL a process and everything it started, as a crash of the machine running it would.

`os.killpg` on the Pulumi CLI's group is not enough: the CLI starts every plugin with setpgid
(sdk/go/common/util/cmdutil.RegisterProcessGroup), so the language host, the providers and the commands the Command
provider runs sit in process groups of their own and would keep running, re-parented to init, after the "crash"."""

from __future__ import annotations

import os
import pathlib
import signal


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now (from /proc/PID/stat; the command name may hold spaces or ')')."""
    parents = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # it exited while we read
    return parents


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_tree(root: int) -> list[int]:
    """Stop root and its descendants (so none starts another or exits and loses its children to init while we
    look), until a scan finds no new one; then SIGKILL them all. Returns the pids killed."""
    stopped: list[int] = []
    found = [root]
    while found:
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        stopped += found
        known = set(stopped)
        found = [pid for pid, parent in _parents().items() if parent in known and pid not in known]
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return stopped
