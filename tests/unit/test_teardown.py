"""The teardown's one kubectl call per namespace run, in deletion order."""

from __future__ import annotations

import json
import shlex
import subprocess

from components.checks import refused_script, teardown_script
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


def _run_with_kubectl(directory, script: str, answers: list[str]) -> tuple[int, list[str]]:
    """Run script with a kubectl on PATH that records its arguments and prints answers[i] on its i-th call (the
    last one after that); returns the exit code and the calls."""
    directory.mkdir()
    (directory / "answers").write_text("\n".join(answers) + "\n")
    fake = directory / "kubectl"
    fake.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n'
                    'n=$(wc -l < "$(dirname "$0")/calls")\n'
                    'sed -n "${n}p;\\$p" "$(dirname "$0")/answers" | head -1\n')
    fake.chmod(0o755)
    proc = subprocess.run(["bash", "-c", script], env={"PATH": f"{directory}:/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=30)
    return proc.returncode, (directory / "calls").read_text().splitlines()


def test_the_update_waits_until_the_guard_refuses_a_deletion(tmp_path):
    """Right after the guard's binding is written the API server may still admit a deletion: the guard's last step
    dry-runs one on the server until it is refused, and fails if it never is."""
    script = refused_script(TARGET, "customresourcedefinition/gateways.networking.istio.io", guard.REFUSAL, tries=3)
    code, calls = _run_with_kubectl(tmp_path / "a", script, [
        "customresourcedefinition.apiextensions.k8s.io \"gateways.networking.istio.io\" deleted (server dry run)",
        f"Error from server (Forbidden): {guard.REFUSAL} customresourcedefinitions gateways.networking.istio.io"])
    assert code == 0 and len(calls) == 2
    assert calls[0].split()[-3:] == ["delete", "customresourcedefinition/gateways.networking.istio.io",
                                     "--dry-run=server"]
    code, calls = _run_with_kubectl(tmp_path / "b", script, ["deleted (server dry run)"])
    assert code == 1 and len(calls) == 3
