"""The proxy simulator's event log (tools/go/istio/proxysim, logs/proxies.jsonl of a cluster): one JSON object per
line -- connected / disconnected (a stream lost while its pod still ran) / certificate (with the issuing root's
fingerprint) / dial-failed / start-failed / stopped (its pod went away)."""

from __future__ import annotations

import datetime
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


def seconds(stamp: str) -> float:
    """An event's time (RFC 3339, nanoseconds, UTC) as a Unix timestamp."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    base = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return base.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def data_plane(events: list[dict[str, Any]], since: float, until: float) -> dict[str, Any]:
    """The data plane over [since, until] (Unix times): streams lost while their pod ran, and the longest time a
    proxy the simulator ran was without a connected istiod (from its start, or a lost stream, to its next connection;
    still open at until counts to until)."""
    waiting: dict[str, float] = {}  # pod -> since when it has had no istiod
    longest, slowest, lost = 0.0, None, 0
    for e in events:
        t, pod = seconds(e["time"]), e["pod"]
        if t > until:
            break
        if e["event"] == "disconnected":
            lost += t >= since
            waiting[pod] = t
        elif e["event"] in ("certificate", "start-failed", "dial-failed"):
            waiting.setdefault(pod, t)
        if e["event"] in ("connected", "stopped") and pod in waiting:
            start = waiting.pop(pod)
            if e["event"] == "connected" and t >= since and t - start > longest:
                longest, slowest = t - start, pod
    for pod, start in waiting.items():
        if until - start > longest:
            longest, slowest = until - start, f"{pod} (never connected)"
    return {"proxies_lost_control_plane": lost, "longest_without_istiod_s": round(longest, 2),
            "longest_without_istiod_pod": slowest}
