"""The migration timeline as a PNG: per run, phase markers, each rollout as a bar, churn outcomes as dots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"ok": "tab:green", "rejected": "tab:red", "no sidecar": "tab:orange", "no such istiod": "tab:purple"}
MARKERS = {"istiod_available_s": "new istiod Available", "switch_s": "webhooks switched",
           "rollouts_last_done_s": "last rollout done", "old_istiod_deleted_s": "old istiod deleted",
           "wall_s": "pulumi up done"}


def timeline(runs: list[dict[str, Any]], path: Path) -> None:
    fig, axes = plt.subplots(len(runs), 1, figsize=(12, 2.6 * len(runs)), squeeze=False, sharex=True)
    for ax, run in zip(axes[:, 0], runs):
        rollouts = run["timeline"]["rollouts"]
        for row, (start, done) in enumerate(rollouts):
            ax.plot([start, done], [row, row], color="tab:blue", linewidth=1)
        churn_row = len(rollouts) + max(3, len(rollouts) // 20)
        for outcome, colour in COLOURS.items():
            times = [t for t, o in run["timeline"]["churn"] if o == outcome]
            if times:
                ax.scatter(times, [churn_row] * len(times), s=6, color=colour,
                           label=f"churn {outcome} ({len(times)})")
        for key, text in MARKERS.items():
            if run.get(key) is not None:
                ax.axvline(run[key], color="grey", linestyle="--", linewidth=0.8)
                ax.text(run[key], churn_row + 2, text, rotation=90, fontsize=7, va="bottom", ha="right")
        ax.set_ylabel("rollouts")
        ax.set_ylim(-1, churn_row + max(12, len(rollouts) // 4))
        ax.set_title(f"{run['label']}: {run['wall_s']}s (lower bound {run['lower_bound_s']}s, "
                     f"{run['rollouts']} rollouts)", fontsize=9, loc="left")
        ax.legend(loc="upper left", fontsize=7, markerscale=2)
    axes[-1, 0].set_xlabel("seconds since `pulumi up --stack migrated` started")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
