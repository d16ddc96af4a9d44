"""Labels and annotations the program puts on objects it declares (pure functions over plain objects)."""

from __future__ import annotations

from typing import Any, Mapping

PROTECTED_LABEL = "kfistio.io/protected"
"""Objects the guard refuses to delete (migration.guard)."""
MADE_HERE = {"kfistio.io/made-by": "legacy-stack"}
"""On what the legacy stack created rather than found (the gateway's objects, a CA Secret copied back): it goes on
declaring them whole."""
PURGE_SELECTOR_LABEL = "operator.istio.io/component"
"""`istioctl uninstall --purge` deletes every Pod (and object) carrying this label."""
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""The kubernetes provider does not wait for the object's readiness (where a later, stronger proof exists)."""
ADOPT_ANNOTATIONS = {"pulumi.com/patchForce": "true"}
"""Adopting an object takes over fields another field manager (istioctl's, kubectl's, a charm's) set with
server-side apply; pulumi-kubernetes does that only when the object carries this annotation. It also lets a create
cut off by a crash be re-applied on resume, over its own earlier field manager."""


def _with_metadata(obj: Mapping[str, Any], field: str, values: Mapping[str, str]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta[field] = {**(meta.get(field) or {}), **values}
    return {**obj, "metadata": meta}


def annotated(obj: Mapping[str, Any], annotations: Mapping[str, str]) -> dict[str, Any]:
    """obj with annotations added."""
    return _with_metadata(obj, "annotations", annotations)


def adoptable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """obj annotated so that this program may take ownership of fields others applied."""
    return annotated(obj, ADOPT_ANNOTATIONS)


def made_here(obj: Mapping[str, Any]) -> dict[str, Any]:
    """obj labelled as created by the legacy stack."""
    return _with_metadata(obj, "labels", MADE_HERE)


def protected(obj: Mapping[str, Any]) -> dict[str, Any]:
    """obj labelled for the guard."""
    return _with_metadata(obj, "labels", {PROTECTED_LABEL: "true"})


def purge_proof(obj: Mapping[str, Any]) -> dict[str, Any]:
    """obj protected, and if it is a Deployment, with pods that `istioctl uninstall --purge` cannot select: it
    deletes every Pod labelled operator.istio.io/component, and the guard cannot refuse pod deletions (controllers
    delete pods all the time), so without this the new istiod would be down until its pods are recreated."""
    obj = protected(obj)
    if obj["kind"] != "Deployment":
        return obj
    template = obj["spec"]["template"]
    labels = {k: v for k, v in (template["metadata"].get("labels") or {}).items() if k != PURGE_SELECTOR_LABEL}
    spec = {**obj["spec"], "template": {**template, "metadata": {**template["metadata"], "labels": labels}}}
    return {**obj, "spec": spec}


def installed_by_istioctl(obj: Mapping[str, Any], version: str, namespace: str, revision: str) -> dict[str, Any]:
    """obj labelled as `istioctl install` labels each object of its control plane when it applies it (istio
    operator/pkg/install, getOwnerLabels; `manifest generate`, which renders the plane here, leaves them out): so
    that Istio's own tools see the plane as an install of version in namespace, and `istioctl uninstall --revision`,
    which prunes by these labels, finds it once the stack has let go of it."""
    return _with_metadata(obj, "labels", {"operator.istio.io/managed": "Reconcile",
                                          "operator.istio.io/version": version,
                                          "install.operator.istio.io/owning-resource-namespace": namespace,
                                          "istio.io/rev": revision, PURGE_SELECTOR_LABEL: "Pilot"})


def proven_by_serving_check(obj: Mapping[str, Any]) -> dict[str, Any]:
    """obj, if it is a Service, without the kubernetes provider's wait for its endpoints: the serving check (istiod
    armed its validator through the apiserver, which reaches it through this Service) is the stronger proof and
    comes before anything that needs it."""
    return annotated(obj, SKIP_AWAIT) if obj["kind"] == "Service" else dict(obj)
