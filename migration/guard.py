"""The guard's objects: a ValidatingAdmissionPolicy that keeps the old charm's hooks from undoing the migration.

The old istio-pilot charm's remove hook runs `istioctl uninstall --purge`, which deletes every Istio CRD (and with
them every CR, that is all user mesh config) and every object labelled operator.istio.io/component in every
namespace -- which includes the new control plane and the gateway. With this policy bound, those DELETEs are denied
by the apiserver itself, whoever sends them, unless the object is first annotated `kfistio.io/allow-delete=true`.
Its install/upgrade path (`istioctl install|upgrade` with istioNamespace=<source>) would start a second istiod in
the source namespace and point Istio's webhooks back at it: creating or updating an istiod Deployment in the source
namespace, or an Istio webhook configuration that calls a service there, is denied too. The legacy stack lifts the
guard (deletes the binding) before it rolls back.

Once the stack hands the mesh over (handOver release or helm), the guard is aimed at the charms of the source
namespace's Juju model, the only ones whose hooks undo the move: the plane's objects may then be deleted by anyone
else (the next owner's `helm uninstall` or `istioctl uninstall --revision` of a retired revision, `istioctl tag
remove`), but not by a service account of the source namespace, which is who a Juju charm there acts as (Juju names
an application's service account after the application, in the model's namespace); nor may those accounts delete
any object of an Istio install outside the source namespace, so a revision the next owner installs is kept from
them too. What no documented upgrade or revision removal deletes stays refused whoever asks: an Istio CRD (its CRs
are user config), the target namespace and the root of trust's Secret. The admission API shows a policy the
requester, the operation and the object, nothing of the cluster's other objects, so the requester is what tells the
charm from the next owner. Pure; components.guard declares them.
"""

from __future__ import annotations

from typing import Any

from migration.live_mesh import CA_SECRET_NAMES
from migration.marks import PROTECTED_LABEL, PURGE_SELECTOR_LABEL

ALLOW_DELETE_ANNOTATION = "kfistio.io/allow-delete"
POLICY = "kfistio-protect-istio"
REFUSAL = "kf-istio-migrate protects"
"""How the guard's refusal of a deletion begins."""
OBJECTS = (("ValidatingAdmissionPolicyBinding", "", POLICY), ("ValidatingAdmissionPolicy", "", POLICY))
"""The guard's object ids, binding first: the order a rollback removes them in."""

_ISTIO_CRD = ("request.resource.resource == 'customresourcedefinitions' && "
              "oldObject.metadata.name.endsWith('.istio.io')")
_MARKED = (f"has(oldObject.metadata.labels) && '{PROTECTED_LABEL}' in oldObject.metadata.labels && "
           f"oldObject.metadata.labels['{PROTECTED_LABEL}'] == 'true'")
_KEPT_FROM_ANYONE = (f"request.resource.resource == 'namespaces' || (request.resource.resource == 'secrets' && "
                     f"oldObject.metadata.name in {list(CA_SECRET_NAMES)})")
"""What no documented upgrade deletes, refused whoever asks once handed over (with the marked label): the target
namespace and the root of trust's Secrets (migration.live_mesh.CA_SECRET_NAMES: losing one mints a new root)."""
_ALLOWED = (f"has(oldObject.metadata.annotations) && '{ALLOW_DELETE_ANNOTATION}' in oldObject.metadata.annotations && "
            f"oldObject.metadata.annotations['{ALLOW_DELETE_ANNOTATION}'] == 'true'")
_DERIVED = "request.resource.resource in ['endpoints', 'endpointslices']"
"""Never refused: a Service's endpoints, which carry its labels (the endpoint controllers copy them) and which the
garbage collector and those controllers delete with it (a refused one holds a foreground deletion of the Service
forever)."""


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


def model_service_accounts(source: str) -> str:
    """The group of every service account in the source namespace: a Juju model's charms act as one of them."""
    return f"system:serviceaccounts:{source}"


def _protected(source: str, handed_over: bool) -> str:
    """Which DELETEs the guard refuses: while the stack holds the mesh, of every Istio CRD and marked object; once
    handed over, of an Istio CRD, the target namespace and the root's Secret whoever asks, and when a service
    account of the source namespace asks, of the marked objects and of every object of an Istio install outside the
    source namespace (what `istioctl uninstall --purge` selects by its component label), so that a plane the next
    owner installed later is as safe from the old charms as the moved one."""
    if not handed_over:
        return f"({_ISTIO_CRD}) || ({_MARKED})"
    from_model = f"'{model_service_accounts(source)}' in request.userInfo.groups"
    installed = (f"request.namespace != '{source}' && has(oldObject.metadata.labels) && "
                 f"'{PURGE_SELECTOR_LABEL}' in oldObject.metadata.labels")
    return (f"({_ISTIO_CRD}) || (({_MARKED}) && {_KEPT_FROM_ANYONE}) || "
            f"({from_model} && (({_MARKED}) || ({installed})))")


def _why(source: str, handed_over: bool) -> str:
    if not handed_over:
        return ("Istio CRDs and the migrated control plane are not deleted (that would delete user config or the "
                "mesh)")
    return (f"the charms of the {source} model do not delete the moved mesh, and nobody deletes an Istio CRD, its "
            f"namespace or its root of trust (that would delete user config or the mesh)")


def guard_objects(source: str, target: str, handed_over: bool = False) -> list[dict[str, Any]]:
    """The policy and its binding (pure), for a control plane moved from source to target namespace; handed_over:
    aimed at the source model's charms (the module's docstring)."""
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
                      "expression": (f"request.operation != 'DELETE' || {_DERIVED} || "
                                     f"!({_protected(source, handed_over)}) || ({_ALLOWED})"),
                      "messageExpression": (f"'{REFUSAL} ' + request.resource.resource + ' ' + "
                                            f"oldObject.metadata.name + ': {_why(source, handed_over)}; annotate it "
                                            f"{ALLOW_DELETE_ANNOTATION}=true first if you really mean it'"),
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
