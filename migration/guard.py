"""The guard's objects: a ValidatingAdmissionPolicy that refuses to delete Istio CRDs or the new control plane.

The old istio-pilot charm's remove hook runs `istioctl uninstall --purge`, which deletes every Istio CRD (and with
them every CR, that is all user mesh config) and every object labelled operator.istio.io/component in every
namespace -- which includes the new control plane. With this policy bound, those DELETEs are denied by the
apiserver itself, whoever sends them, unless the object is first annotated `kfistio.io/allow-delete=true`.
Pure; components.guard declares them.
"""

from __future__ import annotations

from typing import Any

from migration.marks import PROTECTED_LABEL

ALLOW_DELETE_ANNOTATION = "kfistio.io/allow-delete"
POLICY = "kfistio-protect-istio"
OBJECTS = (("ValidatingAdmissionPolicyBinding", "", POLICY), ("ValidatingAdmissionPolicy", "", POLICY))
"""The guard's object ids, binding first: the order a rollback removes them in."""

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
