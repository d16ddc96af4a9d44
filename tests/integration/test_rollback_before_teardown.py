"""The in-use gate: a bare pod on the old istiod that does not finish within unmanagedPodsTimeoutSeconds (policy
`wait`) fails the update, naming it, so the old control plane stays and serves it; rolling back from there works.
Both tests read the state the fixture left; only the second changes it, and the first asserts nothing it changes
(the rows are checked from the failed update's output and the plane the fixture observed)."""

from __future__ import annotations

import pytest

from demo import fixture
from demo.observe import read
from tests.support import DEFAULT_INJECTOR, fresh_workspace, purged, roll_back_and_check, run

SIZE = fixture.FixtureSize(profiles=2, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)


@pytest.fixture(scope="module")
def stopped_before_teardown():
    with purged(fresh_workspace("rb6")) as workspace:
        env = workspace.env
        fixture.build(env, SIZE)
        run(["kubectl", "-n", PROFILES[0], "run", "bare", "--image=x"], env)
        workspace.init("migrated")
        workspace.set_config("migrated", "kf-istio-migrate:unmanagedPodsTimeoutSeconds", "20")
        failed = workspace.up("migrated", check=False)
        observed = {
            "old_istiod_available": read(env, "deployments", "kubeflow", "istiod")["status"].get("availableReplicas"),
            "injector_services": {h["clientConfig"]["service"]["name"] for h in read(
                env, "mutatingwebhookconfigurations", name=DEFAULT_INJECTOR)["webhooks"]}}
        yield workspace, failed, observed


def test_verification_stops_the_migration_before_teardown(stopped_before_teardown):
    _, failed, observed = stopped_before_teardown
    assert failed.returncode != 0
    assert "timed out after 20s waiting for pods without a workload to finish: " \
           f"{PROFILES[0]}/bare (no controller) still use istiod.kubeflow.svc:15012" in failed.stdout, failed.stdout
    assert "teardown-legacy-control-plane" not in failed.stdout
    assert observed["old_istiod_available"] == 1
    assert observed["injector_services"] == {"istiod-kf-1-30"}


def test_rollback_from_there(stopped_before_teardown):
    workspace, _, _ = stopped_before_teardown
    roll_back_and_check(workspace, PROFILES)
