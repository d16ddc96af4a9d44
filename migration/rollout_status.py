"""When a restarted workload has rolled out, read from the object the API returns (pure).

The same rules as `kubectl rollout status` (k8s.io/kubectl pkg/polymorphichelpers/rollout_status.go), so one
watcher per restart command can stand in for a `kubectl rollout status` process per workload.
"""

from __future__ import annotations

import math
from typing import Any, Mapping


class RolloutFailed(RuntimeError):
    """The workload will not finish rolling out by itself (the message names it and why)."""


def rolled_out(obj: Mapping[str, Any]) -> bool:
    """Whether the Deployment, StatefulSet or DaemonSet obj finished its rollout: the controller saw its latest
    spec and every wanted pod is new and available. Raises RolloutFailed when it never will."""
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    kind, name = obj["kind"], f"{meta.get('namespace')}/{obj['kind']}/{meta['name']}"
    if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
        return False
    if kind == "Deployment":
        for condition in status.get("conditions") or []:
            if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
                raise RolloutFailed(f"{name} exceeded its progress deadline: {condition.get('message', '')}")
        wanted, updated = spec.get("replicas", 1), status.get("updatedReplicas") or 0
        return (updated >= wanted and (status.get("replicas") or 0) <= updated
                and (status.get("availableReplicas") or 0) >= updated)
    if kind == "StatefulSet":
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") != "RollingUpdate":
            raise RolloutFailed(f"{name} has updateStrategy OnDelete: its pods change only when deleted")
        wanted = spec.get("replicas", 1)
        if (status.get("readyReplicas") or 0) < wanted:
            return False
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0
        if partition:
            return (status.get("updatedReplicas") or 0) >= wanted - partition
        return status.get("updateRevision") == status.get("currentRevision")
    if kind == "DaemonSet":
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") != "RollingUpdate":
            raise RolloutFailed(f"{name} has updateStrategy OnDelete: its pods change only when deleted")
        wanted = status.get("desiredNumberScheduled") or 0
        return (status.get("updatedNumberScheduled") or 0) >= wanted and (status.get("numberAvailable") or 0) >= wanted
    raise RolloutFailed(f"{name}: a {kind} cannot be rolled out")


def _scaled(value: int | str | None, total: int, default: int | str, round_up: bool) -> int:
    """An int-or-percent rollout field scaled to total, as intstr.GetScaledValueFromIntOrPercent does."""
    value = default if value is None else value
    if isinstance(value, int):
        return value
    scaled = int(value.rstrip("%")) * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def sequential_pod_starts(obj: Mapping[str, Any]) -> int:
    """How many pod starts a rollout of obj waits for one after another (its length in pod start times): a
    StatefulSet replaces its pods one at a time, a Deployment maxSurge + maxUnavailable of them at once, a DaemonSet
    maxSurge + maxUnavailable nodes at once. The wave starts the longest first, so none of them is left to run
    alone at its end."""
    spec, kind = obj.get("spec") or {}, obj["kind"]
    strategy = spec.get("strategy" if kind == "Deployment" else "updateStrategy") or {}
    rolling, replicas = strategy.get("rollingUpdate") or {}, spec.get("replicas", 1)
    if kind == "Deployment":
        pods = replicas
        if strategy.get("type") == "Recreate":
            return min(pods, 1)
        at_once = (_scaled(rolling.get("maxSurge"), pods, "25%", True)
                   + _scaled(rolling.get("maxUnavailable"), pods, "25%", False))
    elif kind == "StatefulSet":
        pods = replicas - (rolling.get("partition") or 0)
        at_once = _scaled(rolling.get("maxUnavailable"), replicas, 1, True)
    else:
        pods = (obj.get("status") or {}).get("desiredNumberScheduled") or 0
        at_once = (_scaled(rolling.get("maxSurge"), pods, 0, True)
                   + _scaled(rolling.get("maxUnavailable"), pods, 1, True))
    return math.ceil(max(pods, 0) / max(at_once, 1))
