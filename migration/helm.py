"""The hand-over to Istio's Helm charts: which objects each chart's release takes, the ownership metadata Helm's
adoption check reads on them, and the values file that makes the charts render what runs (pure functions).

istioctl renders the very charts Helm installs (`base`, and `istiod` from manifests/charts/istio-control/
istio-discovery), always as a release named `istio`: every object it renders already names its chart in the
`helm.sh/chart` label and carries `app.kubernetes.io/managed-by: Helm`. What Helm adds for a named release is the
release's name where the charts print `.Release.Name` (the `app.kubernetes.io/instance` and `release` labels, on
the objects and on istiod's pod template) and the two `meta.helm.sh/*` annotations its adoption check requires.
The values file is the one istioctl rendered the plane with (the `original-values` the istiod chart writes into its
`values-<revision>` ConfigMap), so `helm template` of either chart with it reproduces the plane field for field.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

import yaml

from migration.marks import PROTECTED_LABEL

CHART_LABEL = "helm.sh/chart"
MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
ISTIOCTL_RELEASE = "istio"
"""The release name istioctl renders every chart with (istio.io/istio operator/pkg/render)."""
RELEASE_LABELS = ("app.kubernetes.io/instance", "release")
"""The labels the charts fill with `.Release.Name`."""
CHARTS = ("base", "istiod")
UNVALIDATED_VALUES = ("base.validationFailurePolicy", "Fail")
"""The one chart value the hand-over adds. Without it the istiod chart renders its validator with failurePolicy
Ignore on install (a Helm install into a live mesh is one), over the Fail istiod set once it served: Helm's
server-side apply would conflict with istiod's field manager, or with --force-conflicts disarm validation until
istiod re-arms it. istioctl's schema does not know the key, so the plane is rendered with it as an unvalidated value
(migration.render), and the value reaches the values file through the render."""

DEFAULT_REVISION = "defaultRevision"
"""The base chart's value naming the revision its default validator (`istiod-default-validator`) calls. istioctl
renders a revisioned plane with it empty, and makes the default validator outside the charts; set to the moved
plane's revision, the base chart renders that validator, so its release owns it and Istio's Helm upgrade guide's
last step, `helm upgrade istio-base --set defaultRevision=<new>`, moves it in place."""

FORMER_APPLIERS = ("pulumi-kubernetes", "istio-operator")
"""Field managers whose ownership of the handed-over objects ends with the hand-over: the stack's (pulumi-kubernetes
names one per resource, `pulumi-kubernetes-<suffix>`) and istioctl's (`istio-operator`, the charm's install, on the
CRDs). Helm 4 applies server-side: a field another manager still owned would be a conflict at the first install
wherever the API server keeps the value in its own normal form (a memory request of 2048Mi stored as 2Gi, a webhook
rule with its default scope), and at every later upgrade that changes it. The managers that keep writing (istiod's
`pilot-discovery`, the API server and controllers) keep their fields."""

TOOL_MANAGER = "kf-istio-migrate"
TOOL_LABELS = (PROTECTED_LABEL,)
TOOL_ANNOTATIONS = ("pulumi.com/",)


@dataclasses.dataclass(frozen=True)
class HelmReleases:
    """The two releases that take the plane over, both in the plane's namespace."""

    base: str
    istiod: str
    namespace: str

    def release_of(self, chart: str) -> str:
        return {"base": self.base, "istiod": self.istiod}[chart]


def chart_of(obj: Mapping[str, Any]) -> str | None:
    """`base` or `istiod` for an object one of those charts rendered (its `helm.sh/chart` label, `<chart>-<version>`),
    else None: what istioctl adds outside the charts (the default revision tag's injector, the default validator)
    and what the migration adds (the namespace, the copied CA) stay outside any release."""
    label = (obj["metadata"].get("labels") or {}).get(CHART_LABEL, "")
    chart = label.rsplit("-", 1)[0]
    return chart if chart in CHARTS else None


def _released_labels(labels: Mapping[str, str], release: str) -> dict[str, str]:
    return {k: (release if k in RELEASE_LABELS and v == ISTIOCTL_RELEASE else v) for k, v in labels.items()}


def owned_by_release(obj: Mapping[str, Any], releases: HelmReleases) -> dict[str, Any]:
    """obj as its chart's release renders it, with the metadata Helm adopts it by; obj itself if no chart rendered
    it. A Deployment's pod template gets the release's name too, as the chart renders it."""
    chart = chart_of(obj)
    if chart is None:
        return dict(obj)
    release = releases.release_of(chart)
    meta = dict(obj["metadata"])
    meta["labels"] = {**_released_labels(meta.get("labels") or {}, release), MANAGED_BY[0]: MANAGED_BY[1]}
    meta["annotations"] = {**(meta.get("annotations") or {}), RELEASE_NAME: release,
                           RELEASE_NAMESPACE: releases.namespace}
    released = {**obj, "metadata": meta}
    if obj["kind"] == "Deployment":
        template = obj["spec"]["template"]
        pod_meta = {**template["metadata"],
                    "labels": _released_labels(template["metadata"].get("labels") or {}, release)}
        released["spec"] = {**obj["spec"], "template": {**template, "metadata": pod_meta}}
    return released


def values(plane: list[Mapping[str, Any]], revision: str) -> dict[str, Any]:
    """The values both charts take: what istioctl rendered the plane with (the istiod chart's `values-<revision>`
    ConfigMap, `original-values`)."""
    name = f"values-{revision}"
    found = [o for o in plane if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name]
    if not found:
        raise ValueError(f"the rendered plane has no ConfigMap {name}: istioctl no longer records the values it "
                         f"rendered with, so the Helm values cannot be derived from it")
    return json.loads(found[0]["data"]["original-values"])


def values_yaml(plane: list[Mapping[str, Any]], revision: str) -> str:
    """values() as the YAML file `helm upgrade --values` reads."""
    return yaml.safe_dump(values(plane, revision), sort_keys=True)


def ownership_left(meta: Mapping[str, Any], api_version: str) -> list[dict[str, Any]]:
    """An object's managedFields (from its metadata) without the former appliers' entries, plus one for this tool
    owning the marks it put on the object (the guard's label, its pulumi.com annotations): those stay as they are
    (Helm renders none of them, so it never applies over them), and the object keeps an owner of record. An object
    left with no entry at all would be handed to a `before-first-apply` manager at Helm's first install, owning
    every field and conflicting with every later upgrade."""
    entries = [dict(e) for e in meta.get("managedFields") or []
               if not str(e.get("manager", "")).startswith(FORMER_APPLIERS)]
    labels = [k for k in meta.get("labels") or {} if k in TOOL_LABELS]
    annotations = [k for k in meta.get("annotations") or {} if k.startswith(TOOL_ANNOTATIONS)]
    fields = {**({"f:labels": {f"f:{k}": {} for k in labels}} if labels else {}),
              **({"f:annotations": {f"f:{k}": {} for k in annotations}} if annotations else {})}
    if fields:
        entries.append({"manager": TOOL_MANAGER, "operation": "Update", "apiVersion": api_version,
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": fields}})
    return entries


def object_refs(objects: list[Mapping[str, Any]]) -> list[str]:
    """`apiVersion/kind/namespace/name` of each object a chart renders (namespace empty when cluster-scoped), the
    arguments of `python -m live.disown`."""
    return [f"{o['apiVersion']}/{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}"
            for o in objects if chart_of(o)]
