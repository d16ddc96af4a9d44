"""legacy (the charm's istioctl install) -> migrated with the real engine, real apiserver and real istiods."""

from __future__ import annotations


import pytest

from demo import fixture
from demo.observe import InjectorSampler, kubectl_json, snapshot
from demo.migrate import migrate_and_verify
from devcluster.toolchain import REPO
from tests.integration.conftest import fresh_cluster, run

SIZE = fixture.FixtureSize(profiles=5, deployments=3)  # the Kubeflow-like minimum
CHECKS = ["CRD UIDs unchanged", "Istio CRs identical (spec, labels, annotations)",
          "istio-ca-root-cert identical in every namespace", "new istiod Available",
          "injectors per profile namespace, every sample", "default validator targets a live Service",
          "every sidecar and the gateway use the new istiod", "old control plane removed",
          "second `pulumi preview` shows no changes"]


def migrated_cluster(name: str, build):
    """A fresh cluster with a legacy mesh made by build(env, SIZE), migrated by `pulumi up --stack migrated` while
    a sampler watches the injectors; returns (cluster, env, verification rows, samples)."""
    cluster, env = fresh_cluster(name)
    build(env, SIZE)
    results, samples, _ = migrate_and_verify(cluster, env, SIZE)
    rows = {row: (observed, ok) for row, observed, ok in results}
    return cluster, env, rows, samples


@pytest.fixture(scope="module")
def migration():
    """From the charm's own install (istioctl install with its flags)."""
    cluster, env, rows, samples = migrated_cluster("mig", fixture.build)
    yield {"env": env, "rows": rows, "samples": samples}
    cluster.down(purge=True)


@pytest.mark.parametrize("check", CHECKS)
def test_migration(migration, check):
    observed, ok = migration["rows"][check]
    assert ok, f"{check}: {observed}"


def test_sampler_ran_at_least_twice_a_second(migration):
    samples = migration["samples"]
    span = samples[-1]["t"] - samples[0]["t"]
    assert len(samples) >= 2 * span, f"{len(samples)} samples over {span:.0f}s"


def test_every_rollout_started_after_the_new_istiod_was_available(migration):
    env = migration["env"]
    istiod = kubectl_json(env, "-n", "istio-system", "get", "deploy", "istiod-kf-1-30")
    available = next(c["lastTransitionTime"] for c in istiod["status"]["conditions"] if c["type"] == "Available")
    for ns in fixture.profile_namespaces(SIZE):
        for rs in kubectl_json(env, "-n", ns, "get", "replicasets")["items"]:
            if rs["spec"].get("replicas"):  # the current ReplicaSet of each Deployment
                assert rs["metadata"]["creationTimestamp"] >= available, (ns, rs["metadata"]["name"])


def test_guard_denies_deleting_a_crd(migration):
    env = migration["env"]
    denied = run(["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], env, check=False)
    assert denied.returncode != 0 and "kf-istio-migrate protects" in denied.stderr
    assert run(["kubectl", "get", "crd", "virtualservices.networking.istio.io"], env).returncode == 0


def test_old_charm_purge_loses_nothing(migration):
    """The istio-pilot charm's remove hook: `istioctl uninstall --purge -y`. It must not cost a CR or the mesh."""
    env = migration["env"]
    before = snapshot(env)
    run(["istioctl", "uninstall", "--purge", "-y"], env, check=False, timeout=300)
    after = snapshot(env)
    assert after["crd_uids"] == before["crd_uids"] and after["crs"] == before["crs"]
    run(["kubectl", "-n", "istio-system", "wait", "deploy/istiod-kf-1-30", "--for=condition=Available",
         "--timeout=30s"], env)
    injected = run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "run", "after-purge", "--image=x",
                    "-o", "jsonpath={.spec.containers[*].name}"], env)
    assert "istio-proxy" in injected.stdout, "the default injector still works after the purge attempt"


def test_rollback_to_legacy_after_teardown_and_purge(migration):
    """`pulumi stack select legacy && pulumi up` after the migration finished (old plane torn down, and the old
    charm's purge attempted): a working legacy mesh again, one injector at every sample, nothing lost."""
    env = migration["env"]
    # A bare pod is nobody's rollout to restart (the runbook says to restart such pods by hand).
    run(["kubectl", "-n", fixture.profile_namespaces(SIZE)[0], "delete", "pod", "after-purge", "--wait=false"], env)
    before = snapshot(env)
    run(["pulumi", "stack", "init", "legacy"], env, cwd=REPO)
    sampler = InjectorSampler(env["KUBECONFIG"], fixture.profile_namespaces(SIZE))
    sampler.start()
    run(["pulumi", "up", "--stack", "legacy", "--yes", "--skip-preview", "--non-interactive"], env, cwd=REPO)
    samples = sampler.stop()
    counts = [c for s in samples for c in s["injectors"].values()]
    assert counts and min(counts) == max(counts) == 1, f"injectors per namespace over {len(samples)} samples"
    after = snapshot(env)
    assert after["crd_uids"] == before["crd_uids"] and after["crs"] == before["crs"]
    assert len(set(after["roots"].values())) == 1
    gone = run(["kubectl", "-n", "istio-system", "get", "deploy", "-o", "name"], env).stdout
    assert "istiod-kf-1-30" not in gone
    ns = fixture.profile_namespaces(SIZE)[0]
    pod = run(["kubectl", "-n", ns, "run", "after-rollback", "--image=x", "-o", "json"], env)
    import json
    from migration.verify import proxy_address
    assert proxy_address(json.loads(pod.stdout)) == "istiod.kubeflow.svc:15012"
    verify = run([".venv/bin/python", "-m", "migration.verify", "--istiod", "istiod.kubeflow.svc:15012",
                  "--gateway-namespace", "kubeflow", *fixture.profile_namespaces(SIZE)], env, cwd=REPO, check=False)
    assert verify.returncode == 0, verify.stderr
