"""The demo's migration as a picture: the phases of `pulumi up` (from the engine's event log), each workload's move
(from a recording of every pod) and the injectors per profile namespace (the injector history's states).

Pure: `timeline_of` turns those recordings into a Timeline, the figure's inputs; `draw` turns a Timeline into a PNG."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from migration.live_mesh import ObjectId
from migration.phases import PHASES
from migration.workloads import Workload, owner, proxy_address, service_of
from update_timeline.plot import AXIS, MIN_BAR_S, plt, span_bars  # its pyplot draws to files only
from update_timeline.spans import step_phase, step_phases

WAYS = {"restart": ("restarted (rollout restart)", "tab:blue"), "evict": ("pods evicted one at a time", "tab:orange"),
        "wait": ("waited for until it finished", "tab:purple"), "patch": ("gateway Deployment patched", "tab:green")}
"""How a workload was moved -> (legend text, colour)."""
UNMANAGED = re.compile(r"(?P<pod>\S+) \((?P<owner>.*)\): (?P<policy>\w+)")
"""An entry of the stack output unmanagedPods: 'namespace/pod (what owns it): policy'."""


@dataclasses.dataclass(frozen=True)
class Move:
    what: str
    """'namespace/Kind/name' of a workload, or 'namespace/pod (what owns it)' of a pod no workload covers."""
    way: str
    """A key of WAYS."""
    start: float
    done: float | None
    """Seconds from the start of `pulumi up`; done is None if the recording ended before the move did."""


@dataclasses.dataclass(frozen=True)
class Timeline:
    phases: list[tuple[str, float, float]]
    """(phase, first step began, last step ended), seconds from the start of `pulumi up` (update_timeline.spans)."""
    moves: list[Move]
    """In the order they started."""
    injectors: list[tuple[float, int, int]]
    """Per state: (seconds, fewest, most) injectors over the profile namespaces."""
    namespaces: int
    """How many profile namespaces the history followed."""
    wall: float
    """Seconds `pulumi up` took."""
    destination: str
    """The istiod address the workloads moved to."""


def planned_ways(stamped: Iterable[tuple[float, dict[str, Any]]]) -> dict[str, str]:
    """'namespace/Kind/name' -> how the update moved it, from the steps in the engine's event log: each rollout
    command's standard input (live.rollout's PLAN: restart or evict) and the gateway's Deployments (patched)."""
    ways: dict[str, str] = {}
    for _, event in stamped:
        meta = (event.get("resourcePreEvent") or {}).get("metadata") or {}
        inputs = (meta.get("new") or {}).get("inputs") or {}
        phase = step_phase(meta["urn"]) if meta else None
        if phase == PHASES["Rollouts"] and inputs.get("stdin"):
            ways.update({f"{ns}/{ref}": way for ns, plan in json.loads(inputs["stdin"]).items()
                         for way, refs in plan.items() for ref in refs})
        elif phase == PHASES["IngressGateway"] and meta.get("type", "").startswith("kubernetes:apps/v1:Deployment"):
            ways[f"{inputs['metadata']['namespace']}/Deployment/{inputs['metadata']['name']}"] = "patch"
    return ways


def unmanaged_ways(entries: Iterable[str]) -> dict[str, tuple[str, str]]:
    """'namespace/pod' -> (what owns it, the unmanagedPods policy applied to it: wait or evict), from the stack
    output unmanagedPods."""
    return {found["pod"]: (found["owner"], found["policy"])
            for found in (UNMANAGED.fullmatch(entry) for entry in entries) if found}


def _running(event: Mapping[str, Any]) -> bool:
    pod = event["pod"]
    return (event["type"] != "DELETED" and not pod["metadata"].get("deletionTimestamp")
            and pod["status"].get("phase") not in ("Succeeded", "Failed"))


def _group(pod: Mapping[str, Any], controllers: Mapping[ObjectId, Mapping[str, Any]]) -> str:
    """The key of what a pod moves with: its workload's 'namespace/Kind/name', else its own 'namespace/pod'."""
    top, meta = owner(pod, controllers), pod["metadata"]
    return f"{top.namespace}/{top.ref}" if isinstance(top, Workload) else f"{meta['namespace']}/{meta['name']}"


