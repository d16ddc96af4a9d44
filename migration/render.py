"""Istio objects from the pinned istioctl: `istioctl manifest generate` with the flags the istio-pilot charm uses.

`istioctl_args` is pure; `render` runs istioctl once per distinct (istioctl version, flags) and caches the YAML,
so previews and tests do not re-render. Nothing here hand-writes an Istio object.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import shutil
import subprocess
from typing import Any, Mapping

import yaml

from migration.config import MigrationConfig

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


def legacy_input(cfg: MigrationConfig) -> RenderInput:
    """The charm's install: profile minimal, istioNamespace = the model namespace, default revision."""
    return RenderInput(namespace=cfg.source_namespace, revision="default", profile=cfg.profile,
                       values=tuple(sorted(cfg.values.items())), mesh_config=tuple(sorted(cfg.mesh_config.items())))


def migrated_input(cfg: MigrationConfig) -> RenderInput:
    """The new plane: same flags in the target namespace under its own revision. With rootNamespacePolicy=keep,
    mesh-wide config stays where users put it (meshConfig.rootNamespace = the old namespace)."""
    mesh = dict(cfg.mesh_config)
    if cfg.root_namespace_policy == "keep":
        mesh.setdefault("rootNamespace", cfg.source_namespace)
    return RenderInput(namespace=cfg.target_namespace, revision=cfg.revision, profile=cfg.profile,
                       values=tuple(sorted(cfg.values.items())), mesh_config=tuple(sorted(mesh.items())))


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
    return args


def render(inp: RenderInput, istioctl: str | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects istioctl renders for inp, in istioctl's order."""
    istioctl = istioctl or shutil.which("istioctl")
    if not istioctl:
        raise FileNotFoundError("istioctl is not on PATH: run `make setup` and use the toolchain's PATH "
                                "(`python -m devcluster env`), or put the pinned istioctl on PATH")
    args = istioctl_args(inp)
    version = subprocess.run([istioctl, "version", "--remote=false", "--short"], capture_output=True, text=True,
                             check=True).stdout.strip()
    key = hashlib.sha256("\0".join([version, *args]).encode()).hexdigest()[:24]
    cached = CACHE_DIR / f"{key}.yaml"
    if not cached.is_file():
        out = subprocess.run([istioctl, *args], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"istioctl {' '.join(args)} failed: {out.stderr.strip()}")
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(out.stdout)
        tmp.replace(cached)
    return [doc for doc in yaml.load_all(cached.read_text(), Loader=_LOADER) if doc]


def is_crd(obj: Mapping[str, Any]) -> bool:
    return obj["kind"] == "CustomResourceDefinition"


def crds(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Istio CRDs, sorted by name."""
    return sorted((o for o in objects if is_crd(o)), key=lambda o: o["metadata"]["name"])


def control_plane(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything that is not a CRD: istiod, its config, RBAC and webhooks."""
    return [o for o in objects if not is_crd(o)]


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
        found = [o for o in objects if o["kind"] == kind]
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
