"""The teardown's one kubectl call per namespace run, in deletion order."""

from __future__ import annotations

import json
import shlex

from components.checks import teardown_script
from migration import guard
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


def test_lifting_the_guard_waits_until_the_api_server_admits_what_it_refused():
    """The rollback's lift: the binding's delete, then server-side dry runs of an istiod in the source namespace
    until admitted (tests/faults/test_guard.py shows the guard refuses that very object)."""
    probe = guard.lift_probe("kubeflow")
    script = teardown_script(TARGET, guard.OBJECTS[:1], probe)
    delete, wait = script.split(" && for ")
    assert "delete ValidatingAdmissionPolicyBinding/kfistio-protect-istio" in delete
    assert f"echo {shlex.quote(json.dumps(probe))} | " in wait and "create -f - --dry-run=server" in wait
    assert probe["metadata"]["namespace"] == "kubeflow" and probe["metadata"]["labels"]["app"] == "istiod"
