"""The guard's objects: a ValidatingAdmissionPolicy that keeps the old charm's hooks from undoing the migration.

The old istio-pilot charm's remove hook runs `istioctl uninstall --purge`, which deletes every Istio CRD (and with
them every CR, that is all user mesh config) and every object labelled operator.istio.io/component in every
namespace -- which includes the new control plane and the gateway. With this policy bound, those DELETEs are denied
by the apiserver itself, whoever sends them, unless the object is first annotated `kfistio.io/allow-delete=true`.
Its install/upgrade path (`istioctl install|upgrade` with istioNamespace=<source>) would start a second istiod in
the source namespace and point Istio's webhooks back at it: creating or updating an istiod Deployment in the source
namespace, or an Istio webhook configuration that calls a service there, is denied too. The legacy stack lifts the
guard (deletes the binding) before it rolls back. Pure; components.guard declares them.
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


def _no_old_plane(source: str, target: str) -> list[dict[str, str]]:
    """Validations refusing a control plane (istiod, Istio webhooks) in the source namespace again."""
    how = (f"the Istio control plane moved to {target} (kf-istio-migrate, stack migrated); a second one in {source} "
           f"would take injection back: do not refresh, reconfigure or reinstall the old istio-pilot charm "
           f"(docs/runbook.md, step 6); to go back, run the legacy stack (step 7)")
    writes = "request.operation in ['CREATE', 'UPDATE']"
    istiod = (f"{writes} && request.resource.resource == 'deployments' && request.namespace == '{source}' && "
              f"has(object.metadata.labels) && 'app' in object.metadata.labels && "
              f"object.metadata.labels['app'] == 'istiod'")
    webhooks = (f"{writes} && request.resource.resource.endsWith('webhookconfigurations') && "
                f"has(object.webhooks) && object.webhooks.exists(w, w.name.endsWith('.istio.io') && "
                f"has(w.clientConfig.service) && w.clientConfig.service.namespace == '{source}')")
    return [{"expression": f"!({istiod})", "message": f"kf-istio-migrate refuses an istiod in {source}: {how}",
             "reason": "Forbidden"},
            {"expression": f"!({webhooks})",
             "message": f"kf-istio-migrate refuses Istio webhooks calling {source}: {how}", "reason": "Forbidden"}]


def guard_objects(source: str, target: str) -> list[dict[str, Any]]:
    """The policy and its binding (pure), for a control plane moved from source to target namespace."""
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": POLICY},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [
                      {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["DELETE"], "resources": ["*"]},
                      {"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
                       "resources": ["deployments"]},
                      {"apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
                       "operations": ["CREATE", "UPDATE"],
                       "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]}]},
                  "validations": [{
                      "expression": f"request.operation != 'DELETE' || !({_PROTECTED}) || ({_ALLOWED})",
                      "messageExpression": (f"'kf-istio-migrate protects ' + request.resource.resource + ' ' + "
                                            f"oldObject.metadata.name + ': Istio CRDs and the migrated control plane "
                                            f"are not deleted (that would delete user config or the mesh); annotate "
                                            f"it {ALLOW_DELETE_ANNOTATION}=true first if you really mean it'"),
                      "reason": "Forbidden"}, *_no_old_plane(source, target)]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POLICY},
         "spec": {"policyName": POLICY, "validationActions": ["Deny"]}},
    ]


def lift_probe(source: str) -> dict[str, Any]:
    """A Deployment the guard refuses (an istiod in the source namespace), never created: the rollback dry-runs it
    on the server until it is admitted, the proof that the deleted binding no longer applies (the API server's
    admission sees a deleted binding a moment after the delete returns, and the way back creates an istiod there)."""
    labels = {"app": "istiod"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kfistio-guard-lifted-probe", "namespace": source, "labels": labels},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "probe", "image": "probe"}]}}}}
