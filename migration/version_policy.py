"""Which Istio version and images each plane is rendered with, and which moves are allowed (pure).

Default: a pure namespace move. The new plane runs the version and images the legacy istiod runs (read off its
image, or off the record the migration left on the new istiod once the legacy one is gone). An explicit
`targetVersion` may ask for a revision-based (canary) upgrade at the same time, within Istio's rule for those
(https://istio.io/latest/docs/setup/upgrade/canary/): the new control plane at most two minors above the old one,
never below it; the istio-pilot charm itself moves one minor at a time. Development builds are refused unless
`allowDevelopmentBuilds`.

Once moved, the plane's version changes only by a revision-based upgrade in the target namespace: a new `revision`
(with `targetVersion`) renders a new istiod beside the stack's running one, which retires once every sidecar left
it. The same rule bounds it, from the retiring revision's version; going back to the version that revision replaced
(recorded on its istiod) is the one step down allowed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from migration.config import MigrationConfig
from migration.marks import PROTECTED_LABEL
from migration.plan import PreflightRefused
from migration.versions import (PREVIOUS_ISTIOD_UID_ANNOTATION, PREVIOUS_REVISION_ANNOTATION,
                                PREVIOUS_VERSION_ANNOTATION, IstioBuild, build_of, image_parts, istiod_image,
                                legacy_image, parse_version, recorded_values)

MAX_MINOR_JUMP = 2


@dataclasses.dataclass(frozen=True)
class PlaneVersion:
    """How istioctl renders one plane: its version and the image overrides that reproduce the running images."""

    version: str
    """What the istioctl rendering this plane must report (`1.24.3`, `1.30-dev`)."""
    values: tuple[tuple[str, str], ...] = ()
    """values.* overrides (IMAGE_KEYS); empty: the istioctl's own defaults."""


@dataclasses.dataclass(frozen=True)
class RetiringPlane:
    """The stack's own plane in the target namespace under another revision than the configured one: what a
    revision-based upgrade of the moved plane (or its way back) removes once no sidecar uses it."""

    revision: str
    plane: PlaneVersion
    """Its version (and image values, read off its image)."""
    istiod_uid: str = ""
    """Its istiod Deployment's UID: which instance of the revision retires (a revision name comes back when the
    stack goes back and forth)."""


@dataclasses.dataclass(frozen=True)
class VersionPlan:
    legacy: PlaneVersion
    migrated: PlaneVersion
    legacy_image: str | None
    """The legacy istiod's image, live or recorded (None on a cluster that never ran it)."""
    retiring: RetiringPlane | None = None
    """The migrated stack's upgrade: the revision it retires (None: no upgrade under way)."""
    previous: RetiringPlane | None = None
    """What the migrated plane's istiod records as the revision (and version) it replaced
    (PREVIOUS_REVISION_ANNOTATION): the retiring one, or as already recorded; None if it replaced none."""

    @property
    def changes_version(self) -> bool:
        return self.legacy.version != self.migrated.version


IMAGE_KEYS = ("global.hub", "global.tag", "global.variant", "global.proxy.image", "global.proxy_init.image",
              "pilot.image")
"""The values that decide a plane's images (the istio-pilot charm's image-configuration sets all but the variant)."""


def installed_images(installed: Mapping[str, Any] | None, image: str) -> dict[str, str] | None:
    """The image values of an install (its `values` ConfigMap's original-values), when they render image."""
    def get(key: str) -> Any:
        node: Any = installed or {}
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node
    found = {key: str(value) for key in IMAGE_KEYS if (value := get(key)) not in (None, "")}
    name = found.get("pilot.image", "pilot")
    variant = f"-{found['global.variant']}" if "global.variant" in found else ""
    if "/" in name or f"{found.get('global.hub')}/{name}:{found.get('global.tag')}{variant}" != image:
        return None
    return found


