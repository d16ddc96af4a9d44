"""The update's phases as time spans (pure): from the engine's event log stamped as written
(update_timeline.event_log), when each phase's first step began and its last step ended."""

from __future__ import annotations

from typing import Any, Iterable

from migration.phases import PHASES, phase_of

ISTIOD_STEP = "istiod Deployment (create -> Available)"
"""The control plane's Deployment, on a row of its own: the update waits on its pods."""
START = "CLI + program start"
"""The time before the first step."""


def step_phase(urn: str) -> str | None:
    """The phase of the step urn names (migration.phases), the istiod Deployment on its own; None for the components
    themselves and the stack (they span the whole update) and for providers (in no phase: each is made at its first
    use, in well under a second)."""
    own = urn.split("::")[2].rsplit("$", 1)[-1]
    if own.startswith("kfistio:"):
        return None
    phase = phase_of(urn)
    if phase == PHASES["ControlPlane"] and own == "kubernetes:apps/v1:Deployment":
        return ISTIOD_STEP
    return phase


def step_phases(stamped: Iterable[tuple[float, dict[str, Any]]], started: float) -> list[tuple[str, float, float]]:
    """(phase, first step began, last step ended), seconds from started, in the order the phases began; the first row
    is the time before the first step."""
    spans: dict[str, list[float]] = {}
    first = None
    for t, event in stamped:
        for key in ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent"):
            if key in event and (phase := step_phase(event[key]["metadata"]["urn"])):
                first = t if first is None else first
                span = spans.setdefault(phase, [t, t])
                span[0], span[1] = min(span[0], t), max(span[1], t)
    rows = [(START, 0.0, round(first - started, 2))] if first is not None else []
    return rows + sorted(((p, round(s - started, 2), round(e - started, 2)) for p, (s, e) in spans.items()),
                         key=lambda row: row[1])
