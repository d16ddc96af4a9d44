"""Pure functions from a run's recordings (Deployment and StatefulSet events, injector states, churn records) to its
numbers."""

from __future__ import annotations

from typing import Any, Iterable

from bench.churn import OUTCOMES

NEW_ISTIOD = ("istio-system", "istiod-kf-1-30")
OLD_ISTIOD = ("kubeflow", "istiod")


def rolled_out(event: dict[str, Any]) -> bool:
    """`kubectl rollout status` is satisfied: the controller saw the change and every replica is new and available."""
    want = event["replicas"] or 0
    return (event["observed"] >= event["generation"] and event["updated"] == want
            and event["available"] == want and event["status_replicas"] == want)


def istiod_available_at(events: Iterable[dict[str, Any]], istiod: tuple[str, str] = NEW_ISTIOD) -> float | None:
    return next((e["t"] for e in events if (e["namespace"], e["name"]) == istiod
                 and e["available_condition"] == "True"), None)


def created_at(events: Iterable[dict[str, Any]], deployment: tuple[str, str] = NEW_ISTIOD) -> float | None:
    """When the Deployment was first seen (the run's recorder starts before `pulumi up`)."""
    return next((e["t"] for e in events if (e["namespace"], e["name"]) == deployment), None)


def most_at_once(spans: Iterable[tuple[float, float]]) -> int:
    """The most spans (restart seen -> rolled out) open at one instant: workloads rolling together."""
    level = peak = 0
    for _, step in sorted([(start, 1) for start, _ in spans] + [(done, -1) for _, done in spans]):
        level += step
        peak = max(peak, level)
    return peak


def deleted_at(events: Iterable[dict[str, Any]], deployment: tuple[str, str] = OLD_ISTIOD) -> float | None:
    return next((e["t"] for e in events if (e["namespace"], e["name"]) == deployment and e["type"] == "DELETED"),
                None)


def rollout_spans(events: Iterable[dict[str, Any]], namespaces: Iterable[str]) -> dict[str, tuple[float, float]]:
    """'Kind namespace/name' -> (first seen restarted, first seen rolled out after that) for workloads in namespaces
    whose pod template got a new restartedAt annotation during the run."""
    namespaces = set(namespaces)
    initial: dict[str, str | None] = {}
    started: dict[str, tuple[str, float]] = {}
    spans: dict[str, tuple[float, float]] = {}
    for e in events:
        if e["namespace"] not in namespaces or e["type"] == "DELETED":
            continue
        key = f"{e.get('kind', 'Deployment')} {e['namespace']}/{e['name']}"
        initial.setdefault(key, e["restarted_at"])
        if key not in started and e["restarted_at"] != initial[key]:
            started[key] = (e["restarted_at"], e["t"])
        if key in started and key not in spans and e["restarted_at"] == started[key][0] and rolled_out(e):
            spans[key] = (started[key][1], e["t"])
    return spans


def injector_switch_at(states: Iterable[dict[str, Any]], istiod: tuple[str, str] = NEW_ISTIOD) -> float | None:
    """First state in which the default injection path calls istiod (namespace, name of its Service, which is its
    Deployment's)."""
    return next((s["t"] for s in states if "/".join(istiod) in s.get("injector_targets", [])), None)


