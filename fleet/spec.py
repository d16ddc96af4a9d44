"""The fleet file: the clusters a team moves with one command, each by kubeconfig and context with its own config
overrides, and the one state backend they share. Parsed and checked here, before any cluster is looked at.

    backend: s3://team-state/kubeflow?region=eu-west-1     # each cluster's stacks live under <backend>/<name>
    config:                                                # kf-istio-migrate:* keys for every cluster
      rolloutParallelism: "20"
    clusters:
      - name: staging
        kubeconfig: ~/.kube/staging.yaml
        context: staging-admin
        canary: true                                       # moved first, alone (default: the first ready)
      - name: prod-eu
        kubeconfig: ~/.kube/prod-eu.yaml
        config: {canaryNamespaces: '["team-a"]'}
"""

from __future__ import annotations

import dataclasses
import os
import re
import urllib.parse
from typing import Any, Mapping

from migration.config import KEYS, PROJECT

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_FLEET_KEYS = ("backend", "config", "clusters")
_CLUSTER_KEYS = ("name", "kubeconfig", "context", "canary", "config")
# The stack binds these itself, from the cluster's kubeconfig and context.
_PER_CLUSTER_ONLY = ("kubeconfig", "context")


class FleetError(ValueError):
    """The fleet file is wrong; the message names the key (as a path, e.g. clusters[2].kubeconfig) and the fix."""


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    name: str
    kubeconfig: str
    context: str | None
    config: Mapping[str, str]
    """kf-istio-migrate:* values for this cluster: the fleet's, then its own."""
    canary: bool


@dataclasses.dataclass(frozen=True)
class Fleet:
    backend: str
    clusters: tuple[ClusterSpec, ...]

    def canary(self, ready: list[str]) -> str | None:
        """The cluster moved first and alone: the one marked canary (None if its preview failed: then no cluster
        moves), else the first whose preview succeeded."""
        marked = next((c.name for c in self.clusters if c.canary), None)
        if marked:
            return marked if marked in ready else None
        return ready[0] if ready else None

    def backend_of(self, cluster: ClusterSpec) -> str:
        return cluster_backend(self.backend, cluster.name)


def cluster_backend(backend: str, name: str) -> str:
    """The backend URL of one cluster's stacks: the fleet's with the cluster's name appended to its path (a key prefix
    in a bucket, a subdirectory of a file backend), the query (endpoint, region, ...) kept. Each cluster then has
    its own `legacy` and `migrated` stacks, and each stack its own lock."""
    url = urllib.parse.urlsplit(backend)
    path = f"{url.path.rstrip('/')}/{name}"
    return urllib.parse.urlunsplit((url.scheme, url.netloc, path, url.query, ""))


def _config(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FleetError(f"{where} must be a map of {PROJECT} keys to values, not {type(raw).__name__}")
    for key in raw:
        bare = str(key).removeprefix(f"{PROJECT}:")
        if bare in _PER_CLUSTER_ONLY:
            raise FleetError(f"{where}.{key}: set the cluster's `{bare}` beside its name instead")
        if bare not in KEYS:
            raise FleetError(f"{where}.{key} is not a {PROJECT} key; known keys: {', '.join(KEYS)}")
    return {str(k).removeprefix(f"{PROJECT}:"): v if isinstance(v, str) else _yaml_scalar(v) for k, v in raw.items()}


def _yaml_scalar(value: Any) -> str:
    """Config values are strings, as `pulumi config set` stores them: true/false, numbers as written."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _only(raw: Mapping, allowed: tuple[str, ...], where: str) -> None:
    if unknown := sorted(set(raw) - set(allowed)):
        raise FleetError(f"{where}{unknown[0]} is not a fleet file key; allowed: {', '.join(allowed)}")


def parse(raw: Any, env: Mapping[str, str] | None = None) -> Fleet:
    """A Fleet from the loaded YAML; the backend is the file's `backend`, else PULUMI_BACKEND_URL from env."""
    env = os.environ if env is None else env
    if not isinstance(raw, Mapping):
        raise FleetError("the fleet file must be a map with `clusters` (and optionally `backend`, `config`)")
    _only(raw, _FLEET_KEYS, "")
    backend = raw.get("backend") or env.get("PULUMI_BACKEND_URL")
    if not backend:
        raise FleetError("no state backend: set `backend` in the fleet file (s3://BUCKET/PREFIX?region=...) or "
                         "PULUMI_BACKEND_URL")
    url = urllib.parse.urlsplit(backend)
    if url.scheme not in ("s3", "file", "gs", "azblob"):
        raise FleetError(f"backend {backend!r}: a fleet shares a self-managed backend (s3://, file://, gs://, "
                         f"azblob://); each cluster's stacks go under <backend>/<cluster name>")
    if url.scheme != "file" and not url.netloc:
        raise FleetError(f"backend {backend!r} names no bucket: write {url.scheme}://BUCKET[/PREFIX][?...]")
    shared = _config(raw.get("config"), "config")
    clusters = raw.get("clusters")
    if not isinstance(clusters, list) or not clusters:
        raise FleetError("clusters: list at least one cluster (name, kubeconfig[, context, canary, config])")
    specs, names = [], set()
    for i, entry in enumerate(clusters):
        where = f"clusters[{i}]"
        if not isinstance(entry, Mapping):
            raise FleetError(f"{where} must be a map with name and kubeconfig")
        _only(entry, _CLUSTER_KEYS, f"{where}.")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise FleetError(f"{where}.name = {name!r}: lower-case letters, digits and '-' (it names the cluster's "
                             f"state prefix and work directory)")
        if name in names:
            raise FleetError(f"{where}.name = {name!r} is used twice; each cluster needs its own name")
        names.add(name)
        kubeconfig = entry.get("kubeconfig")
        if not isinstance(kubeconfig, str) or not kubeconfig:
            raise FleetError(f"{where}.kubeconfig: the path of this cluster's kubeconfig is required")
        kubeconfig = os.path.expanduser(kubeconfig)
        if not os.path.isfile(kubeconfig):
            raise FleetError(f"{where}.kubeconfig = {kubeconfig!r} is not a file")
        canary = entry.get("canary", False)
        if not isinstance(canary, bool):
            raise FleetError(f"{where}.canary = {canary!r}: true or false")
        specs.append(ClusterSpec(name, kubeconfig, entry.get("context"),
                                 {**shared, **_config(entry.get("config"), f"{where}.config")}, canary))
    if sum(c.canary for c in specs) > 1:
        raise FleetError("more than one cluster says canary: true; mark one (or none: the first is the canary)")
    return Fleet(backend, tuple(specs))
