"""Preflight, read-only: the live mesh on the target cluster, read once per run. Plain data out (migration.mesh);
deciding happens in migration.decide.

Works whether the legacy mesh was installed by the istio-pilot charm (`istioctl install`) or by the legacy stack.
"""

from __future__ import annotations

from typing import Any, Iterable

from kubernetes import client, dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from live.target import api_client
from migration.mesh import LiveMesh, ObjectId
from migration.target import KubeTarget

INJECTION_LABELS = ({"istio-injection": "enabled"}, {"istio.io/rev": "default"})
CA_SECRET_NAMES = ("cacerts", "istio-ca-secret")


def read(target: KubeTarget, ca_namespaces: Iterable[str], look_up: Iterable[dict[str, Any]]) -> LiveMesh:
    """Read the live mesh: cluster-wide lists, the CA Secrets of ca_namespaces, and which of look_up exist."""
    api = api_client(target)
    plain = api.sanitize_for_serialization
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    admission = client.AdmissionregistrationV1Api(api)
    namespaces = {n.metadata.name: dict(n.metadata.labels or {}) for n in core.list_namespace().items}
    crds = {c.metadata.name: {"uid": c.metadata.uid, "labels": dict(c.metadata.labels or {}),
                              "annotations": dict(c.metadata.annotations or {})}
            for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
            if c.metadata.name.endswith(".istio.io")}
    ca_secrets: dict[str, dict[str, dict[str, str]]] = {}
    for ns in ca_namespaces:
        for name in CA_SECRET_NAMES if ns in namespaces else ():
            secret = _get(lambda: core.read_namespaced_secret(name, ns))
            if secret is not None:
                ca_secrets.setdefault(ns, {})[name] = dict(secret.data or {})
    injected = {ns for ns, labels in namespaces.items()
                if any(all(labels.get(k) == v for k, v in want.items()) for want in INJECTION_LABELS)}
    workloads: dict[str, list[str]] = {ns: [] for ns in sorted(injected)}
    for deployment in apps.list_deployment_for_all_namespaces().items:  # one call, not one per namespace
        if deployment.metadata.namespace in injected:
            workloads[deployment.metadata.namespace].append(deployment.metadata.name)
    return LiveMesh(
        namespaces=namespaces, crds=crds,
        istiod_deployments=[plain(d) for d in apps.list_deployment_for_all_namespaces(label_selector="app=istiod").items],
        mutating_webhooks=[plain(w) for w in admission.list_mutating_webhook_configuration().items],
        validating_webhooks=[plain(w) for w in admission.list_validating_webhook_configuration().items],
        ca_secrets=ca_secrets, workloads={ns: sorted(names) for ns, names in workloads.items()},
        present=frozenset(_existing(api, look_up)))


def _get(read):
    try:
        return read()
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def _existing(api: client.ApiClient, objects: Iterable[dict[str, Any]]) -> set[ObjectId]:
    """(kind, namespace, name) of those objects that exist on the cluster (each looked up once, read-only)."""
    resources = dynamic.DynamicClient(api).resources
    found = set()
    for obj in objects:
        meta = obj["metadata"]
        try:
            resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).get(name=meta["name"],
                                                                               namespace=meta.get("namespace"))
        except (NotFoundError, ResourceNotFoundError):
            continue
        found.add((obj["kind"], meta.get("namespace", ""), meta["name"]))
    return found
