"""Recorded live meshes for planning tests: what preflight reads after the charm's `istioctl install`."""

from __future__ import annotations

import copy
import json

from migration import render
from migration.config import from_mapping
from migration.gateway import GatewayLayout, gateway_objects
from migration.live_mesh import LiveMesh, object_id
from tests.fixtures import recorded

PROFILES = ("kubeflow-user-000", "kubeflow-user-001")
CA = {"ca-cert.pem": "Uk9PVA==", "ca-key.pem": "S0VZ", "root-cert.pem": "Uk9PVA==", "cert-chain.pem": ""}
CFG = from_mapping({"topology": "migrated"})
LEGACY_ISTIOD = "istiod.kubeflow.svc:15012"
NEW_ISTIOD = "istiod-kf-1-30.istio-system.svc:15012"


def charm_install() -> LiveMesh:
    """Istio as `istioctl install` leaves it (active tag injector, deactivated revision injector, default
    validator), istiod's CA Secret, the gateway charm's objects, and two injected profile namespaces with two
    workloads each."""
    objects = recorded.renders(CFG).legacy
    injector = next(o for o in objects if o["kind"] == "MutatingWebhookConfiguration")
    tag = copy.deepcopy(injector)
    tag["metadata"]["name"] = "istio-revision-tag-default-kubeflow"
    tag["metadata"]["labels"]["istio.io/tag"] = "default"
    never = {"matchLabels": {"istio.io/deactivated": "never-match"}}
    for hook in injector["webhooks"]:
        hook["namespaceSelector"], hook["objectSelector"] = never, never
    validator = next(o for o in objects if o["kind"] == "ValidatingWebhookConfiguration")
    default_validator = copy.deepcopy(validator)
    default_validator["metadata"]["name"] = "istiod-default-validator"
    default_validator["webhooks"][0]["objectSelector"] = {
        "matchExpressions": [{"key": "istio.io/rev", "operator": "DoesNotExist"}]}
    gateway = gateway_objects(GatewayLayout(namespace="kubeflow", istiod_address="istiod.kubeflow.svc:15012",
                                            revision="default", proxy_image="proxyv2", gateway_cr_namespace="kubeflow"))
    present = [*render.control_plane(objects), tag, default_validator, *gateway]
    return LiveMesh(
        namespaces={"kubeflow": {}, "default": {}, **{ns: {"istio-injection": "enabled"} for ns in PROFILES}},
        crds={c["metadata"]["name"]: {"uid": f"uid-{c['metadata']['name']}", "labels": {"app": "istio"},
                                      "annotations": {"helm.sh/resource-policy": "keep"}}
              for c in render.crds(objects)},
        istiod_deployments=[o for o in objects if o["kind"] == "Deployment"],
        mutating_webhooks=[injector, tag], validating_webhooks=[validator, default_validator],
        ca_secrets={"kubeflow": {"istio-ca-secret": dict(CA)}},
        pods=[pod(ns, f"{name}-7d4b9-x{i}", ("ReplicaSet", f"{name}-7d4b9"), LEGACY_ISTIOD)
              for ns in PROFILES for i, name in enumerate(("notebook-0", "notebook-1"))],
        controllers={**{("ReplicaSet", ns, f"{name}-7d4b9"): {"owner": ("Deployment", name), "replicas": 1}
                        for ns in PROFILES for name in ("notebook-0", "notebook-1")},
                     **{("Deployment", ns, name): {"owner": None, "replicas": 1}
                        for ns in PROFILES for name in ("notebook-0", "notebook-1")}},
        present=frozenset(object_id(o) for o in present))


def empty_cluster(model: bool = True) -> LiveMesh:
    """A cluster with no Istio at all (where the legacy and dev stacks create everything); with model, the Juju
    model's namespace `kubeflow` exists, as Juju creates it before any charm runs."""
    return LiveMesh(namespaces={"default": {}, **({"kubeflow": {}} if model else {})}, crds={}, istiod_deployments=[],
                    mutating_webhooks=[], validating_webhooks=[], ca_secrets={})


def pod(namespace: str, name: str, controller: tuple[str, str] | None, address: str | None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        phase: str = "Running") -> dict:
    """A pod as migration.workloads.slim leaves it: controlled by controller (kind, name), its istio-proxy (if
    address) pointed at address, as istiod's injection template writes it (PROXY_CONFIG and CA_ADDR)."""
    env = [{"name": "CA_ADDR", "value": address},
           {"name": "PROXY_CONFIG", "value": json.dumps({"discoveryAddress": address})}] if address else []
    return {"metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}", "labels": labels or {},
                         "annotations": annotations or {}, "deletionTimestamp": None,
                         "ownerReferences": [{"kind": controller[0], "name": controller[1], "controller": True}]
                         if controller else None},
            "spec": {"hostNetwork": False, "containers": [{"name": "istio-proxy", "env": env}] if address else []},
            "status": {"phase": phase, "ready": phase == "Running"}}
