"""Invalid configuration is refused before any resource is declared, with a message naming key, value and rule."""

from __future__ import annotations

import pytest

from migration.config import ConfigError, from_mapping
from tests.unit.harness import run_program
from tests.unit.live_mesh import empty_cluster

INVALID = [
    ({"topology": "upgraded"}, "topology", "must be one of legacy, migrated"),
    ({}, "topology", "is required"),
    ({"topology": "migrated", "targetNamespace": "Istio_System"}, "targetNamespace", "DNS-1123 label"),
    ({"topology": "migrated", "sourceNamespace": "x" * 64}, "sourceNamespace", "DNS-1123 label"),
    ({"topology": "migrated", "targetNamespace": "kubeflow"}, "targetNamespace", "must differ from sourceNamespace"),
    ({"topology": "migrated", "revision": "default"}, "revision", "must not be `default`"),
    ({"topology": "migrated", "revision": "Kf_1"}, "revision", "DNS-1123 label"),
    ({"topology": "migrated", "rolloutParallelism": 0}, "rolloutParallelism", "positive whole number"),
    ({"topology": "migrated", "rolloutStrategy": "all-at-once"}, "rolloutStrategy", "one of wave, namespaces, workloads"),
    ({"topology": "migrated", "unmanagedPods": "ignore"}, "unmanagedPods", "one of wait, evict, fail"),
    ({"topology": "migrated", "unmanagedPodsTimeoutSeconds": 0}, "unmanagedPodsTimeoutSeconds", "positive whole"),
    ({"topology": "migrated", "rolloutParallelism": "four"}, "rolloutParallelism", "positive whole number"),
    ({"topology": "migrated", "rolloutTimeoutSeconds": -5}, "rolloutTimeoutSeconds", "positive whole number"),
    ({"topology": "migrated", "targetVersion": "latest"}, "targetVersion", "must be an Istio version as istioctl"),
    ({"topology": "migrated", "allowDevelopmentBuilds": "yes"}, "allowDevelopmentBuilds", "must be true or false"),
    ({"topology": "migrated", "istioctl": {"1.24": "/bin/istioctl"}}, "istioctl.1.24", "must be an Istio version"),
    ({"topology": "migrated", "istioctl": ""}, "istioctl", "a path to istioctl, or a map of Istio versions"),
    ({"topology": "migrated", "profile": "ambient"}, "profile", "must be one of minimal"),
    ({"topology": "migrated", "values": {"global.hub": ["a"]}}, "values", "must be a string, number or boolean"),
    ({"topology": "migrated", "meshConfig": "accessLogFile=/dev/stdout"}, "meshConfig", "must be a map"),
    ({"topology": "migrated", "gatewayNamespace": "other"}, "gatewayNamespace", "must be sourceNamespace (kubeflow)"),
    ({"topology": "migrated", "gatewayNamespace": "istio-system"}, "gatewayNamespace", "not automated yet"),
    ({"topology": "migrated", "rootNamespacePolicy": "drop"}, "rootNamespacePolicy", "must be one of keep, move"),
    ({"topology": "legacy", "createSourceNamespace": "yes"}, "createSourceNamespace", "must be true or false"),
    ({"topology": "migrated", "handOver": "flux"}, "handOver", "must be one of none, release, helm"),
    ({"topology": "legacy", "handOver": "helm"}, "handOver", "hands the migrated plane over"),
    ({"topology": "migrated", "helmBaseRelease": "Istio_Base"}, "helmBaseRelease", "must be a Helm release name"),
    ({"topology": "migrated", "helmIstiodRelease": "istio-base"}, "helmIstiodRelease",
     "must differ from helmBaseRelease"),
    ({"topology": "migrated", "keepGuard": "no"}, "keepGuard", "must be true or false"),
    ({"topology": "legacy", "targetNamespce": "istio-system"}, "targetNamespce", "is not a known key"),
]


@pytest.mark.parametrize("raw,key,rule", INVALID, ids=[f"{c[1]}-{i}" for i, c in enumerate(INVALID)])
def test_invalid_value_is_refused_with_its_key_and_rule(raw, key, rule):
    with pytest.raises(ConfigError) as err:
        from_mapping(raw)
    assert err.value.key == key
    assert str(err.value).startswith(f"invalid config kf-istio-migrate:{key} = ")
    assert rule in str(err.value)


@pytest.mark.parametrize("raw,key,rule", INVALID[:1] + INVALID[4:6] + INVALID[7:8] + INVALID[-1:],
                         ids=["topology", "same-namespaces", "revision-default", "parallelism", "misspelt-key"])
def test_program_declares_nothing_on_invalid_config(raw, key, rule):
    registered = []
    with pytest.raises(Exception, match=rule):
        run_program("invalid", raw, empty_cluster(), registered)
    assert registered == [], "config is validated before any resource is declared"


def test_harness_sees_registrations_when_valid():
    """The guard above is only meaningful if the harness records declarations: a valid config declares some."""
    assert run_program("valid", {"topology": "legacy"}, empty_cluster())


def test_defaults():
    cfg = from_mapping({"topology": "migrated"})
    assert (cfg.source_namespace, cfg.target_namespace, cfg.revision) == ("kubeflow", "istio-system", "kf-1-30")
    assert cfg.gateway_namespace == "kubeflow" and cfg.root_namespace_policy == "keep"
    assert cfg.mesh_config == {"accessLogFile": "/dev/stdout"}, "the charm's access log setting"
    assert (cfg.control_plane_namespace, cfg.control_plane_revision) == ("istio-system", "kf-1-30")
    legacy = from_mapping({"topology": "legacy", "rolloutParallelism": "8", "createSourceNamespace": "true"})
    assert (legacy.control_plane_namespace, legacy.control_plane_revision) == ("kubeflow", "default")
    assert legacy.rollout_parallelism == 8 and legacy.create_source_namespace is True
