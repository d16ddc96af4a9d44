"""Preflight, read-only: the live mesh on the target cluster, read once per run. Plain data out (migration.live_mesh);
deciding happens in migration.decide.

Works whether the legacy mesh was installed by the istio-pilot charm (`istioctl install`) or by the legacy stack.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from kubernetes import client, dynamic
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from live.target import api_client
from migration.marks import MADE_HERE
from migration.live_mesh import CA_SECRET_NAMES, LiveMesh, ObjectId
from migration.target import KubeTarget
from migration.workloads import slim

def istio_installs(target: KubeTarget, namespace: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Which Istio runs where, read before rendering: every istiod Deployment (label app=istiod, any namespace), and
    what the istioctl install in namespace set (its `values` ConfigMap's original-values), if there is one."""
    api = api_client(target)
    deployments = client.AppsV1Api(api).list_deployment_for_all_namespaces(label_selector="app=istiod").items
    cm = _get(lambda: client.CoreV1Api(api).read_namespaced_config_map("values", namespace))
    text = (cm.data or {}).get("original-values") if cm is not None else None
    return [api.sanitize_for_serialization(d) for d in deployments], json.loads(text) if text else None


def read(target: KubeTarget, ca_namespaces: Iterable[str], look_up: Iterable[dict[str, Any]],
         istiod_deployments: list[dict[str, Any]]) -> LiveMesh:
    """Read the live mesh: cluster-wide lists, the CA Secrets of ca_namespaces, and which of look_up exist
    (istiod_deployments: from istio_installs, read once before rendering)."""
    api = api_client(target)
    resources = dynamic.DynamicClient(api).resources  # API discovery, once
    plain = api.sanitize_for_serialization
    core = client.CoreV1Api(api)
    admission = client.AdmissionregistrationV1Api(api)
    view = pod_view(api)
    existing = _existing(resources, look_up)
    namespaces = view["namespaces"]
    listed = client.ApiextensionsV1Api(api).list_custom_resource_definition(_preload_content=False)
    crds = {c["metadata"]["name"]: {"uid": c["metadata"]["uid"], "labels": c["metadata"].get("labels") or {},
                                    "annotations": c["metadata"].get("annotations") or {}, "spec": c["spec"]}
            for c in json.loads(listed.data)["items"] if c["metadata"]["name"].endswith(".istio.io")}
    ca_secrets: dict[str, dict[str, dict[str, str]]] = {}
    for ns in ca_namespaces:
        for name in CA_SECRET_NAMES if ns in namespaces else ():
            secret = _get(lambda: core.read_namespaced_secret(name, ns))
            if secret is not None:
                ca_secrets.setdefault(ns, {})[name] = dict(secret.data or {})
                existing[("Secret", ns, name)] = plain(secret)
    return LiveMesh(
        namespaces=namespaces, crds=crds,
        istiod_deployments=istiod_deployments,
        mutating_webhooks=view["webhooks"],
        validating_webhooks=[plain(w) for w in admission.list_validating_webhook_configuration().items],
        ca_secrets=ca_secrets, pods=view["pods"],
        controllers=view["controllers"], serves_admission_policies=_serves_admission_policies(resources),
        kubernetes_version=client.VersionApi(api).get_code().git_version,
        present=frozenset(existing), made_here=frozenset(k for k, o in existing.items()
                                                         if MADE_HERE.items() <= (o["metadata"].get("labels") or {}).items()),
        proxy_env={k: c.get("env") or [] for k, o in existing.items() if k[0] == "Deployment"
                   for c in o["spec"]["template"]["spec"]["containers"] if c["name"] == "istio-proxy"})


def _serves_admission_policies(resources) -> bool:
    try:
        resources.get(api_version="admissionregistration.k8s.io/v1", kind="ValidatingAdmissionPolicy")
        return True
    except ResourceNotFoundError:
        return False


def pods(api: client.ApiClient, namespace: str | None = None) -> list[dict[str, Any]]:
    """Every pod (of namespace, or of the cluster), slimmed; read as raw JSON (building the client's models for
    thousands of pods costs seconds)."""
    core = client.CoreV1Api(api)
    response = (core.list_namespaced_pod(namespace, _preload_content=False) if namespace
                else core.list_pod_for_all_namespaces(_preload_content=False))
    return [slim(p) for p in json.loads(response.data)["items"]]


CONTROLLER_KINDS = {"ReplicaSet": ("AppsV1Api", "replica_set"), "Deployment": ("AppsV1Api", "deployment"),
                    "StatefulSet": ("AppsV1Api", "stateful_set"), "DaemonSet": ("AppsV1Api", "daemon_set"),
                    "Job": ("BatchV1Api", "job")}


def controllers(api: client.ApiClient, namespace: str | None = None) -> dict[ObjectId, dict[str, Any]]:
    """Every object a pod's controller chain can pass through (of namespace, or of the cluster), with its own
    controller and update strategy (raw JSON, as for pods)."""
    found = {}
    for kind, (group, resource) in CONTROLLER_KINDS.items():
        listing = getattr(client, group)(api)
        response = (getattr(listing, f"list_namespaced_{resource}")(namespace, _preload_content=False) if namespace
                    else getattr(listing, f"list_{resource}_for_all_namespaces")(_preload_content=False))
        for item in json.loads(response.data)["items"]:
            meta = item["metadata"]
            ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
            found[(kind, meta["namespace"], meta["name"])] = {
                "owner": (ref["kind"], ref["name"]) if ref else None,
                "strategy": (item["spec"].get("updateStrategy") or {}).get("type"),
                "replicas": item["spec"].get("replicas", item.get("status", {}).get("desiredNumberScheduled"))}
    return found


def pod_view(api: client.ApiClient, namespace: str | None = None) -> dict[str, Any]:
    """What migration.workloads.offenders reads: pods, their controllers, namespace labels, injector webhooks (of
    namespace, or of the cluster)."""
    core = client.CoreV1Api(api)
    listed = [core.read_namespace(namespace)] if namespace else core.list_namespace().items
    return {"pods": pods(api, namespace), "controllers": controllers(api, namespace),
            "namespaces": {n.metadata.name: dict(n.metadata.labels or {}) for n in listed},
            "webhooks": [api.sanitize_for_serialization(w) for w in
                         client.AdmissionregistrationV1Api(api).list_mutating_webhook_configuration().items]}


def _get(read):
    try:
        return read()
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def _existing(resources, objects: Iterable[dict[str, Any]]) -> dict[ObjectId, dict[str, Any]]:
    """(kind, namespace, name) -> the live object, of those objects that exist on the cluster (each looked up once,
    read-only)."""
    found = {}
    for obj in objects:
        meta = obj["metadata"]
        try:
            live = resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).get(
                name=meta["name"], namespace=meta.get("namespace"))
        except (NotFoundError, ResourceNotFoundError):
            continue
        found[(obj["kind"], meta.get("namespace", ""), meta["name"])] = live.to_dict()
    return found
