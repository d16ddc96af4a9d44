"""Recorded live meshes for planning tests: what preflight reads after the charm's `istioctl install`."""

from __future__ import annotations

import copy

from migration import render
from migration.config import from_mapping
from migration.gateway import GatewayLayout, gateway_objects
from migration.mesh import LiveMesh, object_id
from tests.fixtures import recorded

PROFILES = ("kubeflow-user-000", "kubeflow-user-001")
CA = {"ca-cert.pem": "Uk9PVA==", "ca-key.pem": "S0VZ", "root-cert.pem": "Uk9PVA==", "cert-chain.pem": ""}
CFG = from_mapping({"topology": "migrated"})


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
        workloads={ns: ["notebook-0", "notebook-1"] for ns in PROFILES},
        present=frozenset(object_id(o) for o in present))


def empty_cluster() -> LiveMesh:
    """A fresh cluster: no Istio at all (where the legacy and dev stacks create everything)."""
    return LiveMesh(namespaces={"default": {}}, crds={}, istiod_deployments=[], mutating_webhooks=[],
                    validating_webhooks=[], ca_secrets={}, workloads={})
