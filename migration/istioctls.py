"""Which istioctl renders a given Istio version: the configured one (`kf-istio-migrate:istioctl`, a path or a map
version -> path), else `istioctl-<version>` or `istioctl` on PATH; always checked with `istioctl version
--remote=false` before it renders anything."""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Mapping

Configured = str | Mapping[str, str] | None
HOW = ("set kf-istio-migrate:istioctl to its path (or `pulumi config set --path 'kf-istio-migrate:istioctl"
       "[\"{v}\"]' PATH`), or put it on PATH as istioctl-{v}")


class RenderError(RuntimeError):
    """istioctl could not render what the config asks for; the message names the binary, version or fix."""


@functools.lru_cache(maxsize=None)
def reported_version(istioctl: str) -> str:
    """The version istioctl reports about itself (`client version: 1.30-dev` -> `1.30-dev`)."""
    try:
        out = subprocess.run([istioctl, "version", "--remote=false", "--short"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as err:
        raise RenderError(f"{istioctl} does not run as istioctl (`istioctl version --remote=false`: {err}): "
                          "install istioctl there, or " + HOW.format(v="<version>")) from None
    return out.rsplit(":", 1)[-1].strip()


def configured_for(version: str, configured: Configured) -> str | None:
    """The istioctl the config names for version, if it names one."""
    return configured.get(version) if isinstance(configured, Mapping) else configured


def find(version: str, configured: Configured = None) -> str:
    """The istioctl that renders version; refuses naming what to install when none is configured or found, and
    when the configured one reports another version."""
    if path := configured_for(version, configured):
        actual = reported_version(path)
        if actual != version:
            raise RenderError(f"kf-istio-migrate:istioctl {path} is istioctl {actual}, but this plane runs Istio "
                              f"{version}: install istioctl {version} and " + HOW.format(v=version))
        return path
    for candidate in (shutil.which(f"istioctl-{version}"), shutil.which("istioctl")):
        if candidate and reported_version(candidate) == version:
            return candidate
    raise RenderError(f"no istioctl {version} found (this plane runs Istio {version}): install istioctl {version} "
                      "and " + HOW.format(v=version))


def named(version: str | None, path: str | None) -> str | None:
    """The istioctl a command line names: of version (`find`, path being the configured one), else path as given."""
    return find(version, path) if version else path


def default_version(configured: Configured = None) -> str:
    """What the operator's istioctl reports: the configured path, else `istioctl` on PATH (a fresh cluster)."""
    named = configured if isinstance(configured, str) else shutil.which("istioctl")
    if not named:
        raise RenderError("no Istio runs on this cluster and no istioctl is on PATH: set kf-istio-migrate:"
                          "targetVersion or kf-istio-migrate:istioctl, or run `make setup` and put the toolchain on "
                          "PATH (`eval \"$(.venv/bin/python -m devcluster tools)\"`)")
    return reported_version(named)


def cluster_flags(kubeconfig: str | None, context: str | None) -> list[str]:
    """istioctl's flags for one cluster (none: KUBECONFIG and its current context)."""
    return [*(["--kubeconfig", kubeconfig] if kubeconfig else []), *(["--context", context] if context else [])]
