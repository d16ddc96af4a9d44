"""Declare one rendered Kubernetes object as the matching typed pulumi_kubernetes resource."""

from __future__ import annotations

import importlib
import re
from typing import Any, Mapping

import pulumi
import pulumi_kubernetes as k8s

# (apiVersion, kind) -> typed resource class, for every kind istioctl renders for a control plane, plus what the
# gateway and the migration declare. Istio custom resources go through CustomResource.
_TYPED = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"):
        k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"):
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
}
# Top-level object fields -> the constructors' keyword names.
_FIELDS = {"metadata": "metadata", "spec": "spec", "data": "data", "binaryData": "binary_data",
           "stringData": "string_data", "type": "type", "immutable": "immutable", "rules": "rules",
           "roleRef": "role_ref", "subjects": "subjects", "webhooks": "webhooks",
           "aggregationRule": "aggregation_rule", "secrets": "secrets",
           "automountServiceAccountToken": "automount_service_account_token"}


def child_options(parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, **extra) -> pulumi.ResourceOptions:
    """Options for a component's child: parented, and depending on whatever the component depends on, so the
    engine orders each child after the component's dependencies (not only the component itself)."""
    depends_on = list(opts.depends_on or []) if opts and isinstance(opts.depends_on, list) else []
    depends_on += extra.pop("depends_on", [])
    return pulumi.ResourceOptions(parent=parent, depends_on=depends_on, **extra)


def object_id(obj: Mapping[str, Any]) -> str:
    """The id pulumi-kubernetes uses for import: `name` (cluster-scoped) or `namespace/name`."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def resource_name(prefix: str, obj: Mapping[str, Any]) -> str:
    """A stable, unique Pulumi name: prefix, kind, namespace (if any) and name, lower-cased."""
    meta = obj["metadata"]
    parts = [prefix, obj["kind"].lower(), meta.get("namespace", ""), meta["name"]]
    return re.sub(r"[^a-z0-9.-]+", "-", "-".join(p for p in parts if p).lower())


def declare(prefix: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions,
            patch: bool = False) -> pulumi.CustomResource:
    """Declare obj as a resource named after prefix and obj, with opts (with patch: a server-side-apply patch of
    an existing object, changing only the fields obj names)."""
    key = (obj["apiVersion"], obj["kind"])
    name = resource_name(prefix, obj)
    fields = {kw: obj[field] for field, kw in _FIELDS.items() if field in obj}
    if patch:  # pulumi_kubernetes.<group>.<version>.<Kind>Patch, beside the kind's own class
        typed = _TYPED[key]
        return getattr(importlib.import_module(typed.__module__.rsplit(".", 1)[0]), f"{typed.__name__}Patch")(
            name, opts=opts, **fields)
    if key in _TYPED:
        return _TYPED[key](name, opts=opts, **fields)
    unknown = set(obj) - set(_FIELDS) - {"apiVersion", "kind", "status"}
    if unknown:
        raise ValueError(f"{obj['kind']} {object_id(obj)} has fields this program cannot declare: {sorted(unknown)}")
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"], opts=opts,
                                            metadata=obj["metadata"], spec=obj.get("spec"))
