"""Istio objects from istioctl: `istioctl manifest generate` with the flags the istio-pilot charm uses.

`istioctl_args` is pure; `render` runs istioctl once per distinct (Istio version, flags) and caches the YAML, so
previews and tests do not re-render (a cache hit runs no istioctl at all). Nothing here hand-writes an Istio object.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import pathlib
import subprocess
from typing import Any, Mapping

import yaml

from migration.webhooks import DEFAULT_VALIDATOR

from migration import helm, istioctls
from migration.config import MigrationConfig
from migration.istioctls import RenderError
from migration.version_policy import PlaneVersion, VersionPlan

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it: istioctl's output is ~1 MB
CACHE_DIR = pathlib.Path(os.environ.get("KFISTIO_RENDER_CACHE", pathlib.Path(__file__).resolve().parent.parent
                                        / ".state" / "render-cache"))


@dataclasses.dataclass(frozen=True)
class RenderInput:
    """What decides the rendered objects of one control plane."""

    namespace: str
    """values.global.istioNamespace: where istiod, its config and its CA live."""
    revision: str
    """`default` for the charm's install (no revision flag), else the new plane's revision."""
    profile: str
    values: tuple[tuple[str, Any], ...] = ()
    """Extra values.* overrides, as sorted (key, value) pairs."""
    mesh_config: tuple[tuple[str, Any], ...] = ()
    """meshConfig.* overrides, as sorted (key, value) pairs."""
    unvalidated_values: tuple[tuple[str, Any], ...] = ()
    """Chart values istioctl's schema does not know (`--set unvalidatedValues.*`), as sorted (key, value) pairs."""


DEBUG_AUTH_NAMESPACES = "DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES"


def _values(cfg: MigrationConfig, plane: PlaneVersion) -> tuple[tuple[str, Any], ...]:
    """The plane's image overrides under the configured values (an explicit kf-istio-migrate:values wins)."""
    return tuple(sorted({**dict(plane.values), **cfg.values}.items()))


def legacy_input(cfg: MigrationConfig, plane: PlaneVersion = PlaneVersion("")) -> RenderInput:
    """The charm's install: profile minimal, istioNamespace = the model namespace, default revision, the images the
    legacy istiod runs."""
    return RenderInput(namespace=cfg.source_namespace, revision="default", profile=cfg.profile,
                       values=_values(cfg, plane), mesh_config=tuple(sorted(cfg.mesh_config.items())))


def migrated_input(cfg: MigrationConfig, plane: PlaneVersion = PlaneVersion("")) -> RenderInput:
    """The new plane: same flags in the target namespace under its own revision, at the plane's version and images.
    With rootNamespacePolicy=keep, mesh-wide config stays where users put it (meshConfig.rootNamespace = the old
    namespace)."""
    mesh, values = dict(cfg.mesh_config), _values(cfg, plane)
    if cfg.root_namespace_policy == "keep":
        mesh.setdefault("rootNamespace", cfg.source_namespace)
        # istiod authorizes its debug view (what `istioctl proxy-status` reads) for callers from the root namespace
        # only; istioctl authenticates as a ServiceAccount of the namespace it is pointed at (-i istio-system), so
        # without this the operator's proxy-status, and the in-use gate, would see no proxy outside istio-system.
        values = tuple(sorted({f"pilot.env.{DEBUG_AUTH_NAMESPACES}": cfg.target_namespace, **dict(values)}.items()))
    # Handed to Helm, the plane is rendered with the values the charts will be installed with (migration.helm),
    # the default validator included.
    unvalidated = (helm.UNVALIDATED_VALUES,) if cfg.hand_over == "helm" else ()
    if cfg.hand_over == "helm":
        values = tuple(sorted({**dict(values), helm.DEFAULT_REVISION: cfg.revision}.items()))
    return RenderInput(namespace=cfg.target_namespace, revision=cfg.revision, profile=cfg.profile,
                       values=values, mesh_config=tuple(sorted(mesh.items())), unvalidated_values=unvalidated)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def istioctl_args(inp: RenderInput) -> list[str]:
    """The `istioctl manifest generate` arguments for inp (pure)."""
    args = ["manifest", "generate", "--set", f"profile={inp.profile}",
            "--set", f"values.global.istioNamespace={inp.namespace}"]
    if inp.revision != "default":
        args += ["--set", f"revision={inp.revision}"]
    for key, value in inp.values:
        args += ["--set", f"values.{key}={_scalar(value)}"]
    for key, value in inp.mesh_config:
        args += ["--set", f"meshConfig.{key}={_scalar(value)}"]
    for key, value in inp.unvalidated_values:
        args += ["--set", f"unvalidatedValues.{key}={_scalar(value)}"]
    return args


def cache_key(version: str, args: list[str]) -> str:
    """The render cache key: the Istio version and the istioctl arguments (what decides the output)."""
    return hashlib.sha256("\0".join([version, *args]).encode()).hexdigest()[:24]


def _cached(directory: pathlib.Path, key: str) -> str | None:
    if (directory / f"{key}.yaml").is_file():
        return (directory / f"{key}.yaml").read_text()
    if (directory / f"{key}.yaml.gz").is_file():  # recorded renders (tests/fixtures/renders)
        return gzip.decompress((directory / f"{key}.yaml.gz").read_bytes()).decode()
    return None


