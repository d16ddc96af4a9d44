"""When a restarted workload has rolled out, read from the object the API returns (pure).

The same rules as `kubectl rollout status` (k8s.io/kubectl pkg/polymorphichelpers/rollout_status.go), so one
watcher per restart command can stand in for a `kubectl rollout status` process per workload.
"""

from __future__ import annotations

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