def churn_counts(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for r in records:
        counts[r["outcome"]] += 1
    return counts


def summarize_run(label: str, started: float, ended: float, events: list[dict[str, Any]],
                  states: list[dict[str, Any]], churn: list[dict[str, Any]], namespaces: list[str],
                  slots: int | None = None, new_istiod: tuple[str, str] = NEW_ISTIOD,
                  old_istiod: tuple[str, str] = OLD_ISTIOD) -> dict[str, Any]:
    """P1 and P2 numbers of one run that moves the mesh from old_istiod to new_istiod (the move, or an upgrade
    between revisions); times in seconds from the start of `pulumi up`. With slots (the wave's rolloutParallelism),
    also a lower bound that counts them: istiod Available + the longer of the slowest rollout and all rollouts'
    durations shared among the slots (the best any order could do with the durations this run measured), next to
    P1's own bound, which assumes every workload rolls at once."""
    spans = rollout_spans(events, namespaces)
    available = istiod_available_at(events, new_istiod)
    durations = [done - start for start, done in spans.values()]
    wall = ended - started
    lower = ((available - started) + max(durations)) if available is not None and durations else None
    by_slots = ((available - started) + max(max(durations), sum(durations) / slots)
                if slots and available is not None and durations else None)
    rel = lambda t: None if t is None else round(t - started, 2)  # noqa: E731
    window = [r for r in churn if started <= r["t"] <= ended]
    counts = [c for s in states for c in s["injectors"].values()]
    by_kind: dict[str, list[float]] = {}
    for key, (start, done) in spans.items():
        by_kind.setdefault(key.split(" ", 1)[0], []).append(done - start)
    return {
        "label": label, "wall_s": round(wall, 1), "istiod_created_s": rel(created_at(events, new_istiod)),
        "istiod_available_s": rel(available), "most_rolling_at_once": most_at_once(spans.values()),
        "median_rollout_by_kind_s": {kind: round(sorted(d)[len(d) // 2], 1) for kind, d in sorted(by_kind.items())},
        "rollouts_by_kind": {kind: len(d) for kind, d in sorted(by_kind.items())},
        "slowest_rollout_s": round(max(durations), 1) if durations else None,
        "median_rollout_s": round(sorted(durations)[len(durations) // 2], 1) if durations else None,
        "rollouts": len(spans), "lower_bound_s": round(lower, 1) if lower else None,
        "ratio_to_lower_bound": round(wall / lower, 2) if lower else None,
        "slot_bound_s": round(by_slots, 1) if by_slots else None,
        "ratio_to_slot_bound": round(wall / by_slots, 2) if by_slots else None,
        "switch_s": rel(injector_switch_at(states, new_istiod)),
        "rollouts_first_start_s": rel(min((s for s, _ in spans.values()), default=None)),
        "rollouts_last_done_s": rel(max((d for _, d in spans.values()), default=None)),
        "old_istiod_deleted_s": rel(deleted_at(events, old_istiod)),
        "churn": {"created": len(window), "rate_per_s": round(len(window) / wall, 2) if wall else 0,
                  **churn_counts(window),
                  "examples": [r["detail"] for r in window if r["outcome"] != "ok"][:5]},
        "injector_states": len(states), "injectors_min": min(counts, default=0),
        "injectors_max": max(counts, default=0),
        "timeline": {"churn": [(rel(r["t"]), r["outcome"]) for r in window],
                     "rollouts": sorted((rel(s), rel(d)) for s, d in spans.values())},
    }


def growth(previews: dict[int, float], plains: dict[int, tuple[int, float]] | None = None) -> dict[str, Any]:
    """P3: preview seconds per namespace count, how time grows relative to the namespace count, and, where plains
    gives (resources, seconds) of a plain preview of as many resources, the ratio to it; growth needs two sizes."""
    sizes = sorted(previews)
    smallest, largest = sizes[0], sizes[-1]
    plains = plains or {}
    measured = {"seconds": {str(n): round(previews[n], 1) for n in sizes},
                "resources": {str(n): plains[n][0] for n in sizes if n in plains},
                "plain_seconds": {str(n): round(plains[n][1], 1) for n in sizes if n in plains},
                "ratio_to_plain": {str(n): round(previews[n] / plains[n][1], 2) for n in sizes if n in plains}}
    if smallest == largest:
        return measured
    return {**measured,
            "growth_ratio": round(previews[largest] / previews[smallest], 2),
            "namespace_ratio": round(largest / smallest, 2),
            "ms_per_namespace_marginal": round(1000 * (previews[largest] - previews[smallest]) / (largest - smallest), 1)}