def image_values(image: str, version: str | None = None,
                 known: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """The overrides that render image again: known ones (as the install set them) if given, else read off the
    image; with version's tag instead of the image's own (keeping its variant) for a jump."""
    hub, name, tag = image_parts(image)
    values = dict(known) if known else {"global.hub": hub, "global.tag": tag,
                                        **({"pilot.image": name} if name != "pilot" else {})}
    if version is not None:
        variant = build_of(image).variant
        values["global.tag"] = f"{version}-{variant}" if variant and "global.variant" not in values else version
    return tuple(sorted(values.items()))


def _known(image: str, where: str) -> IstioBuild:
    build = build_of(image)
    if build.minor is None:
        raise PreflightRefused(
            f"the {where} istiod runs {image}, whose tag names no Istio version ({build.version}); the migration only "
            f"moves a known version: run a tagged image (the istio-pilot charm's image-configuration global-tag)")
    return build


def _check_jump(source: IstioBuild, target: IstioBuild) -> None:
    """Istio's canary rule: same major, 0 to MAX_MINOR_JUMP minors up; within a minor, releases never go back."""
    allowed = (f"{source.minor[0]}.{source.minor[1]} to {source.minor[0]}.{source.minor[1] + MAX_MINOR_JUMP} "
               f"(no downgrade; at most {MAX_MINOR_JUMP} minors up, Istio's revision-based upgrade rule)")
    jump = target.minor[1] - source.minor[1]
    if target.minor[0] != source.minor[0] or not 0 <= jump <= MAX_MINOR_JUMP:
        raise PreflightRefused(f"kf-istio-migrate:targetVersion {target.version} is outside what a move from the "
                               f"live {source.version} may do: allowed {allowed}")
    if jump == 0 and not (source.development or target.development) and _release_key(target) < _release_key(source):
        raise PreflightRefused(f"kf-istio-migrate:targetVersion {target.version} is older than the live "
                               f"{source.version}: allowed {allowed}")


def newer(version: str, than: str) -> bool:
    """version is a later Istio than `than`: a later minor, or within one minor a later release (development
    builds of one minor are not ordered)."""
    a, b = parse_version(version), parse_version(than)
    if a.minor is None or b.minor is None:
        return False
    if a.minor != b.minor:
        return a.minor > b.minor
    return not (a.development or b.development) and _release_key(a) > _release_key(b)


def _release_key(build: IstioBuild) -> tuple:
    numbers, _, pre = build.version.partition("-")
    return (*map(int, numbers.split(".")), not pre, pre)  # 1.25.0-rc.1 < 1.25.0


def _check_development(builds: dict[str, IstioBuild], allow: bool) -> None:
    dev = {what: b.version for what, b in builds.items() if b.development}
    if dev and not allow:
        named = ", ".join(f"{what} {version}" for what, version in dev.items())
        raise PreflightRefused(f"development build of Istio ({named}): Istio does not support upgrading to or from "
                               f"one; set kf-istio-migrate:allowDevelopmentBuilds to true to move it anyway")


def plan_versions(cfg: MigrationConfig, istiods: list[dict], istioctl_version: Callable[[], str],
                  installed: Mapping[str, Any] | None = None) -> VersionPlan:
    """The version plan for cfg on a cluster whose istiod Deployments are istiods and whose legacy install's values
    are installed (None once it is gone; then what the new istiod recorded). istioctl_version() (what the operator's
    istioctl reports) is asked only when neither the cluster nor targetVersion says a version."""
    image = legacy_image(istiods, cfg.source_namespace, cfg.target_namespace)
    own = _own(istiods, cfg)
    running = next((istiod_image(d) for d in istiods if d["metadata"]["namespace"] == cfg.target_namespace), None)
    if image is None:  # a fresh cluster: what the config or the operator's istioctl says, at istioctl's hub
        version = cfg.target_version or istioctl_version()
        _check_development({"istioctl": parse_version(version)}, cfg.allow_development_builds)
        plane = PlaneVersion(version, (("global.tag", version),))  # a release's own tag; a dev build's says its minor
        return VersionPlan(plane, plane, None)
    source = _known(image, "legacy")
    _check_development({"legacy": source}, cfg.allow_development_builds)
    known = installed_images(installed, image) or recorded_values(istiods, cfg.source_namespace, cfg.target_namespace)
    legacy = PlaneVersion(source.version, image_values(image, known=known))
    if cfg.topology == "legacy":  # the way back: the recorded version; the migrated plane as it runs, to remove it
        if others := sorted(set(own) - {cfg.revision}):
            raise PreflightRefused(
                f"kf-istio-migrate:revision {cfg.revision}: the migrated plane in {cfg.target_namespace} runs revision "
                f"{', '.join(others)} (upgraded by the migrated stack): set this stack's revision to it, so that the "
                f"way back removes the plane that runs")
        tagged = running is not None and build_of(running).minor is not None  # else: as the legacy one renders it
        migrated = PlaneVersion(build_of(running).version, image_values(running)) if tagged else legacy
        return VersionPlan(legacy, migrated, image)
    retiring = _retiring(cfg, istiods, own)
    if cfg.target_version is None or cfg.target_version == source.version:
        plan = VersionPlan(legacy, legacy, image)
    else:
        target = parse_version(cfg.target_version)
        _check_development({"target": target}, cfg.allow_development_builds)
        if retiring is None:
            _check_jump(source, target)
        plan = VersionPlan(legacy, PlaneVersion(target.version, image_values(image, target.version, known)), image)
    if retiring is not None:
        _check_upgrade(retiring, parse_version(plan.migrated.version))
        return dataclasses.replace(plan, retiring=retiring.this, previous=retiring.this)
    _check_not_changed_in_place(cfg, istiods, plan.migrated.version)
    return dataclasses.replace(plan, previous=own[cfg.revision].previous if cfg.revision in own else None)


@dataclasses.dataclass(frozen=True)
class _Own:
    """An istiod the migrated stack made in the target namespace (it carries the guard's label)."""

    this: RetiringPlane
    """Its revision, version and istiod UID."""
    previous: RetiringPlane | None
    """The revision (and version) it replaced, as recorded on it."""


def _own(istiods: list[dict], cfg: MigrationConfig) -> dict[str, _Own]:
    """revision -> the stack's own istiod of that revision in the target namespace."""
    found = {}
    for d in istiods:
        meta = d["metadata"]
        labels = meta.get("labels") or {}
        if meta["namespace"] != cfg.target_namespace or labels.get(PROTECTED_LABEL) != "true":
            continue
        image, annotations = istiod_image(d), meta.get("annotations") or {}
        revision = labels.get("istio.io/rev") or meta["name"].removeprefix("istiod-")
        previous = (RetiringPlane(annotations[PREVIOUS_REVISION_ANNOTATION],
                                  PlaneVersion(annotations[PREVIOUS_VERSION_ANNOTATION]),
                                  annotations.get(PREVIOUS_ISTIOD_UID_ANNOTATION, ""))
                    if PREVIOUS_REVISION_ANNOTATION in annotations else None)
        found[revision] = _Own(RetiringPlane(revision, PlaneVersion(build_of(image).version, image_values(image)),
                                             meta.get("uid", "")), previous)
    return found


def _retiring(cfg: MigrationConfig, istiods: list[dict], own: dict[str, _Own]) -> _Own | None:
    """The stack's own plane (of own, _own's) of another revision than cfg's, when cfg asks for a new revision (an
    upgrade, or its way back); refused where the stack cannot retire it safely."""
    others = {rev: made for rev, made in own.items() if rev != cfg.revision}
    if not others:
        return None
    named = ", ".join(f"istiod-{rev} ({made.this.plane.version})" for rev, made in sorted(others.items()))
    where = f"{cfg.target_namespace} runs {named}, not revision {cfg.revision}"
    if any(d["metadata"]["namespace"] == cfg.source_namespace for d in istiods):
        raise PreflightRefused(f"kf-istio-migrate:revision {cfg.revision}: {where}, and istiod still runs in "
                               f"{cfg.source_namespace}: finish the move (or roll it back) under its revision first; "
                               f"an upgrade starts once the move is done")
    if len(others) > 1:
        raise PreflightRefused(f"kf-istio-migrate:revision {cfg.revision}: {where}; an upgrade retires one revision "
                               f"at a time: set revision to one of them to finish the upgrade under way first")
    if cfg.hand_over != "none":
        raise PreflightRefused(f"kf-istio-migrate:revision {cfg.revision}: {where}, and handOver "
                               f"{cfg.hand_over} has let go of the mesh: its next owner upgrades it with Istio's tools "
                               f"(docs/runbook.md, step 9)")
    if cfg.canary_only:
        # Stopping after the canary would leave the retiring revision undeclared, and the engine deletes what a
        # stack no longer declares at the end of the update.
        raise PreflightRefused(f"kf-istio-migrate:canaryOnly: {where}; the stack's upgrade runs its canary and the "
                               f"rest in one `pulumi up` (the canary gate holds the switch until the canary "
                               f"namespaces are proven): `pulumi config rm kf-istio-migrate:canaryOnly`")
    return next(iter(others.values()))


def _check_upgrade(retiring: _Own, target: IstioBuild) -> None:
    """Istio's canary rule from the retiring revision's version, or back to the version it replaced."""
    back_to = retiring.previous.plane.version if retiring.previous else None
    if target.version == back_to:
        return
    source = parse_version(retiring.this.plane.version)
    if source.minor is None:
        raise PreflightRefused(f"istiod-{retiring.this.revision} runs {retiring.this.plane.version}, which names no "
                               f"Istio version: the stack upgrades a known version only")
    back = f", or back to {back_to} (the version it replaced)" if back_to else ""
    try:
        _check_jump(source, target)
    except PreflightRefused:
        raise PreflightRefused(
            f"kf-istio-migrate:targetVersion {target.version} is outside what an upgrade from istiod-"
            f"{retiring.this.revision} ({source.version}) may do: allowed {source.minor[0]}.{source.minor[1]} to "
            f"{source.minor[0]}.{source.minor[1] + MAX_MINOR_JUMP} (Istio's revision-based upgrade rule){back}") \
            from None


def _check_not_changed_in_place(cfg: MigrationConfig, istiods: list[dict], version: str) -> None:
    """Refuse rendering the moved plane at another version than its istiod already runs (the move under way or
    done): the stack would replace istiod in place under the running sidecars and re-inject none of them. The
    version of a moved plane changes by a revision-based upgrade beside it."""
    name = f"istiod-{cfg.revision}"
    moved = next((d for d in istiods if (d["metadata"]["namespace"], d["metadata"]["name"]) ==
                  (cfg.target_namespace, name)), None)
    running = build_of(istiod_image(moved)) if moved is not None else None
    if running is None or running.minor is None or running.version == version:
        return
    raise PreflightRefused(
        f"kf-istio-migrate:targetVersion: this stack would render {cfg.target_namespace}/{name} at Istio {version} "
        f"(targetVersion, or the legacy version when it is unset), but it already runs {running.version}: changing "
        f"the version of a moved plane would replace istiod in place under the running sidecars, none of them "
        f"re-injected. Set kf-istio-migrate:targetVersion to {running.version}, or upgrade beside it: a new "
        f"kf-istio-migrate:revision with that targetVersion (docs/runbook.md, \"Upgrading Istio with the stack\")")


CRD_VERSION_LABEL = "app.kubernetes.io/version"


def crd_versions(crds: dict[str, dict]) -> list[str]:
    """The Istio versions the live CRDs are labelled with (istioctl and Helm label them with the chart version;
    development builds label `1.0.0`, which says nothing and is left out)."""
    labelled = {(c.get("labels") or {}).get(CRD_VERSION_LABEL) for c in crds.values()} - {None, "1.0.0"}
    return sorted(labelled)


def check_crds_not_downgraded(plan: VersionPlan, crds: dict[str, dict]) -> None:
    """Refuse rendering the migrated plane's CRDs at a release older than the live CRDs say they are (a half-done
    upgrade: istiod older than its CRDs); rewriting them would drop the newer schemas' fields."""
    target = parse_version(plan.migrated.version)
    if target.development or target.minor is None:
        return
    newer = [v for v in crd_versions(crds) if (b := parse_version(v)).minor is not None and not b.development
             and _release_key(b) > _release_key(target)]
    if newer:
        newest = max(newer, key=lambda v: _release_key(parse_version(v)))  # crd_versions sorts as text: 1.9 > 1.10
        raise PreflightRefused(f"the Istio CRDs are labelled {CRD_VERSION_LABEL}={', '.join(newer)}, newer than "
                               f"{plan.migrated.version} that the new plane would render them at: set "
                               f"kf-istio-migrate:targetVersion to {newest} (and its istioctl), or finish the "
                               f"istio-pilot upgrade first")
