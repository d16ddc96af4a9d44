"""The phases of an update: the program's components (Pulumi types kfistio:<module>:<Type>), named as an operator
reads them. Pure: a resource's phase is read from its URN, so the fleet's progress lines, the benchmark's phase rows
and the demo's timeline name each phase alike."""

from __future__ import annotations

PHASES: dict[str, str] = {
    "MeshAnalysis": "Istio's analyzers",
    "Teardown::lift-guard": "lift guard",
    "Crds": "CRDs",
    "ControlPlane": "control plane",
    "ServingCheck": "new istiod serving",
    "Canary": "canary",
    "WebhookSwitch": "webhook switch",
    "IngressGateway": "gateway",
    "CanaryPutBack": "canary put back",
    "Rollouts": "workloads",
    "UnmanagedPods": "pods no workload covers",
    "Verification": "verification",
    "Teardown": "teardown",
    "RetiredRevision": "retired revision let go",
    "Guard": "guard",
    "DefaultTag": "default tag",
    "HelmHandOver": "Helm hand-over",
}
"""A component's type (its last part) -> its phase, in the order the program declares them (CRDs only adopted come
after the pods no workload covers). Where one type makes two phases, 'Type::name' names one of them: the Teardown
that lifts the guard before anything else on the way back, beside the one that removes the other plane."""


def phase_of(urn: str) -> str | None:
    """The phase of the resource urn names (urn:pulumi:STACK::PROJECT::kfistio:migration:Rollouts$command:local:
    Command::NAME): its top-level component's (components do not nest), for the component and each of its steps;
    None for the stack, the providers and anything outside the table. A 'Type::name' phase is matched on the
    resource's own name: a Teardown's one step carries the Teardown's name."""
    parts = urn.split("::", 3)
    if len(parts) < 4:
        return None
    component = parts[2].split("$", 1)[0].rsplit(":", 1)[-1]
    return PHASES.get(f"{component}::{parts[3]}") or PHASES.get(component)
