"""The teardown's one kubectl call per namespace run, in deletion order."""

from __future__ import annotations

import shlex

from components.checks import teardown_script
from tests.unit.harness import TARGET


def _calls(script: str) -> list[list[str]]:
    return [shlex.split(part.split("; do ", 1)[1].split(" && break", 1)[0]) for part in script.split(" && for ")]


def test_one_delete_per_namespace_run_in_order():
    objects = [("MutatingWebhookConfiguration", "", "istio-sidecar-injector-kubeflow"),
               ("Deployment", "kubeflow", "istiod"), ("Service", "kubeflow", "istiod"),
               ("ClusterRole", "", "istiod-clusterrole-kubeflow"), ("ConfigMap", "other", "x")]
    calls = _calls(teardown_script(TARGET, objects))
    assert len(calls) == 2
    first, second = calls
    assert first[first.index("delete") + 1:first.index("--ignore-not-found")] == [
        "MutatingWebhookConfiguration/istio-sidecar-injector-kubeflow", "Deployment/istiod", "Service/istiod",
        "ClusterRole/istiod-clusterrole-kubeflow"]
    assert first[-2:] == ["-n", "kubeflow"] and second[-2:] == ["-n", "other"]
    assert teardown_script(TARGET, []) == "true"