def _workload_move(what: str, way: str, events: list[dict[str, Any]], destination: str,
                   started: float) -> Move | None:
    """Starts at the first change to the workload's pods after started (a pod added, or one it had stopping); done
    once none of its running pods uses another istiod and as many as it had running then are Ready on
    destination. None if its pods did not change."""
    state: dict[str, tuple[bool, bool, bool]] = {}  # uid -> (running, Ready, on destination)
    had = start = None
    for event in events:
        if had is None and event["t"] > started:
            had = sum(running for running, _, _ in state.values())
        pod, running = event["pod"], _running(event)
        uid = pod["metadata"]["uid"]
        if had is not None and start is None and (uid not in state or (state[uid][0] and not running)):
            start = event["t"]
        address = proxy_address(pod)
        state[uid] = (running, pod["status"]["ready"],
                      address is not None and service_of(address) == service_of(destination))
        if start is not None and not any(alive and not moved for alive, _, moved in state.values()) \
                and sum(alive and ready and moved for alive, ready, moved in state.values()) >= had:
            return Move(what, way, start - started, event["t"] - started)
    return Move(what, way, start - started, None) if start is not None else None


def _pod_move(what: str, way: str, events: list[dict[str, Any]], started: float, handled_from: float) -> Move:
    """From when the unmanaged pods' step began (handled_from) until the pod stopped running; a pod that stopped
    before that step began is drawn when it stopped."""
    stopped = next((e["t"] - started for e in events if e["t"] > started and not _running(e)), None)
    return Move(what, way, handled_from if stopped is None else min(handled_from, stopped), stopped)


def workload_moves(pod_events: Iterable[dict[str, Any]], controllers: Mapping[ObjectId, Mapping[str, Any]],
                   ways: Mapping[str, str], unmanaged: Mapping[str, tuple[str, str]], destination: str,
                   started: float, handled_from: float) -> list[Move]:
    """One Move per workload of ways whose pods changed after started and per pod of unmanaged, in the order they
    started. pod_events: update_timeline.recorder.PodRecorder's; controllers: live.discovery.controllers after the
    update (a Deployment's old ReplicaSets are still there); times in seconds from started."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for event in sorted(pod_events, key=lambda e: e["t"]):
        by_group.setdefault(_group(event["pod"], controllers), []).append(event)
    found = [_workload_move(what, way, by_group.get(what, []), destination, started) for what, way in ways.items()]
    found += [_pod_move(f"{pod} ({top})", policy, by_group.get(pod, []), started, handled_from)
              for pod, (top, policy) in unmanaged.items()]
    return sorted((m for m in found if m is not None), key=lambda m: (m.start, m.what))


def injector_series(states: Iterable[Mapping[str, Any]], started: float) -> list[tuple[float, int, int]]:
    """(seconds from started, fewest, most) injectors over the watched namespaces, per state of
    demo.observe.InjectorHistory."""
    return [(s["t"] - started, min(s["injectors"].values()), max(s["injectors"].values()))
            for s in states if s["injectors"]]


def timeline_of(stamped: list[tuple[float, dict[str, Any]]], pod_events: list[dict[str, Any]],
                controllers: Mapping[ObjectId, Mapping[str, Any]], states: list[dict[str, Any]],
                outputs: Mapping[str, Any], started: float, ended: float) -> Timeline:
    """The timeline of one `pulumi up --stack migrated` that ran from started to ended (time.monotonic(), the
    clock of every recording): stamped, the engine's event log (update_timeline.event_log.EventLogTail); outputs,
    the stack's."""
    phases = step_phases(stamped, started)
    handled_from = next((s for phase, s, _ in phases if phase == PHASES["UnmanagedPods"]), 0.0)
    moves = workload_moves(pod_events, controllers, planned_ways(stamped),
                           unmanaged_ways(outputs.get("unmanagedPods") or []), outputs["istiodAddress"], started,
                           handled_from)
    return Timeline(phases=phases, moves=moves, injectors=injector_series(states, started),
                    namespaces=max((len(s["injectors"]) for s in states), default=0), wall=ended - started,
                    destination=outputs["istiodAddress"])


