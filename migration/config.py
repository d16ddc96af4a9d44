"""Typed, validated configuration: read once from Pulumi config, refused with a message naming key, value and rule.

Every key is namespaced by the project (`kf-istio-migrate:<key>`); docs/configuration.md has the reference table.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Mapping

from migration.versions import parse_version

PROJECT = "kf-istio-migrate"
TOPOLOGIES = ("legacy", "migrated")
PROFILES = ("minimal",)
ROOT_NAMESPACE_POLICIES = ("keep", "move")
ROLLOUT_STRATEGIES = ("wave", "namespaces", "workloads", "one-namespace-at-a-time")
UNMANAGED_POD_POLICIES = ("wait", "evict", "fail")
HAND_OVERS = ("none", "release", "helm")

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_VALUES_KEY = re.compile(r"^[A-Za-z0-9_.\[\]-]+$")


class ConfigError(ValueError):
    """One invalid configuration value; the message names the key, the value and what is allowed."""

    def __init__(self, key: str, value: Any, allowed: str):
        super().__init__(f"invalid config {PROJECT}:{key} = {value!r}: {allowed}")
        self.key = key


@dataclasses.dataclass(frozen=True)
class MigrationConfig:
    """Everything the program needs to decide what exists; built only by `from_mapping`."""

    topology: str
    """`legacy` (the Charmed Kubeflow layout, istiod in sourceNamespace) or `migrated` (istiod in targetNamespace)."""
    source_namespace: str
    """Namespace of the legacy control plane (the Juju model, normally `kubeflow`)."""
    target_namespace: str
    """Namespace the control plane moves to (normally `istio-system`)."""
    revision: str
    """Istio revision of the new control plane; distinct from `default` so two istiods never fight over webhooks."""
    target_version: str | None
    """The Istio version the new plane runs; None: the version the legacy istiod runs (a pure namespace move)."""
    allow_development_builds: bool
    """Whether a development build of Istio (live or target) may be moved; Istio supports no upgrade to or from one."""
    istioctl: str | Mapping[str, str] | None
    """The istioctl to render with: a path (for the one version needed), a map version -> path, or None (PATH:
    `istioctl-<version>`, then `istioctl`); checked to report the version it renders."""
    profile: str
    """istioctl profile; the charm uses `minimal`."""
    values: Mapping[str, Any]
    """Extra `--set values.<key>=<value>` overrides passed to istioctl (image hub/tag, as the charm does)."""
    mesh_config: Mapping[str, Any]
    """`--set meshConfig.<key>=<value>` overrides; the charm sets accessLogFile=/dev/stdout."""
    gateway_namespace: str
    """Namespace of the ingress gateway workload (stays in sourceNamespace unless moved on purpose)."""
    root_namespace_policy: str
    """`keep`: the new istiod keeps meshConfig.rootNamespace=sourceNamespace; `move`: mesh-wide config moves."""
    rollout_strategy: str
    """`wave`: one rollout command moves every workload; `namespaces`: one command per namespace, `workloads`: one
    per workload (Deployment, StatefulSet, DaemonSet), all started together once the webhooks are switched (the
    engine's `--parallel` caps how many of those run at once); `one-namespace-at-a-time`: one per namespace, each
    after the one before (the manual runbook's loop)."""
    rollout_parallelism: int
    """At most this many workloads restart (or have pods evicted) at once, over every namespace."""
    rollout_timeout_seconds: int
    """Per-workload limit for its rollout (and for each eviction's replacement to become Ready)."""
    unmanaged_pods: str
    """What to do with running pods on the old plane that no workload can restart (bare pods, Job pods, Argo
    steps): `wait` for them to finish, `evict` them (losing their in-flight work), or `fail` before any change."""
    unmanaged_pods_timeout_seconds: int
    """How long `wait` waits for those pods to finish before the update fails, naming them."""
    canary_namespaces: tuple[str, ...]
    """Namespaces moved first, before the default injector is switched (their new pods sent to the new istiod by one
    write of the default injector, their workloads moved, proven on the live mesh by the canary gate, then soaked);
    empty: the whole mesh in one wave."""
    canary_soak_seconds: int
    """How long the canary runs on the new plane before the gate looks again and the rest proceeds."""
    canary_only: bool
    """`pulumi up` moves the canary namespaces only and ends; unset it to move the rest."""
    require_live_view: bool
    """The in-use gate fails while the control planes' own view of their proxies cannot be had (`istioctl
    proxy-status`: no istioctl, no `pods/portforward`, istiod unreachable) instead of judging by pod specs alone."""
    create_source_namespace: bool
    """Whether the legacy stack creates sourceNamespace (true only on clusters where no Juju model made it)."""
    hand_over: str
    """`none`: this stack owns what it declares; `release`: it lets go of everything (retained on delete, no longer
    protected), so that `pulumi destroy` empties it and the cluster keeps every object as it is; `helm`: the same,
    after marking what Istio's base and istiod charts render as their releases' (migration.helm)."""
    keep_guard: bool
    """With `release` or `helm`: whether the guard stays on the cluster, an object nothing owns (else destroy
    deletes it)."""
    helm_base_release: str
    """With `helm`: the name of the release of Istio's base chart (the CRDs), in targetNamespace."""
    helm_istiod_release: str
    """With `helm`: the name of the release of Istio's istiod chart (the control plane), in targetNamespace."""

    @property
    def control_plane_namespace(self) -> str:
        return self.source_namespace if self.topology == "legacy" else self.target_namespace

    @property
    def control_plane_revision(self) -> str:
        return "default" if self.topology == "legacy" else self.revision


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(key, value, "must be a string")
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        if value not in choices:
            raise ConfigError(key, value, f"must be one of {', '.join(choices)}")
        return value
    return check


def _namespace(key: str, value: Any) -> str:
    text = _text(key, value)
    if len(text) > 63 or not _DNS1123_LABEL.match(text):
        raise ConfigError(key, value, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63)")
    return text


def _revision(key: str, value: Any) -> str:
    text = _namespace(key, value)
    if text == "default":
        raise ConfigError(key, value, "must not be `default`: the new control plane needs its own revision")
    if not _LABEL_VALUE.match(text):
        raise ConfigError(key, value, "must be a valid label value")
    return text


def _release_name(key: str, value: Any) -> str:
    text = _text(key, value)
    if len(text) > 53 or not _DNS1123_LABEL.match(text):
        raise ConfigError(key, value, "must be a Helm release name (lower-case letters, digits, '-', at most 53)")
    return text


def _is_whole(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, str)) and str(value).isdigit()


def _positive_int(key: str, value: Any) -> int:
    if not _is_whole(value) or int(value) <= 0:
        raise ConfigError(key, value, "must be a positive whole number")
    return int(value)


def _whole_number(key: str, value: Any) -> int:
    if not _is_whole(value):
        raise ConfigError(key, value, "must be a whole number (0 or more)")
    return int(value)


def _namespaces(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(key, value, "must be a list of namespaces (pulumi config set --path "
                                      f"'{PROJECT}:{key}[0]' <namespace>)")
    names = tuple(_namespace(f"{key}[{i}]", item) for i, item in enumerate(value))
    if len(set(names)) != len(names):
        raise ConfigError(key, value, "must not name a namespace twice")
    return names


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ConfigError(key, value, "must be true or false")


def _version(key: str, value: Any) -> str:
    text = _text(key, value)
    if parse_version(text).minor is None:
        raise ConfigError(key, value, "must be an Istio version as istioctl reports it (1.24.3, 1.25.0-rc.1, 1.31-dev)")
    return text


def _istioctl(key: str, value: Any) -> str | dict[str, str]:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, Mapping) and value and all(isinstance(k, str) and isinstance(v, str) and v
                                                    for k, v in value.items()):
        for version in value:
            _version(f"{key}.{version}", version)
        return dict(value)
    raise ConfigError(key, value, "must be a path to istioctl, or a map of Istio versions to istioctl paths")


def _set_overrides(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "must be a map of istioctl --set keys to scalar values")
    for name, item in value.items():
        if not isinstance(name, str) or not _VALUES_KEY.match(name):
            raise ConfigError(key, value, f"key {name!r} is not a valid istioctl --set path")
        if isinstance(item, (Mapping, list)) or item is None:
            raise ConfigError(key, value, f"value of {name!r} must be a string, number or boolean")
    return dict(value)


# key -> (parser, default). The default goes through the parser too.
_SCHEMA: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "topology": (_one_of(TOPOLOGIES), None),
    "sourceNamespace": (_namespace, "kubeflow"),
    "targetNamespace": (_namespace, "istio-system"),
    "revision": (_revision, "kf-1-30"),
    "targetVersion": (_version, None),
    "allowDevelopmentBuilds": (_bool, False),
    "istioctl": (_istioctl, None),
    "profile": (_one_of(PROFILES), "minimal"),
    "values": (_set_overrides, {}),
    "meshConfig": (_set_overrides, {"accessLogFile": "/dev/stdout"}),
    "gatewayNamespace": (_namespace, None),
    "rootNamespacePolicy": (_one_of(ROOT_NAMESPACE_POLICIES), "keep"),
    "rolloutStrategy": (_one_of(ROLLOUT_STRATEGIES), "wave"),
    "rolloutParallelism": (_positive_int, 50),
    "rolloutTimeoutSeconds": (_positive_int, 600),
    "unmanagedPods": (_one_of(UNMANAGED_POD_POLICIES), "wait"),
    "unmanagedPodsTimeoutSeconds": (_positive_int, 3600),
    "requireLiveView": (_bool, False),
    "canaryNamespaces": (_namespaces, ()),
    "canarySoakSeconds": (_whole_number, 60),
    "canaryOnly": (_bool, False),
    "createSourceNamespace": (_bool, False),
    "handOver": (_one_of(HAND_OVERS), "none"),
    "keepGuard": (_bool, True),
    "helmBaseRelease": (_release_name, "istio-base"),
    "helmIstiodRelease": (_release_name, "istiod"),
}
KEYS = tuple(_SCHEMA)


