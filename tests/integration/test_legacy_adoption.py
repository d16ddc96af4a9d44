"""The legacy stack over the charm's own install: it adopts, changes no user config and injects as before."""

from __future__ import annotations

import subprocess

import pytest

from demo import fixture
from demo.observe import InjectorSampler, kubectl_json, snapshot
from devcluster.toolchain import REPO
from tests.integration.conftest import fresh_cluster, run

SIZE = fixture.FixtureSize(profiles=2, deployments=1)


@pytest.fixture(scope="module")
def adopted():
    cluster, env = fresh_cluster("adopt")
    fixture.build(env, SIZE)
    before = snapshot(env)
    webhooks_before = kubectl_json(env, "get", "mutatingwebhookconfigurations")["items"]
    run(["pulumi", "stack", "init", "legacy"], env, cwd=REPO)
    sampler = InjectorSampler(str(cluster.kubeconfig), fixture.profile_namespaces(SIZE))
    sampler.start()
    run(["pulumi", "up", "--stack", "legacy", "--yes", "--skip-preview", "--non-interactive"], env, cwd=REPO)
    yield {"env": env, "before": before, "after": snapshot(env), "samples": sampler.stop(),
           "webhooks_before": webhooks_before}
    cluster.down(purge=True)


def test_nothing_user_owned_changed(adopted):
    assert adopted["after"]["crd_uids"] == adopted["before"]["crd_uids"]
    assert adopted["after"]["crs"] == adopted["before"]["crs"]
    assert adopted["after"]["roots"] == adopted["before"]["roots"]


def test_one_injector_throughout_and_webhooks_as_istioctl_left_them(adopted):
    counts = [c for s in adopted["samples"] for c in s["injectors"].values()]
    assert counts and min(counts) == max(counts) == 1
    selectors = lambda items: {(w["metadata"]["name"], h["name"], str(h.get("namespaceSelector")))  # noqa: E731
                               for w in items for h in w["webhooks"]}
    after = kubectl_json(adopted["env"], "get", "mutatingwebhookconfigurations")["items"]
    assert selectors(after) == selectors(adopted["webhooks_before"]), "the deactivated injector stays deactivated"


def test_second_preview_is_a_no_op_and_injection_works(adopted):
    env = adopted["env"]
    second = subprocess.run(["pulumi", "preview", "--stack", "legacy", "--expect-no-changes", "--non-interactive"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout[-3000:]
    pod = run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "run", "probe", "--image=x",
               "-o", "jsonpath={.spec.containers[*].name}"], env)
    assert "istio-proxy" in pod.stdout


def test_preflight_refuses_a_second_injector_and_changes_nothing(adopted):
    """A stray second injector for the profile namespaces: `pulumi up --stack migrated` refuses, naming it, before
    it changes anything."""
    env = adopted["env"]
    stray = kubectl_json(env, "get", "mutatingwebhookconfiguration", "istio-revision-tag-default-kubeflow")
    stray["metadata"] = {"name": "stray-injector"}
    run(["kubectl", "create", "-f", "-"], env, input=__import__("json").dumps(stray))
    try:
        subprocess.run(["pulumi", "stack", "init", "migrated"], cwd=REPO, env=env, capture_output=True)
        refused = subprocess.run(["pulumi", "up", "--stack", "migrated", "--yes", "--skip-preview",
                                  "--non-interactive"], cwd=REPO, env=env, capture_output=True, text=True)
        assert refused.returncode != 0
        assert "preflight refused" in refused.stdout and "stray-injector" in refused.stdout
        assert run(["kubectl", "get", "namespace", "istio-system"], env, check=False).returncode != 0
        assert snapshot(env)["crd_uids"] == adopted["before"]["crd_uids"]
    finally:
        run(["kubectl", "delete", "mutatingwebhookconfiguration", "stray-injector"], env)
