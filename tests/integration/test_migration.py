"""legacy (the charm's istioctl install) -> migrated with the real engine, real apiserver and real istiods."""

from __future__ import annotations

import pytest

from demo import fixture
from demo.migrate import migrate_and_verify
from demo.observe import kubectl_json, snapshot
from tests.support import fresh_workspace, nothing_lost, run

SIZE = fixture.FixtureSize(profiles=5, deployments=3)  # the Kubeflow-like minimum
PROFILES = fixture.profile_namespaces(SIZE)
CHECKS = ["CRD UIDs unchanged", "Istio CRs identical (spec, labels, annotations)",
          "istio-ca-root-cert identical in every namespace", "new istiod Available",
          "injectors per profile namespace, every sample", "default validator targets a live Service",
          "every sidecar and the gateway use the new istiod", "old control plane removed",
          "second `pulumi preview` shows no changes"]


def migrated_mesh(name: str, build):
    """A fresh cluster with a legacy mesh made by build(workspace, SIZE), migrated by `pulumi up --stack migrated`
    while a sampler watches the injectors; returns (workspace, migration)."""
    workspace = fresh_workspace(name)
    build(workspace, SIZE)
    return workspace, migrate_and_verify(workspace, PROFILES)


@pytest.fixture(scope="module")
def migration():
    """From the charm's own install (istioctl install with its flags)."""
    workspace, result = migrated_mesh("mig", lambda ws, size: fixture.build(ws.env, size))
    yield workspace, result
    workspace.cluster.down(purge=True)


@pytest.mark.parametrize("check", CHECKS)
def test_migration(migration, check):
    rows = {row: (observed, ok) for row, observed, ok in migration[1].rows}
    observed, ok = rows[check]
    assert ok, f"{check}: {observed}"


def test_sampler_ran_at_least_twice_a_second(migration):
    samples = migration[1].samples
    span = samples[-1]["t"] - samples[0]["t"]
    assert len(samples) >= 2 * span, f"{len(samples)} samples over {span:.0f}s"


def test_every_rollout_started_after_the_new_istiod_was_available(migration):
    env = migration[0].env
    istiod = kubectl_json(env, "-n", "istio-system", "get", "deploy", "istiod-kf-1-30")
    available = next(c["lastTransitionTime"] for c in istiod["status"]["conditions"] if c["type"] == "Available")
    for ns in PROFILES:
        for rs in kubectl_json(env, "-n", ns, "get", "replicasets")["items"]:
            if rs["spec"].get("replicas"):  # the current ReplicaSet of each Deployment
                assert rs["metadata"]["creationTimestamp"] >= available, (ns, rs["metadata"]["name"])


def test_the_ca_key_is_not_readable_from_the_state(migration):
    """The copied CA Secret's private key is in the state only encrypted with the cluster's generated passphrase."""
    workspace = migration[0]
    key = kubectl_json(workspace.env, "-n", "istio-system", "get", "secret", "istio-ca-secret")["data"]["ca-key.pem"]
    assert key not in workspace.state_file("migrated").read_text()
    wrong = dict(workspace.env, PULUMI_CONFIG_PASSPHRASE="not-the-passphrase")
    wrong.pop("PULUMI_CONFIG_PASSPHRASE_FILE")
    exported = workspace.pulumi("stack", "export", "--stack", "migrated", "--show-secrets", env=wrong, check=False)
    assert exported.returncode != 0 and key not in exported.stdout
    assert key in workspace.pulumi("stack", "export", "--stack", "migrated", "--show-secrets").stdout


def test_guard_denies_deleting_a_crd(migration):
    env = migration[0].env
    denied = run(["kubectl", "delete", "crd", "virtualservices.networking.istio.io"], env, check=False)
    assert denied.returncode != 0 and "kf-istio-migrate protects" in denied.stderr
    assert run(["kubectl", "get", "crd", "virtualservices.networking.istio.io"], env).returncode == 0


def old_charm_purge(env: dict[str, str]) -> None:
    """The istio-pilot charm's remove hook: `istioctl uninstall --purge -y` (the guard makes its deletes fail)."""
    run(["istioctl", "uninstall", "--purge", "-y"], env, check=False, timeout=300)
    run(["kubectl", "-n", "istio-system", "wait", "deploy/istiod-kf-1-30", "--for=condition=Available",
         "--timeout=30s"], env)


def test_old_charm_purge_loses_nothing(migration):
    env = migration[0].env
    before = snapshot(env)
    old_charm_purge(env)
    nothing_lost(env, before)
    injected = run(["kubectl", "-n", PROFILES[0], "run", "after-purge", "--image=x",
                    "-o", "jsonpath={.spec.containers[*].name}"], env)
    run(["kubectl", "-n", PROFILES[0], "delete", "pod", "after-purge", "--wait=false"], env)
    assert "istio-proxy" in injected.stdout, "the default injector still works after the purge attempt"