def from_mapping(raw: Mapping[str, Any]) -> MigrationConfig:
    """Validate raw config (key -> value, keys without the project prefix) into a MigrationConfig."""
    unknown = sorted(set(raw) - set(_SCHEMA))
    if unknown:
        raise ConfigError(unknown[0], raw[unknown[0]], f"is not a known key; known keys: {', '.join(KEYS)}")
    if raw.get("topology") is None:
        raise ConfigError("topology", None, f"is required: one of {', '.join(TOPOLOGIES)} (set it per stack)")
    parsed = {}
    for key, (parse, default) in _SCHEMA.items():
        value = raw.get(key, default)
        parsed[key] = None if value is None else parse(key, value)
    parsed["gatewayNamespace"] = parsed["gatewayNamespace"] or parsed["sourceNamespace"]
    if parsed["sourceNamespace"] == parsed["targetNamespace"]:
        raise ConfigError("targetNamespace", parsed["targetNamespace"],
                          f"must differ from sourceNamespace ({parsed['sourceNamespace']})")
    if parsed["handOver"] == "helm" and parsed["topology"] != "migrated":
        raise ConfigError("handOver", "helm", "hands the migrated plane over; a legacy stack lets go with `release`")
    if parsed["helmBaseRelease"] == parsed["helmIstiodRelease"]:
        raise ConfigError("helmIstiodRelease", parsed["helmIstiodRelease"],
                          "must differ from helmBaseRelease: each chart is its own release")
    if parsed["gatewayNamespace"] != parsed["sourceNamespace"]:
        raise ConfigError("gatewayNamespace", parsed["gatewayNamespace"],
                          f"must be sourceNamespace ({parsed['sourceNamespace']}): moving the gateway changes its "
                          f"identity in every ns-owner-access-istio AuthorizationPolicy, which is not automated yet")
    if parsed["canaryOnly"] and not parsed["canaryNamespaces"]:
        raise ConfigError("canaryOnly", True, "needs canaryNamespaces: the namespaces to move first")
    if parsed["canaryNamespaces"] and parsed["topology"] != "migrated":
        raise ConfigError("canaryNamespaces", list(parsed["canaryNamespaces"]),
                          "applies to the migrated stack (the move); the way back puts every namespace back at once")
    planes = {parsed["sourceNamespace"], parsed["targetNamespace"], parsed["gatewayNamespace"]}
    if clash := sorted(planes & set(parsed["canaryNamespaces"])):
        raise ConfigError("canaryNamespaces", list(parsed["canaryNamespaces"]),
                          f"must not name {clash[0]}: a control plane's or the gateway's namespace is not a canary")
    return MigrationConfig(
        topology=parsed["topology"], source_namespace=parsed["sourceNamespace"],
        target_namespace=parsed["targetNamespace"], revision=parsed["revision"],
        target_version=parsed["targetVersion"], allow_development_builds=parsed["allowDevelopmentBuilds"],
        istioctl=parsed["istioctl"], profile=parsed["profile"], values=parsed["values"],
        mesh_config=parsed["meshConfig"], gateway_namespace=parsed["gatewayNamespace"],
        root_namespace_policy=parsed["rootNamespacePolicy"], rollout_strategy=parsed["rolloutStrategy"],
        rollout_parallelism=parsed["rolloutParallelism"],
        rollout_timeout_seconds=parsed["rolloutTimeoutSeconds"], unmanaged_pods=parsed["unmanagedPods"],
        unmanaged_pods_timeout_seconds=parsed["unmanagedPodsTimeoutSeconds"],
        require_live_view=parsed["requireLiveView"], canary_namespaces=parsed["canaryNamespaces"],
        canary_soak_seconds=parsed["canarySoakSeconds"], canary_only=parsed["canaryOnly"],
        create_source_namespace=parsed["createSourceNamespace"], hand_over=parsed["handOver"],
        keep_guard=parsed["keepGuard"], helm_base_release=parsed["helmBaseRelease"],
        helm_istiod_release=parsed["helmIstiodRelease"])


def load() -> MigrationConfig:
    """Read this stack's `kf-istio-migrate:*` config (plain strings, or objects for values/meshConfig). Keys this
    program does not know are refused too: a misspelt key must not silently fall back to its default."""
    import pulumi
    from pulumi.runtime.config import CONFIG, get_config_env

    config = pulumi.Config(PROJECT)
    present = {k.split(":", 1)[1] for k in {**get_config_env(), **CONFIG.get()} if k.startswith(f"{PROJECT}:")}
    raw: dict[str, Any] = {}
    for key in sorted(present | set(KEYS)):
        value = config.get(key)
        if key in ("values", "meshConfig", "canaryNamespaces") or (key == "istioctl" and (value or "").startswith("{")):
            value = config.get_object(key)  # a map (pulumi config set --path 'kf-istio-migrate:istioctl["1.24.3"]')
        if value is not None:
            raw[key] = value
    return from_mapping(raw)
