"""Follows the engine's event log (`pulumi up --event-log FILE`) while the update runs and stamps each event with
the monotonic clock when it was written (the events' own timestamps are whole seconds), so that each resource's step
begins and ends (update_timeline.spans) on the same clock as the recorders (update_timeline.recorder)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

POLL_SECONDS = 0.05


class EventLogTail(threading.Thread):
    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path = path
        self.events: list[tuple[float, dict[str, Any]]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        offset, partial = 0, b""
        while True:
            halting = self._halt.is_set()  # read once more after the halt, for the last lines
            if self.path.exists():
                with open(self.path, "rb") as log:
                    log.seek(offset)
                    chunk = log.read()
                offset += len(chunk)
                now = time.monotonic()
                *lines, partial = (partial + chunk).split(b"\n")
                self.events += [(now, json.loads(line)) for line in lines if line.strip()]
            if halting:
                return
            time.sleep(POLL_SECONDS)

    def stop(self) -> list[tuple[float, dict[str, Any]]]:
        self._halt.set()
        self.join()
        return self.events
