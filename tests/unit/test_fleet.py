"""The fleet command's pure parts: the fleet file, each cluster's backend, the bounded scheduling, the preview table
and the results; and the state store's backend URL."""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from devcluster.statestore import backend_url
from fleet.__main__ import main
from fleet.run import Outcome, bounded
from fleet.spec import FleetError, cluster_backend, parse
from fleet.table import render_table, result_of

BACKEND = "s3://team-state/kubeflow?endpoint=http%3A%2F%2F127.0.0.1%3A7070&s3ForcePathStyle=true&region=us-east-1"


@pytest.fixture()
def kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return str(path)


def fleet_file(kubeconfig: str, **extra) -> dict:
    return {"backend": BACKEND, "config": {"rolloutParallelism": 20},
            "clusters": [{"name": "staging", "kubeconfig": kubeconfig, "context": "admin"},
                         {"name": "prod-eu", "kubeconfig": kubeconfig, "canary": True,
                          "config": {"canaryNamespaces": '["team-a"]', "rolloutParallelism": "5"}}], **extra}


def test_each_cluster_gets_its_own_prefix_in_the_shared_backend_with_the_query_kept():
    assert cluster_backend(BACKEND, "prod-eu") == BACKEND.replace("/kubeflow?", "/kubeflow/prod-eu?")
    assert cluster_backend("s3://bucket", "a") == "s3://bucket/a"
    assert cluster_backend("file:///srv/state/", "a") == "file:///srv/state/a"


def test_the_fleet_file_merges_shared_and_own_config_and_names_the_canary(kubeconfig):
    fleet = parse(fleet_file(kubeconfig), env={})
    staging, prod = fleet.clusters
    assert staging.config == {"rolloutParallelism": "20"} and staging.context == "admin"
    assert prod.config == {"rolloutParallelism": "5", "canaryNamespaces": '["team-a"]'}
    assert fleet.canary(["staging", "prod-eu"]) == "prod-eu"
    assert fleet.canary(["staging"]) is None, "a marked canary that was refused moves no cluster"
    unmarked = parse({**fleet_file(kubeconfig), "clusters": fleet_file(kubeconfig)["clusters"][:1]}, env={})
    assert unmarked.canary(["staging"]) == "staging" and unmarked.canary([]) is None


def test_the_backend_falls_back_to_the_environment(kubeconfig):
    raw = fleet_file(kubeconfig)
    del raw["backend"]
    assert parse(raw, env={"PULUMI_BACKEND_URL": "file:///srv/s"}).backend == "file:///srv/s"


@pytest.mark.parametrize("change, names", [
    (lambda f: f.pop("backend"), "set `backend`"),
    (lambda f: f.update(backend="https://api.pulumi.com"), "self-managed backend"),
    (lambda f: f.update(backend="s3:///prefix"), "names no bucket"),
    (lambda f: f.update(colour="red"), "colour is not a fleet file key"),
    (lambda f: f.update(clusters=[]), "clusters: list at least one"),
    (lambda f: f["clusters"][1].update(name="staging"), "clusters[1].name = 'staging' is used twice"),
    (lambda f: f["clusters"][0].update(name="Prod EU"), "clusters[0].name"),
    (lambda f: f["clusters"][0].pop("kubeconfig"), "clusters[0].kubeconfig: the path"),
    (lambda f: f["clusters"][0].update(kubeconfig="/nonexistent/kc"), "'/nonexistent/kc' is not a file"),
    (lambda f: f["clusters"][0].update(canary=True), "more than one cluster says canary"),
    (lambda f: f["clusters"][0].update(canary="yes"), "clusters[0].canary = 'yes'"),
    (lambda f: f["clusters"][1]["config"].update(rolloutParalelism="3"), "clusters[1].config.rolloutParalelism is not"),
    (lambda f: f["config"].update({"kf-istio-migrate:kubeconfig": "/x"}), "set the cluster's `kubeconfig`"),
    (lambda f: f["clusters"][0].update(region="eu"), "clusters[0].region is not a fleet file key"),
])
def test_a_wrong_fleet_file_is_refused_naming_the_key(kubeconfig, change, names):
    raw = fleet_file(kubeconfig)
    change(raw)
    with pytest.raises(FleetError) as err:
        parse(raw, env={})
    assert names in str(err.value)


