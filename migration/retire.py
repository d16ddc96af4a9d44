"""Which objects a retired revision leaves for the engine to delete, and what must no longer call it (pure).

After the migrated stack's upgrade (migration.version_policy), the revision it replaced is no longer declared and the
Pulumi engine deletes its objects at the end of the update; live.retire first lets the guard let them go. Its own
objects are selected by the labels `istioctl install` gives a plane's objects (migration.marks.installed_by_istioctl)
and the guard's: not the gateway (its component is not Pilot), not what the new revision re-declares (relabelled for
it first), not the default tag's injector (labelled istio.io/tag, switched, never deleted).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from migration.marks import PROTECTED_LABEL, PURGE_SELECTOR_LABEL
from migration.render import revision_service
from migration.webhooks import called_service

KINDS = ("serviceaccounts", "configmaps", "services", "deployments.apps", "poddisruptionbudgets.policy",
         "horizontalpodautoscalers.autoscaling", "roles.rbac.authorization.k8s.io",
         "rolebindings.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
         "clusterrolebindings.rbac.authorization.k8s.io",
         "mutatingwebhookconfigurations.admissionregistration.k8s.io",
         "validatingwebhookconfigurations.admissionregistration.k8s.io")
"""The kinds of a revision's own objects (components.control_plane.PHASES, without what revisions share)."""


def selector(revision: str) -> str:
    """The retired revision's own plane objects, as a label selector."""
    return f"istio.io/rev={revision},{PURGE_SELECTOR_LABEL}=Pilot,{PROTECTED_LABEL}=true,!istio.io/tag"


def _own(meta: Mapping[str, Any], revision: str) -> bool:
    labels = meta.get("labels") or {}
    return (labels.get("istio.io/rev") == revision and labels.get(PURGE_SELECTOR_LABEL) == "Pilot"
            and labels.get(PROTECTED_LABEL) == "true" and "istio.io/tag" not in labels)


def still_calling(webhook_configurations: Iterable[Mapping[str, Any]], revision: str, namespace: str) -> list[str]:
    """The webhook configurations, other than the retired revision's own, with a webhook calling its istiod: after
    the switch there is none, unless the cluster is ahead of the stack's state (an update killed after its switch
    and resumed without `pulumi refresh`, whose diff then missed the write the state lost)."""
    service = (namespace, revision_service(revision))
    return sorted(c["metadata"]["name"] for c in webhook_configurations if not _own(c["metadata"], revision)
                  and any(called_service(h) == service for h in c.get("webhooks") or []))
