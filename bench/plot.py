"""The migration timeline as a PNG: per run, phase markers, each rollout as a bar, churn outcomes as dots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from update_timeline.plot import AXIS, plt, span_bars

COLOURS = {"ok": "tab:green", "rejected": "tab:red", "no sidecar": "tab:orange", "no such istiod": "tab:purple"}
MARKERS = {"istiod_available_s": ("new istiod Available", "black"), "switch_s": ("webhooks switched", "tab:red"),
           "rollouts_last_done_s": ("last rollout done", "tab:blue"),
           "old_istiod_deleted_s": ("old istiod deleted", "tab:brown"), "wall_s": ("pulumi up done", "grey")}


def timeline(runs: list[dict[str, Any]], path: Path) -> None:
    """Per run: the phases of `pulumi up` as labelled bars (one row each, from the engine's event log), each
    rollout as a line below them, churn outcomes as dots, and the phase markers as dashed lines in the legend."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(14, 4.2 * len(runs)), squeeze=False, sharex=True)
    for ax, run in zip(axes[:, 0], runs):
        rollouts = run["timeline"]["rollouts"]
        step = max(3, len(rollouts) // 12)  # a phase row is as tall as step rollout rows
        for row, (start, done) in enumerate(rollouts):
            ax.plot([start, done], [row, row], color="tab:blue", linewidth=1)
        churn_row = len(rollouts) + 2 * step
        for outcome, colour in COLOURS.items():
            times = [t for t, o in run["timeline"]["churn"] if o == outcome]
            if times:
                ax.scatter(times, [churn_row] * len(times), s=6, color=colour,
                           label=f"churn {outcome} ({len(times)})")
        phases = run.get("phases", [])
        rows = [churn_row + (2 + i) * step for i in range(len(phases))]
        span_bars(ax, rows, [(start, end) for _, start, end in phases], 0.8 * step, "tab:cyan")
        for key, (text, colour) in MARKERS.items():
            if run.get(key) is not None:
                ax.axvline(run[key], color=colour, linestyle="--", linewidth=0.8, label=f"{text} ({run[key]} s)")
        ax.set_yticks([churn_row, *rows], ["churn", *(p for p, _, _ in phases)], fontsize=7)
        ax.set_ylim(-1, (rows[-1] if rows else churn_row) + 2 * step)
        ax.set_title(f"{run['label']}: {run['wall_s']}s (lower bound {run['lower_bound_s']}s, "
                     f"{run['rollouts']} rollouts, one line each below the churn row)", fontsize=9, loc="left")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7, markerscale=2)
    axes[-1, 0].set_xlabel(AXIS)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