def test_bounded_never_runs_more_than_asked_and_stops_starting_after_the_failures():
    running, most, lock = 0, 0, threading.Lock()

    def run(item: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return item

    results, waiting = bounded(range(7), run, lambda r: False, max_parallel=3, max_failures=1)
    assert sorted(results) == list(range(7)) and waiting == [] and most == 3

    # 0 and 1 start together and fail: whichever ends first leaves room for one more start (one failure of two)
    results, waiting = bounded(range(7), run, lambda r: r in (0, 1), max_parallel=2, max_failures=2)
    assert {0, 1} <= set(results), "a running one is never interrupted"
    assert len(results) <= 3 and len(results) + len(waiting) == 7 and waiting[-1] == 6


def outcome(cluster: str, ok: bool, operation: str = "preview", **outputs) -> Outcome:
    return Outcome(cluster, "migrated", operation, ok, 12.34, outputs, [] if ok else ["preflight refused: no istiod"])


def test_the_preview_table_shows_version_workloads_phase_and_refusal():
    table = render_table([outcome("staging", True, legacyIstiod={"version": "1.30-dev", "image": "x/pilot:1.30-dev",
                                                                  "development": True}, restartedWorkloads=6,
                                  phase="the whole mesh in one move"), outcome("broken", False)])
    header, staging, broken = table.splitlines()
    assert header.split()[:2] == ["cluster", "live"]
    assert "1.30-dev" in staging and " 6 " in staging and "whole mesh" in staging
    assert "not touched" in broken and broken.endswith("preflight refused: no istiod")


def test_each_cluster_has_a_result_with_its_account():
    previews = [outcome("a", True), outcome("b", False), outcome("c", True), outcome("d", True)]
    account = {"moved": [{"namespace": "n", "kind": "Deployment", "name": "w", "way": "restart", "seconds": 1.0}],
               "left": []}
    updates = [outcome("a", True, "up", moveAccount=account), outcome("c", False, "up")]
    results = {name: result_of(name, "migrated", previews, updates, ["d"], "up") for name in "abcd"}
    assert results["a"]["result"] == "done" and results["a"]["exit"] == 0 and results["a"]["moved"] == account["moved"]
    assert results["b"]["result"] == "refused" and results["b"]["exit"] is None
    assert results["c"]["result"] == "failed" and results["c"]["exit"] == 1 and results["c"]["errors"]
    assert results["d"]["result"] == "not started"


def test_the_state_store_url_is_path_style_on_a_server_of_our_own():
    assert backend_url("state", "team/a", "http://127.0.0.1:7070") == \
        "s3://state/team/a?region=us-east-1&endpoint=http%3A%2F%2F127.0.0.1%3A7070&s3ForcePathStyle=true"
    assert backend_url("state", "", None, "eu-west-1") == "s3://state?region=eu-west-1"


def test_the_command_refuses_a_wrong_file_or_a_missing_passphrase_before_running_anything(kubeconfig, tmp_path,
                                                                                        monkeypatch, capsys):
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    wrong = fleet_file(kubeconfig)
    wrong["clusters"][0]["kubeconfig"] = str(tmp_path / "missing")
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(wrong))
    assert main(["up", str(path)]) == 2
    assert "clusters[0].kubeconfig" in capsys.readouterr().err
    path.write_text(yaml.safe_dump(fleet_file(kubeconfig)))
    assert main(["up", str(path)]) == 2
    assert "PULUMI_CONFIG_PASSPHRASE" in capsys.readouterr().err
    assert not (tmp_path / ".fleet").exists(), "nothing was written before the refusal"
