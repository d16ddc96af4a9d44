"""The guard: a ValidatingAdmissionPolicy that refuses to delete Istio CRDs or the new control plane.

The old istio-pilot charm's remove hook runs `istioctl uninstall --purge`, which deletes every Istio CRD (and with
them every CR, that is all user mesh config) and every object labelled operator.istio.io/component in every
namespace -- which includes the new control plane. With this policy bound, those DELETEs are denied by the
apiserver itself, whoever sends them, unless the object is first annotated `kfistio.io/allow-delete=true`.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components import PACKAGE
from components.objects import adoptable, child_options, declare

PROTECTED_LABEL = "kfistio.io/protected"
ALLOW_DELETE_ANNOTATION = "kfistio.io/allow-delete"
POLICY = "kfistio-protect-istio"

_PROTECTED = (f"(request.resource.resource == 'customresourcedefinitions' && "
              f"oldObject.metadata.name.endsWith('.istio.io')) || "
              f"(has(oldObject.metadata.labels) && '{PROTECTED_LABEL}' in oldObject.metadata.labels && "
              f"oldObject.metadata.labels['{PROTECTED_LABEL}'] == 'true')")
_ALLOWED = (f"has(oldObject.metadata.annotations) && '{ALLOW_DELETE_ANNOTATION}' in oldObject.metadata.annotations && "
            f"oldObject.metadata.annotations['{ALLOW_DELETE_ANNOTATION}'] == 'true'")


def guard_objects() -> list[dict[str, Any]]:
    """The policy and its binding (pure)."""
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": POLICY},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [
                      {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["*"]}]},
                  "validations": [{
                      "expression": f"!({_PROTECTED}) || ({_ALLOWED})",
                      "messageExpression": (f"'kf-istio-migrate protects ' + request.resource.resource + ' ' + "
                                            f"oldObject.metadata.name + ': Istio CRDs and the migrated control plane "
                                            f"are not deleted (that would delete user config or the mesh); annotate "
                                            f"it {ALLOW_DELETE_ANNOTATION}=true first if you really mean it'"),
                      "reason": "Forbidden"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POLICY},
         "spec": {"policyName": POLICY, "validationActions": ["Deny"]}},
    ]


def protected(obj: dict[str, Any]) -> dict[str, Any]:
    """obj labelled for the guard."""
    meta = dict(obj["metadata"])
    meta["labels"] = {**(meta.get("labels") or {}), PROTECTED_LABEL: "true"}
    return {**obj, "metadata": meta}


PURGE_SELECTOR_LABEL = "operator.istio.io/component"


def purge_proof(obj: dict[str, Any]) -> dict[str, Any]:
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


class Guard(pulumi.ComponentResource):
    """Declared after what it protects. Its objects are `protect`ed, like the plane: `pulumi destroy` of the
    migrated stack is refused before it deletes anything (it would leave the default injector calling no istiod)."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"{PACKAGE}:migration:Guard", name, None, opts)
        policy, binding = guard_objects()
        # adoptable: if a crash cuts the create off, the resumed update re-applies over its own earlier manager.
        declared_policy = declare(name, adoptable(policy), child_options(self, opts, protect=True))
        declare(name, adoptable(binding), child_options(self, opts, depends_on=[declared_policy], protect=True))
        self.register_outputs({"policy": POLICY})
