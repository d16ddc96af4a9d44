"""Preflight, read-only: what the live legacy mesh looks like. Plain data out; planning happens in migration.plan.

Works whether the legacy mesh was installed by the istio-pilot charm (`istioctl install`) or by the legacy stack.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubernetes import client, config

INJECTION_LABELS = ({"istio-injection": "enabled"}, {"istio.io/rev": "default"})


@dataclasses.dataclass(frozen=True)
class LiveMesh:
    """What preflight read from the cluster (plain dicts, as the API returned them)."""

    namespaces: dict[str, dict[str, str]]
    """Every namespace -> its labels."""
    crds: dict[str, dict[str, Any]]
    """Istio CRD name -> {uid, labels, annotations}."""
    istiod_deployments: list[dict[str, Any]]
    """Deployments labelled app=istiod, in any namespace."""
    mutating_webhooks: list[dict[str, Any]]
    validating_webhooks: list[dict[str, Any]]
    services: set[tuple[str, str]]
    """(namespace, name) of every Service."""
    ca_secrets: dict[str, dict[str, dict[str, str]]]
    """namespace -> secret name (`cacerts`, `istio-ca-secret`) -> data, for the namespaces that matter."""
    workloads: dict[str, list[str]]
    """injection-enabled namespace -> names of its Deployments."""


def _plain(api_client: client.ApiClient, obj) -> dict[str, Any]:
    return api_client.sanitize_for_serialization(obj)


def read(source_namespace: str, target_namespace: str) -> LiveMesh:
    """Read the live mesh with the ambient kubeconfig (KUBECONFIG / current context)."""
    config.load_kube_config()
    api = client.ApiClient()
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    admission = client.AdmissionregistrationV1Api(api)
    namespaces = {n.metadata.name: dict(n.metadata.labels or {}) for n in core.list_namespace().items}
    crds = {c.metadata.name: {"uid": c.metadata.uid, "labels": dict(c.metadata.labels or {}),
                              "annotations": dict(c.metadata.annotations or {})}
            for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
            if c.metadata.name.endswith(".istio.io")}
    ca_secrets: dict[str, dict[str, dict[str, str]]] = {}
    for ns in (source_namespace, target_namespace):
        if ns in namespaces:
            for secret in core.list_namespaced_secret(ns).items:
                if secret.metadata.name in ("cacerts", "istio-ca-secret"):
                    ca_secrets.setdefault(ns, {})[secret.metadata.name] = dict(secret.data or {})
    injected = [ns for ns, labels in namespaces.items()
                if any(all(labels.get(k) == v for k, v in want.items()) for want in INJECTION_LABELS)]
    return LiveMesh(
        namespaces=namespaces, crds=crds,
        istiod_deployments=[_plain(api, d) for d in apps.list_deployment_for_all_namespaces(
            label_selector="app=istiod").items],
        mutating_webhooks=[_plain(api, w) for w in admission.list_mutating_webhook_configuration().items],
        validating_webhooks=[_plain(api, w) for w in admission.list_validating_webhook_configuration().items],
        services={(s.metadata.namespace, s.metadata.name) for s in core.list_service_for_all_namespaces().items},
        ca_secrets=ca_secrets,
        workloads={ns: sorted(d.metadata.name for d in apps.list_namespaced_deployment(ns).items)
                   for ns in sorted(injected)})


def existing(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of those objects that exist on the cluster (each looked up once, read-only)."""
    from kubernetes import dynamic
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    config.load_kube_config()
    api = dynamic.DynamicClient(client.ApiClient())
    found = set()
    for obj in objects:
        meta = obj["metadata"]
        try:
            resource = api.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
            resource.get(name=meta["name"], namespace=meta.get("namespace"))
        except (NotFoundError, ResourceNotFoundError):
            continue
        found.add((obj["kind"], meta.get("namespace", ""), meta["name"]))
    return found
