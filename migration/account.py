"""The account of a move, machine-readable (pure): each moving command (live.rollout, live.canary) ends its output
with one `account:` line listing the workloads it moved (namespace, kind, name, way, seconds); the program gathers
those lines from the commands' recorded output into the stack output `moveAccount`."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from migration.workloads import Workload

PREFIX = "account: "


def entry(workload: Workload, seconds: float) -> dict[str, Any]:
    return {"namespace": workload.namespace, "kind": workload.kind, "name": workload.name,
            "way": "evict" if workload.evict_because else "restart", "seconds": round(seconds, 1)}


def account_line(moved: Mapping[Workload, float]) -> str:
    """The line a command prints last: every workload it moved and how long each took, in a stable order."""
    return PREFIX + json.dumps([entry(w, s) for w, s in sorted(moved.items())], sort_keys=True)


def read_account(output: str | None, phase: str) -> list[dict[str, Any]]:
    """The workloads one command's output accounts for, each tagged with the phase that moved it; none if it printed
    no account (it moved nothing, or has not run)."""
    lines = [line for line in (output or "").splitlines() if line.startswith(PREFIX)]
    return [{**item, "phase": phase} for line in lines[-1:] for item in json.loads(line[len(PREFIX):])]


def move_account(outputs: Iterable[tuple[str, str | None]], left: Iterable[str]) -> dict[str, Any]:
    """moveAccount: every workload moved, by (phase, command output), and every pod no workload moves, with why."""
    return {"moved": [item for phase, output in outputs for item in read_account(output, phase)], "left": list(left)}
