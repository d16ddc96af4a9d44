"""What the fleet prints and records (pure): the preview table, and one result per cluster for the results file."""

from __future__ import annotations

from typing import Any

from fleet.run import Outcome

COLUMNS = ("cluster", "live istiod", "workloads to move", "next update", "refusal")


def preview_row(outcome: Outcome) -> tuple[str, ...]:
    out = outcome.outputs
    live = out.get("legacyIstiod") or {}
    return (outcome.cluster, str(live.get("version", "?")), str(out.get("restartedWorkloads", "?")),
            str(out.get("phase", "?")) if outcome.ok else "not touched",
            "" if outcome.ok else (outcome.errors[0] if outcome.errors else "preview failed"))


def render_table(previews: list[Outcome]) -> str:
    rows = [COLUMNS, *(preview_row(o) for o in previews)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)] + [0]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def result_of(cluster: str, stack: str, previews: list[Outcome], updates: list[Outcome], not_started: list[str],
              command: str) -> dict[str, Any]:
    """The results file's entry for one cluster: result (previewed, refused, done, failed, not started), the
    update's exit and seconds, the workloads it moved and the pods it left (its moveAccount), or why it failed."""
    preview = next(o for o in previews if o.cluster == cluster)
    update = next((o for o in updates if o.cluster == cluster), None)
    entry: dict[str, Any] = {"cluster": cluster, "stack": stack, "previewSeconds": round(preview.seconds, 1)}
    if not preview.ok:
        return {**entry, "result": "refused", "exit": None, "errors": preview.errors}
    if command == "preview":
        return {**entry, "result": "previewed", "exit": None, "workloadsToMove": preview.outputs.get("restartedWorkloads")}
    if update is None:
        return {**entry, "result": "not started", "exit": None,
                "errors": ["not started: the canary cluster or --max-failures stopped new starts"]}
    account = update.outputs.get("moveAccount") or {}
    return {**entry, "result": "done" if update.ok else "failed", "exit": 0 if update.ok else 1,
            "seconds": round(update.seconds, 1), "moved": account.get("moved", []), "left": account.get("left", []),
            "errors": update.errors}
