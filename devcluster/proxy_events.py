"""The proxy simulator's event log (tools/go/istio/proxysim, logs/proxies.jsonl of a cluster): one JSON object per
line -- connected / disconnected (a stream lost while its pod still ran) / certificate (with the issuing root's
fingerprint) / dial-failed / start-failed / stopped (its pod went away)."""

from __future__ import annotations

import json
import pathlib
from typing import Any


def read(path: pathlib.Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def lost_control_plane(events: list[dict[str, Any]]) -> list[str]:
    """'pod (istiod): why' for every stream a proxy lost while its pod ran (the simulator does not log the end of a
    stream whose pod went away)."""
    return [f"{e['pod']} ({e.get('istiod') or e.get('address')}): {e.get('error', '')}" for e in events
            if e["event"] == "disconnected"]


def issuers(events: list[dict[str, Any]]) -> dict[str, set[str]]:
    """istiod (namespace/pod) -> the fingerprints of the roots it handed back with the certificates it issued."""
    found: dict[str, set[str]] = {}
    for e in events:
        if e["event"] == "certificate":
            found.setdefault(e["istiod"], set()).add(e["issuer"])
    return found