def draw(timeline: Timeline, path: Path) -> None:
    """Three panels over one time axis, written as a PNG to path: the phases of `pulumi up`, one bar per move
    coloured by how it was moved, and the fewest and most injectors over the profile namespaces in each state."""
    fig, (top, middle, bottom) = plt.subplots(
        3, 1, sharex=True, layout="constrained",
        figsize=(16, 3.5 + 0.24 * (len(timeline.phases) + len(timeline.moves))),
        gridspec_kw={"height_ratios": [max(len(timeline.phases), 1), max(len(timeline.moves), 1), 6]})
    fig.suptitle(f"`make demo`: `pulumi up --stack migrated` moves istiod to {timeline.destination} "
                 f"in {timeline.wall:.0f} s", fontsize=12)
    _phases(top, timeline)
    _moves(middle, timeline)
    _injectors(bottom, timeline)
    switch = next(((start, end) for phase, start, end in timeline.phases if phase == PHASES["WebhookSwitch"]), None)
    for ax in (top, middle, bottom):
        if switch:
            ax.axvspan(switch[0], max(switch[1], switch[0] + MIN_BAR_S), color="tab:red", alpha=0.25, zorder=0,
                       label="webhook switch" if ax is bottom else None)
        ax.axvline(timeline.wall, color="grey", linestyle="--", linewidth=0.8,
                   label=f"`pulumi up` done ({timeline.wall:.0f} s)" if ax is bottom else None)
        ax.grid(axis="x", alpha=0.3)
    middle.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="moved by")
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    bottom.set_xlabel(AXIS)
    bottom.set_xlim(min([0.0, *(t for t, _, _ in timeline.injectors)]) - 1, timeline.wall + 3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _labelled_bars(ax, labels: list[str], spans: list[tuple[float, float]], colours: list[str],
                   legend: Mapping[str, str] | None = None) -> None:
    """One row per span, top to bottom, in its colour (colours: one per row), each bar followed by its length in
    seconds; legend: colour -> its label, in the legend's order."""
    for colour in legend or dict.fromkeys(colours):
        rows = [row for row, c in enumerate(colours) if c == colour]
        span_bars(ax, rows, [spans[row] for row in rows], 0.7, colour, label=(legend or {}).get(colour))
    for row, (start, end) in enumerate(spans):
        ax.annotate(f"{end - start:.1f} s", (max(end, start + MIN_BAR_S), row), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7.5)
    ax.set_ylim(len(labels) - 0.5, -0.5)


def _phases(ax, timeline: Timeline) -> None:
    _labelled_bars(ax, [phase for phase, _, _ in timeline.phases],
                   [(start, end) for _, start, end in timeline.phases], ["tab:cyan"] * len(timeline.phases))
    ax.set_title("Phases of `pulumi up`, from the engine's event log: first step began to last step ended",
                 loc="left", fontsize=10)


def _moves(ax, timeline: Timeline) -> None:
    moves = timeline.moves
    legend = {colour: f"{way}: {text} ({sum(m.way == way for m in moves)})"
              for way, (text, colour) in WAYS.items() if any(m.way == way for m in moves)}
    _labelled_bars(ax, [m.what + (" (not done)" if m.done is None else "") for m in moves],
                   [(m.start, timeline.wall if m.done is None else m.done) for m in moves],
                   [WAYS[m.way][1] for m in moves], legend)
    ax.set_title("Each workload's move: from the first change to its pods until every pod it had is replaced by a "
                 "Ready one on the new istiod (a pod no workload covers: until it finishes)", loc="left", fontsize=10)


def _injectors(ax, timeline: Timeline) -> None:
    times = [t for t, _, _ in timeline.injectors]
    fewest, most = [lo for _, lo, _ in timeline.injectors], [hi for _, _, hi in timeline.injectors]
    # A state lasts until the next write: the last one is drawn to the end of the update.
    until = [timeline.wall] if times else []
    ax.step(times + until, most + most[-1:], where="post", color="tab:red", linewidth=5, alpha=0.35,
            label="most in a namespace")
    ax.step(times + until, fewest + fewest[-1:], where="post", color="tab:blue", linewidth=1.5,
            label="fewest in a namespace")
    ax.set_ylim(-0.5, max(most, default=1) + 1.5)
    ax.set_yticks(range(max(most, default=1) + 2))
    ax.set_ylabel("injectors")
    ax.set_title(f"Injectors a new pod would meet in each profile namespace ({timeline.namespaces} namespaces, "
                 f"every one of {len(times)} states the apiserver went through): fewest {min(fewest, default='-')}, "
                 f"most {max(most, default='-')}; "
                 f"it must stay exactly 1", loc="left", fontsize=10)
