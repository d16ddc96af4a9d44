"""`python -m fleet up` on three embedded clusters sharing one state bucket (versitygw, devcluster.statestore): two
charm-shaped meshes and one cluster with neither the Juju model nor a mesh, which the preflight refuses. The refused one is shown in the
preview table and not touched; the canary cluster moves alone, then the other; the results file and the exit code
say so, and every cluster and phase had its progress line."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil

import pytest
import yaml

from demo import fixture
from devcluster import statestore, toolchain
from migration.workloads import proxy_address
from tests.support import NEW_ISTIOD, fingerprint, fresh_workspace, run

SIZE = fixture.FixtureSize(profiles=2, deployments=1, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)
REFUSAL = "preflight refused: source namespace kubeflow does not exist"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    store = statestore.start(f"fleet-{os.getpid()}")
    workspaces = []
    try:
        workspaces = [fresh_workspace(f"fleet-{name}") for name in ("a", "b", "bare")]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # the two meshes, the charms' way, side by side
            list(pool.map(lambda ws: fixture.build(ws.env, SIZE), workspaces[:2]))
        root = tmp_path_factory.mktemp("fleet")
        spec = {"backend": store.backend_url("fleet"), "config": {"allowDevelopmentBuilds": True},
                "clusters": [{"name": "cluster-a", "kubeconfig": str(workspaces[0].cluster.kubeconfig)},
                             {"name": "cluster-b", "kubeconfig": str(workspaces[1].cluster.kubeconfig),
                              "canary": True},
                             {"name": "bare", "kubeconfig": str(workspaces[2].cluster.kubeconfig),
                              "context": workspaces[2].cluster.context}]}
        (root / "fleet.yaml").write_text(yaml.safe_dump(spec))
        yield store, workspaces, root
    finally:
        for ws in workspaces:
            ws.cluster.down(purge=True)
        store.stop()
        shutil.rmtree(store.dir, ignore_errors=True)


def run_fleet(store, root, command: str, passphrase_from) -> tuple[int, str, dict[str, dict]]:
    """`python -m fleet COMMAND fleet.yaml --max-parallel 2` as an operator runs it: the passphrase and the bucket's
    credentials in the environment, the backend named by the fleet file. Returns exit, stdout, results by cluster."""
    env = toolchain.tool_env() | store.env() | {"PULUMI_CONFIG_PASSPHRASE": (passphrase_from / "passphrase").read_text()}
    env.pop("PULUMI_BACKEND_URL")
    result = run([str(toolchain.VENV_BIN / "python"), "-m", "fleet", command, str(root / "fleet.yaml"),
                  "--max-parallel", "2", "--results", str(root / f"{command}.json")], env, cwd=toolchain.REPO,
                 check=False)
    print(result.stdout, result.stderr)
    results = json.loads((root / f"{command}.json").read_text())["clusters"]
    return result.returncode, result.stdout, {r["cluster"]: r for r in results}


def proxies_on(ws) -> set[str]:
    pods = json.loads(run(["kubectl", "get", "pods", "-A", "-o", "json"], ws.env).stdout)["items"]
    return {proxy_address(p) for p in pods if p["status"].get("phase") == "Running"} - {None}


def test_fleet_up_moves_the_ready_clusters_canary_first_and_leaves_the_refused_one_untouched(fleet):
    store, (a, b, bare), root = fleet
    untouched = fingerprint(bare.env)
    returncode, out, results = run_fleet(store, root, "up", a.cluster.dir)
    assert returncode == 1, "one cluster was refused, so the fleet is not done"

    table = out[out.index("cluster "):].splitlines()[:4]
    rows = {line.split()[0]: line for line in table[1:]}
    assert "not touched" in rows["bare"] and REFUSAL in rows["bare"], table
    for name in ("cluster-a", "cluster-b"):
        assert "1.30-dev" in rows[name] and f" {SIZE.profiles * SIZE.deployments} " in rows[name], table

    lines = out.splitlines()
    canary_done = lines.index(next(line for line in lines if line.startswith("[cluster-b] up migrated: done")))
    other_started = lines.index("[cluster-a] up migrated: started")
    assert canary_done < other_started, "the canary cluster moves alone, before any other"
    for name in ("cluster-a", "cluster-b"):
        for phase in ("control plane", "webhook switch", "workloads", "verification", "teardown"):
            assert f"[{name}] up migrated: {phase}" in lines, f"no progress line for {name} {phase}"
    assert not any(line.startswith("[bare] up") for line in lines)

    assert results["bare"]["result"] == "refused" and results["bare"]["exit"] is None
    assert REFUSAL in results["bare"]["errors"][0]
    for name, ws in (("cluster-a", a), ("cluster-b", b)):
        moved = results[name]
        assert moved["result"] == "done" and moved["exit"] == 0 and moved["seconds"] > 0, moved
        assert sorted((m["namespace"], m["name"]) for m in moved["moved"]) == sorted(
            (ns, f"notebook-{i}") for ns in PROFILES for i in range(SIZE.deployments)), moved["moved"]
        assert proxies_on(ws) == {NEW_ISTIOD}, f"{name}: proxies not all on the new istiod"
    assert fingerprint(bare.env) == untouched, "the refused cluster was changed"
    stacks = store.keys("fleet/")
    assert any(k.startswith("fleet/cluster-a/.pulumi/stacks/") for k in stacks), stacks
    assert not any(".pulumi/locks/" in k for k in stacks), "a lock was left behind"

