"""What every timeline figure shares: pyplot drawing to files only (a figure takes plt from here, so that the backend
is set before pyplot loads), the time axis, and spans drawn as bars."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

MIN_BAR_S = 0.2
"""A span shorter than this is drawn this wide: a step of an instant stays visible."""
AXIS = "seconds since `pulumi up --stack migrated` started"


def span_bars(ax, rows: list[float], spans: list[tuple[float, float]], height: float, colour: str,
              **style: Any) -> None:
    """Each (start, end) of spans as a horizontal bar on its row of ax (style: more of barh's keywords, a label)."""
    ax.barh(rows, [max(end - start, MIN_BAR_S) for start, end in spans], left=[start for start, _ in spans],
            height=height, color=colour, **style)
