"""Fields of the objects the stacks declare that another owner writes once the object exists.

The stack declares each such field at its first value and leaves it to that owner afterwards (Pulumi
`ignoreChanges`), so that neither `pulumi refresh` followed by a preview nor `pulumi up --refresh` proposes to set it
back. Two owners of one field fight: each write of ours would be undone by the owner, and for istiod's validators the
loser in between would be validation itself.
"""

from __future__ import annotations

from typing import Any, Mapping

REVISION_LABEL = "istio.io/rev"


def fields_owned_elsewhere(obj: Mapping[str, Any]) -> list[str]:
    """The `ignoreChanges` property paths for obj (empty when the stack owns all it declares)."""
    if obj["kind"] == "Service":
        # The API server assigns a Service its cluster IPs on create. An adopted Service keeps its own; declaring
        # none would read as a change that forces replacement, which an import may not do.
        return ["spec.clusterIP", "spec.clusterIPs"]
    if obj["kind"] == "ValidatingWebhookConfiguration" and REVISION_LABEL in (obj["metadata"].get("labels") or {}):
        # istiod's validation controller owns the failurePolicy of its revision's validators: it turns the rendered
        # Ignore into Fail once the API server has delivered it an invalid object and it rejected it, and turns it
        # back to Fail whenever someone resets it. The serving check waits for that very flip, so the stack creates
        # the validator with Ignore and must never write Ignore again.
        return ["webhooks[*].failurePolicy"]
    return []
