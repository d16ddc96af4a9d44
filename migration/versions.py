"""Which Istio a control plane runs, read off its istiod image (pure).

Istio's images are `<hub>/pilot:<tag>`; a release's tag is its version (`1.24.3`), optionally with a pre-release
(`1.25.0-rc.1`) and a variant (`-distroless`, `-debug`). Development builds are tagged `latest`, `<minor>-dev`,
`<minor>-alpha.<commit>` or a bare commit. migration/version_policy.py decides from these what each plane runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Iterable, Mapping

RECORD_ANNOTATION = "kfistio.io/legacy-istiod-image"
"""On the new istiod's Deployment: the image the legacy istiod ran, so it is known after the teardown."""
RECORD_VALUES_ANNOTATION = "kfistio.io/legacy-image-values"
"""Beside it: the image values the legacy plane is rendered with (JSON), so the way back renders it as installed."""
PREVIOUS_REVISION_ANNOTATION = "kfistio.io/previous-revision"
"""On an istiod a revision-based upgrade of the moved plane made: the revision it replaced, which the stack's later
runs name as the plane they moved away from (as a move names the legacy one)."""
PREVIOUS_VERSION_ANNOTATION = "kfistio.io/previous-version"
"""Beside it: that revision's version, the one version below its own that the stack may go back to."""
PREVIOUS_ISTIOD_UID_ANNOTATION = "kfistio.io/previous-istiod-uid"
"""And that revision's istiod's UID: which instance of it retired (components.checks.RetiredRevision)."""

_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-((?:alpha|beta|rc)\.\d+))?(?:-(distroless|debug))?$")
_DEV = re.compile(r"^(?:(\d+)\.(\d+)-(?:dev|alpha\.[0-9a-f]{7,40})|latest|master|[0-9a-f]{40})(?:-(distroless|debug))?$")


@dataclasses.dataclass(frozen=True)
class IstioBuild:
    minor: tuple[int, int] | None
    """(major, minor), when the tag says it."""
    version: str
    """`1.24.3`, `1.25.0-rc.1`, `1.30-dev`, or `dev (latest)`; `unknown (<tag>)` when the tag is neither."""
    development: bool
    variant: str = ""


def image_parts(image: str) -> tuple[str, str, str]:
    """`<hub>/<name>:<tag>` -> (hub, name, tag); tag "" when the image has none (a digest, or a registry port's
    colon)."""
    repository, _, tag = image.partition("@")[0].rpartition(":")
    if not repository or "/" in tag:
        repository, tag = image.partition("@")[0], ""
    hub, _, name = repository.rpartition("/")
    return hub, name, tag


def build_of(image: str) -> IstioBuild:
    """The Istio build an istiod image runs."""
    tag = image_parts(image)[2]
    release, dev = _RELEASE.match(tag), _DEV.match(tag)
    if release:
        major, minor, patch, pre, variant = release.groups()
        return IstioBuild((int(major), int(minor)), f"{major}.{minor}.{patch}" +
                          (f"-{pre}" if pre else ""), development=False, variant=variant or "")
    if dev:
        major, minor, variant = dev.groups()
        known = (int(major), int(minor)) if major else None
        return IstioBuild(known, f"{major}.{minor}-dev" if known else f"dev ({tag.split('-')[0]})",
                          development=True, variant=variant or "")
    return IstioBuild(None, f"unknown ({tag or 'no tag'})", development=False)


def parse_version(version: str) -> IstioBuild:
    """A version as istioctl reports it or a user writes it (`1.24.3`, `1.30-dev`): the build of that tag."""
    return build_of(f"pilot:{version}")


def istiod_image(deployment: Mapping[str, Any]) -> str:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next((c["image"] for c in containers if c["name"] == "discovery"), containers[0]["image"])


def _record(istiods: list[Mapping[str, Any]], recorded_in: str) -> Mapping[str, str]:
    """The annotations of the istiod Deployment in namespace recorded_in that records the legacy plane (each istiod
    the migrated stack makes there does, whichever its revision); empty if none does."""
    recording = sorted((d for d in istiods if d["metadata"]["namespace"] == recorded_in
                        and RECORD_ANNOTATION in (d["metadata"].get("annotations") or {})),
                       key=lambda d: d["metadata"]["name"])
    return recording[0]["metadata"]["annotations"] if recording else {}


def legacy_image(istiods: Iterable[Mapping[str, Any]], source_namespace: str, recorded_in: str) -> str | None:
    """The legacy istiod's image: from the istiod running in source_namespace, else as recorded (RECORD_ANNOTATION)
    on an istiod in namespace recorded_in once the legacy one is gone; None if neither exists."""
    istiods = list(istiods)
    running = next((istiod_image(d) for d in istiods if d["metadata"]["namespace"] == source_namespace), None)
    return running or _record(istiods, recorded_in).get(RECORD_ANNOTATION)


def describe(image: str | None) -> dict[str, Any]:
    """A stack output for an istiod image."""
    if image is None:
        return {"image": None, "version": "none"}
    build = build_of(image)
    return {"image": image, "version": build.version, "development": build.development}


def recorded_values(istiods: Iterable[Mapping[str, Any]], source_namespace: str, recorded_in: str) -> dict | None:
    """The legacy plane's image values as recorded (RECORD_VALUES_ANNOTATION) on an istiod in namespace recorded_in,
    once no istiod runs in source_namespace; None while it runs or when nothing is recorded."""
    istiods = list(istiods)
    if any(d["metadata"]["namespace"] == source_namespace for d in istiods):
        return None
    text = _record(istiods, recorded_in).get(RECORD_VALUES_ANNOTATION)
    return json.loads(text) if text else None
