"""What preflight reads from the live cluster, as plain data: produced by live.discovery, consumed by pure code."""

from __future__ import annotations

import dataclasses
from typing import Any

from migration.analysis import AnalysisMessage

CA_SECRET_NAMES = ("cacerts", "istio-ca-secret")
"""Where istiod finds its CA, in the order it looks: a plugged-in CA (cacerts) wins over the one it creates."""
ObjectId = tuple[str, str, str]
"""(kind, namespace or "", name) of one Kubernetes object."""


@dataclasses.dataclass(frozen=True)
class LiveMesh:
    """The live mesh, read once per run (plain dicts, as the API returned them)."""

    namespaces: dict[str, dict[str, str]]
    """Every namespace -> its labels."""
    crds: dict[str, dict[str, Any]]
    """Istio CRD name -> {uid, labels, annotations, spec}."""
    istiod_deployments: list[dict[str, Any]]
    """Deployments labelled app=istiod, in any namespace."""
    mutating_webhooks: list[dict[str, Any]]
    validating_webhooks: list[dict[str, Any]]
    ca_secrets: dict[str, dict[str, dict[str, str]]]
    """namespace -> secret name (`cacerts`, `istio-ca-secret`) -> data, for the source and target namespaces."""
    pods: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Every pod in the cluster, reduced by migration.workloads.slim."""
    controllers: dict[ObjectId, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """(kind, namespace, name) of every ReplicaSet, Deployment, StatefulSet, DaemonSet and Job -> {owner: its
    controller's (kind, name) or None, strategy: a StatefulSet's updateStrategy type}."""
    serves_admission_policies: bool = True
    """The API server serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (the guard needs it)."""
    kubernetes_version: str = ""
    present: frozenset[ObjectId] = frozenset()
    """Which of the objects the program may declare (migration.decide.objects_to_look_up, and the CA Secrets read)
    already exist."""
    made_here: frozenset[ObjectId] = frozenset()
    """Which of present carry migration.marks.MADE_HERE (the legacy stack created them)."""
    precheck: tuple[AnalysisMessage, ...] = ()
    """`istioctl x precheck`'s messages for an install into the target namespace (read by the migrated stack)."""
    proxy_env: dict[ObjectId, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """Present Deployments with an `istio-proxy` container (the gateway) -> that container's env, in order."""


def object_id(obj: dict[str, Any]) -> ObjectId:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]