def _write(path: pathlib.Path, text: str) -> None:
    """text into path at once: a concurrent reader (another preview, a test worker) sees all of it or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _named_istioctl(version: str, istioctl: istioctls.Configured) -> str | None:
    """The istioctl the operator named for version, checked (even when the cache answers), else None."""
    return istioctls.find(version, istioctl) if istioctls.configured_for(version, istioctl) else None


def render_text(inp: RenderInput, version: str, cache_dir: pathlib.Path | None = None,
                istioctl: istioctls.Configured = None, run_istioctl: bool = True) -> str:
    """istioctl's YAML for inp at version: from the cache when rendered before (istioctl is not run at all), else
    rendered by the istioctl for that version (istioctls.find: istioctl as configured, else from PATH), cached."""
    cache_dir = cache_dir or CACHE_DIR
    args = istioctl_args(inp)
    # An istioctl the operator named is checked even when the cache answers; one found on PATH only on a miss.
    named = _named_istioctl(version, istioctl)
    key = cache_key(version, args)
    text = _cached(cache_dir, key)
    if text is not None:
        return text
    if not run_istioctl:
        raise RenderError(f"no recorded render of istioctl {version} {' '.join(args)} in {cache_dir}")
    out = subprocess.run([named or istioctls.find(version, istioctl), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RenderError(f"istioctl {' '.join(args)} failed: {out.stderr.strip()}")
    _write(cache_dir / f"{key}.yaml", out.stdout)
    return out.stdout


def parse(text: str) -> list[dict[str, Any]]:
    """Rendered YAML -> objects, in istioctl's order (libyaml when PyYAML has it: the output is ~1 MB)."""
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc]


def render(inp: RenderInput, version: str, cache_dir: pathlib.Path | None = None,
           istioctl: istioctls.Configured = None, run_istioctl: bool = True) -> list[dict[str, Any]]:
    """The Kubernetes objects istioctl renders for inp at version (render_text's arguments). A render this machine
    cached is also kept parsed, as JSON beside its YAML: every preview and update reads both planes, and building
    ~1 MB of YAML into objects took ~0.3 s of each (2026-12-07), reading the JSON a few milliseconds. The JSON is kept
    only when it gives back exactly the objects the YAML does."""
    cache_dir = cache_dir or CACHE_DIR
    parsed = cache_dir / f"{cache_key(version, istioctl_args(inp))}.json"
    if parsed.is_file():
        _named_istioctl(version, istioctl)
        return json.loads(parsed.read_text())
    objects = parse(render_text(inp, version, cache_dir, istioctl, run_istioctl))
    text = json.dumps(objects, default=str)  # a value JSON has no form for (a YAML timestamp) fails the check below
    if parsed.with_suffix(".yaml").is_file() and json.loads(text) == objects:  # not the recorded renders' directory
        _write(parsed, text)
    return objects


@dataclasses.dataclass(frozen=True)
class Renders:
    """Both control planes of one configuration, rendered: the charm's (legacy) and the new one (migrated)."""

    legacy: list[dict[str, Any]]
    migrated: list[dict[str, Any]]
    versions: VersionPlan


def render_both(cfg: MigrationConfig, versions: VersionPlan, **kwargs) -> Renders:
    """Each plane rendered at its own version and images (kwargs: render_text's; istioctl defaults to cfg's)."""
    kwargs.setdefault("istioctl", cfg.istioctl)
    return Renders(legacy=render(legacy_input(cfg, versions.legacy), versions.legacy.version, **kwargs),
                   migrated=render(migrated_input(cfg, versions.migrated), versions.migrated.version, **kwargs),
                   versions=versions)


def is_crd(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] == "CustomResourceDefinition"


def crds(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Istio CRDs, sorted by name."""
    return sorted((o for o in objects if is_crd(o)), key=lambda o: o["metadata"]["name"])


def control_plane(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything that is not a CRD: istiod, its config, RBAC and webhooks."""
    return [o for o in objects if not is_crd(o)]


def revision_service(revision: str) -> str:
    """The Service of a revision's istiod (the istiod chart's name for it: `istiod-<revision>`)."""
    return f"istiod-{revision}"


def revision_address(namespace: str, revision: str) -> str:
    """Where a revision's sidecars reach its istiod in namespace (as topology reads it off a render)."""
    return f"{revision_service(revision)}.{namespace}.svc:15012"


@dataclasses.dataclass(frozen=True)
class Topology:
    """Facts about one rendered control plane that other components and exports need."""

    istiod_address: str
    """host:port sidecars and gateways use for config and certificates (istiod[-rev].<ns>.svc:15012)."""
    istiod_service: str
    """Name of istiod's Service (what webhooks call)."""
    proxy_image: str
    """The proxyv2 image matching the rendered istiod image (same hub and tag)."""
    injector_webhook: str
    """Name of the MutatingWebhookConfiguration that injects sidecars for this revision."""
    validator_webhook: str
    """Name of the ValidatingWebhookConfiguration for this revision."""


def topology(objects: list[dict[str, Any]], namespace: str, revision: str) -> Topology:
    """Read the Topology off rendered objects; fails naming what is missing if istioctl's output changed shape."""
    def one(kind: str) -> dict[str, Any]:
        found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] != DEFAULT_VALIDATOR]
        if len(found) != 1:
            raise ValueError(f"expected one rendered {kind} for namespace {namespace} revision {revision}, "
                             f"found {[o['metadata']['name'] for o in found]}")
        return found[0]

    istiod = one("Deployment")
    service = one("Service")["metadata"]
    image = istiod["spec"]["template"]["spec"]["containers"][0]["image"]
    hub, tag = image.rsplit("/pilot:", 1)
    return Topology(istiod_address=f"{service['name']}.{service['namespace']}.svc:15012", istiod_service=service["name"],
                    proxy_image=f"{hub}/proxyv2:{tag}",
                    injector_webhook=one("MutatingWebhookConfiguration")["metadata"]["name"],
                    validator_webhook=one("ValidatingWebhookConfiguration")["metadata"]["name"])
