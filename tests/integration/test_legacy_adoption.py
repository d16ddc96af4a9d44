"""The legacy stack over the charm's own install: it adopts, changes no user config and injects as before."""

from __future__ import annotations

import pytest

from demo import fixture
from demo.observe import read, snapshot
from tests.support import fresh_workspace, one_injector_throughout, purged, run, up_with_history

SIZE = fixture.FixtureSize(profiles=2, deployments=1, kubeflow_shape=False, pod_stage_ms=150)


@pytest.fixture(scope="module")
def adopted():
    with purged(fresh_workspace("adopt")) as workspace:
        env = workspace.env
        fixture.build(env, SIZE)
        before = snapshot(env)
        webhooks_before = read(env, "mutatingwebhookconfigurations")["items"]
        states = up_with_history(workspace, "legacy", fixture.profile_namespaces(SIZE))
        yield {"workspace": workspace, "before": before, "after": snapshot(env), "states": states,
               "webhooks_before": webhooks_before}


def test_nothing_user_owned_changed(adopted):
    assert adopted["after"]["crd_uids"] == adopted["before"]["crd_uids"]
    assert adopted["after"]["crs"] == adopted["before"]["crs"]
    assert adopted["after"]["roots"] == adopted["before"]["roots"]


def test_one_injector_throughout_and_webhooks_as_istioctl_left_them(adopted):
    one_injector_throughout(adopted["states"])
    selectors = lambda items: {(w["metadata"]["name"], h["name"], str(h.get("namespaceSelector")))  # noqa: E731
                               for w in items for h in w["webhooks"]}
    after = read(adopted["workspace"].env, "mutatingwebhookconfigurations")["items"]
    assert selectors(after) == selectors(adopted["webhooks_before"]), "the deactivated injector stays deactivated"


def test_second_preview_is_a_no_op_and_injection_works(adopted):
    workspace = adopted["workspace"]
    second = workspace.pulumi("preview", "--stack", "legacy", "--expect-no-changes", check=False)
    assert second.returncode == 0, second.stdout[-3000:]
    pod = run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "run", "probe", "--image=x",
               "-o", "jsonpath={.spec.containers[*].name}"], workspace.env)
    run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "delete", "pod", "probe", "--wait=false"], workspace.env)
    assert "istio-proxy" in pod.stdout
