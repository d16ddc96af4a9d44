"""One cluster identity: the stack's config names cluster A while the shell points at cluster B. Preview, up and
the legacy (rollback) preview act on A only; B is unchanged, resourceVersion for resourceVersion."""

from __future__ import annotations

import pytest
import yaml

from demo import fixture
from demo.observe import kubectl_json
from tests.support import fingerprint, fresh_workspace, run

SIZE = fixture.FixtureSize(profiles=1, deployments=1, pod_stage_ms=150)


@pytest.fixture(scope="module")
def two_clusters():
    a, b = fresh_workspace("id-a"), fresh_workspace("id-b")
    for workspace in (a, b):
        fixture.build(workspace.env, SIZE)
    shell_on_b = dict(a.env, KUBECONFIG=b.env["KUBECONFIG"])  # A's workspace, B's kubeconfig in the shell
    yield a, b, shell_on_b
    for workspace in (a, b):
        workspace.cluster.down(purge=True)


def test_preview_up_and_rollback_preview_act_on_the_stack_cluster_only(two_clusters):
    a, b, shell_on_b = two_clusters
    b_before = fingerprint(b.env)
    a.init("migrated")
    preview = a.pulumi("preview", "--stack", "migrated", env=shell_on_b)
    assert a.cluster.kubeconfig.read_text().count("server: https://127.0.0.1:") == 1
    a.pulumi("up", "--stack", "migrated", "--yes", "--skip-preview", env=shell_on_b)
    outputs = a.outputs("migrated")
    a_server = yaml.safe_load(a.cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    assert outputs["cluster"] == a_server and outputs["context"] == f"kfistio-{a.cluster.name}", preview.stdout
    assert kubectl_json(a.env, "-n", "istio-system", "get", "deploy", "istiod-kf-1-30")["status"].get(
        "availableReplicas") == 1, "A was migrated"
    assert not kubectl_json(a.env, "-n", "kubeflow", "get", "deploy", "-l", "app=istiod")["items"]
    a.init("legacy")
    rollback = a.pulumi("preview", "--stack", "legacy", "--diff", env=shell_on_b)
    assert "rollingBack" in rollback.stdout and "true" in rollback.stdout.split("rollingBack", 1)[1][:40], \
        "the legacy preview read A (migrated), not B (still legacy)"
    assert fingerprint(b.env) == b_before, "cluster B changed although no stack names it"
    assert run(["kubectl", "get", "namespace", "istio-system"], b.env, check=False).returncode != 0


def test_a_context_named_in_config_wins_over_the_shell(two_clusters, tmp_path):
    """One kubeconfig holding both clusters, current-context B; the stack names only A's context."""
    a, b, _ = two_clusters
    merged = tmp_path / "both.kubeconfig"
    merged.write_text(run(["kubectl", "config", "view", "--flatten"],
                          dict(a.env, KUBECONFIG=f"{b.cluster.kubeconfig}:{a.cluster.kubeconfig}")).stdout)
    config = yaml.safe_load((a.dir / "Pulumi.migrated.yaml").read_text())
    config["config"]["kubernetes:kubeconfig"] = str(merged)
    config["config"]["kubernetes:context"] = f"kfistio-{a.cluster.name}"
    config_file = tmp_path / "Pulumi.migrated.yaml"
    config_file.write_text(yaml.safe_dump(config))
    b_before = fingerprint(b.env)
    a.pulumi("preview", "--stack", "migrated", "--config-file", str(config_file), "--expect-no-changes",
             env=dict(a.env, KUBECONFIG=str(merged)))
    config["config"]["kubernetes:context"] = "kfistio-nowhere"
    config_file.write_text(yaml.safe_dump(config))
    refused = a.pulumi("preview", "--stack", "migrated", "--config-file", str(config_file), check=False)
    assert refused.returncode != 0 and "kubernetes:context = 'kfistio-nowhere' is not a context" in refused.stdout
    assert fingerprint(b.env) == b_before
