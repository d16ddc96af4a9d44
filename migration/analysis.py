"""Istio's own analyzers as an independent judge of the mesh (pure: reading istioctl's output and judging it;
live.analyze runs istioctl).

- `istioctl x precheck` (preflight): refuses on its Error messages (permissions to install in the target namespace,
  an unsupported Kubernetes version, Gateway API CRDs too old).
- `istioctl analyze --all-namespaces -o json` before the move and after it: the move fails on an Error message that
  was not there before, and on IST0139 (a webhook that overlaps another, or calls a Service that does not exist)
  whenever it appears.
- `istioctl x check-inject`: for one running pod of every injected namespace, exactly one webhook would inject it.
  That command exits 0 even when it prints that several would, so its table is read here.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Iterable

CONFLICTING_WEBHOOKS = "IST0139"
"""InvalidWebhook: a webhook overlaps another (a pod would be injected twice) or calls a Service that does not
exist (the pods it matches are not created or not injected)."""


@dataclasses.dataclass(frozen=True, order=True)
class AnalysisMessage:
    code: str
    level: str
    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} [{self.code}] ({self.origin}) {self.message}"


def parse_messages(text: str) -> tuple[AnalysisMessage, ...]:
    """The messages of `istioctl analyze -o json` or `istioctl x precheck -o json` (nothing printed: none)."""
    if not text.strip():
        return ()
    return tuple(sorted(AnalysisMessage(code=m["code"], level=m["level"], origin=m.get("origin", ""),
                                        message=m["message"]) for m in json.loads(text)))


def errors(messages: Iterable[AnalysisMessage]) -> list[AnalysisMessage]:
    return [m for m in messages if m.level == "Error"]


def new_problems(before: Iterable[AnalysisMessage], after: Iterable[AnalysisMessage]) -> list[AnalysisMessage]:
    """What makes the move fail: an Error message after it that was not there before, and IST0139 at any level,
    before or not (two injectors for one pod, or an injector calling nothing, is never acceptable)."""
    known = set(before)
    return [m for m in after if m.code == CONFLICTING_WEBHOOKS or (m.level == "Error" and m not in known)]


@dataclasses.dataclass(frozen=True)
class InjectionCheck:
    """What `istioctl x check-inject` says about one pod: the webhooks that would inject it."""

    pod: str
    injecting: tuple[str, ...]

    @property
    def problem(self) -> str | None:
        if len(self.injecting) == 1:
            return None
        which = ", ".join(self.injecting) if self.injecting else "none"
        return f"{self.pod}: {len(self.injecting)} webhooks would inject it ({which}), expected exactly one"


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
INJECTS, SKIPS = "\u2714", "\u2718"  # check-inject's tick and cross


def parse_check_inject(pod: str, text: str) -> InjectionCheck:
    """check-inject's table (WEBHOOK, REVISION, INJECTED, REASON; INJECTED a tick or a cross, coloured even when
    not printed to a terminal; REVISION may be empty) -> the injecting webhooks. "ERROR: no Istio injection hooks
    present." has no table: none."""
    injecting = []
    for line in ANSI_ESCAPE.sub("", text).splitlines():
        cells = line.split()
        mark = next((c for c in cells[1:3] if c in (INJECTS, SKIPS)), None)
        if mark == INJECTS:
            injecting.append(cells[0])
    return InjectionCheck(pod=pod, injecting=tuple(injecting))
