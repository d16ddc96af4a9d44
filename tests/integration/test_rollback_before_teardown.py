"""Verification fails (a bare pod nobody restarts), so the old control plane stays; rolling back from there works."""

from __future__ import annotations

import json
import subprocess

import pytest

from demo import fixture
from demo.observe import InjectorSampler, kubectl_json, snapshot
from devcluster.toolchain import REPO
from migration.verify import proxy_address
from tests.integration.conftest import fresh_cluster, run

SIZE = fixture.FixtureSize(profiles=2, deployments=2)
LEGACY = "istiod.kubeflow.svc:15012"


@pytest.fixture(scope="module")
def stopped_before_teardown():
    cluster, env = fresh_cluster("rb6")
    fixture.build(env, SIZE)
    run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "run", "bare", "--image=x"], env)
    run(["pulumi", "stack", "init", "migrated"], env, cwd=REPO)
    failed = subprocess.run(["pulumi", "up", "--stack", "migrated", "--yes", "--skip-preview", "--non-interactive"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    yield cluster, env, failed
    cluster.down(purge=True)


def test_verification_stops_the_migration_before_teardown(stopped_before_teardown):
    _, env, failed = stopped_before_teardown
    assert failed.returncode != 0
    assert "not on istiod-kf-1-30.istio-system.svc:15012" in failed.stdout and "/bare: " in failed.stdout
    assert kubectl_json(env, "-n", "kubeflow", "get", "deploy", "istiod")["status"].get("availableReplicas") == 1
    injector = kubectl_json(env, "get", "mutatingwebhookconfiguration", "istio-revision-tag-default-kubeflow")
    assert {h["clientConfig"]["service"]["name"] for h in injector["webhooks"]} == {"istiod-kf-1-30"}


def test_rollback_from_there(stopped_before_teardown):
    cluster, env, _ = stopped_before_teardown
    before = snapshot(env)
    run(["pulumi", "stack", "init", "legacy"], env, cwd=REPO)
    sampler = InjectorSampler(str(cluster.kubeconfig), fixture.profile_namespaces(SIZE))
    sampler.start()
    run(["pulumi", "up", "--stack", "legacy", "--yes", "--skip-preview", "--non-interactive"], env, cwd=REPO)
    counts = [c for s in sampler.stop() for c in s["injectors"].values()]
    assert counts and min(counts) == max(counts) == 1
    after = snapshot(env)
    assert after["crd_uids"] == before["crd_uids"] and after["crs"] == before["crs"]
    assert "istiod-kf-1-30" not in run(["kubectl", "-n", "istio-system", "get", "deploy", "-o", "name"], env).stdout
    pod = run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[1], "run", "probe", "--image=x", "-o", "json"], env)
    assert proxy_address(json.loads(pod.stdout)) == LEGACY
    verify = run([str(REPO / ".venv/bin/python"), "-m", "migration.verify", "--istiod", LEGACY, "--gateway-namespace",
                  "kubeflow", *fixture.profile_namespaces(SIZE)], env, cwd=REPO, check=False)
    assert verify.returncode == 0, verify.stderr
