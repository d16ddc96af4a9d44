"""python -m bench.fleet: what moving several clusters through the fleet command costs, and what shared state costs.

On a state store (devcluster.statestore: versitygw on loopback), with small charm-shaped meshes (demo.fixture; 2
profiles x 3 Deployments each by default), fresh clusters every time:
- one migration with the state in the file backend and one with it in the bucket: update seconds and the number of
  checkpoint writes (renames of the stack's state file, counted with strace; PUTs of its object, from the server's
  access log);
- the three clusters migrated one after the other with `pulumi up`, each timed: their sum is what a team spends
  driving them by hand, without the typing;
- the fleet command (`python -m fleet up`) on three fresh clusters with --max-parallel 1, then 3: wall time, each
  cluster's update seconds, and the ratio of the wall time to that sum.
Prints a table and writes .state/bench/fleet.json; every cluster is removed afterwards.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from demo import fixture
from devcluster import statestore, toolchain
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO, let_children_be_interrupted
from devcluster.workspace import Workspace
from migration.config import PROJECT

CLUSTERS = ("one", "two", "three")


def fresh(names: list[str], size: fixture.FixtureSize) -> list[Workspace]:
    """Fresh clusters with the legacy mesh, built two at a time."""
    workspaces = [Workspace(Cluster.fresh(f"bf-{name}")).create() for name in names]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda ws: fixture.build(ws.env, size), workspaces))
    return workspaces


def purge(workspaces: list[Workspace]) -> None:
    for ws in workspaces:
        ws.cluster.down(purge=True)


def checkpoint_puts(store: statestore.StateStore, prefix: str, since: int) -> int:
    """PutObject requests for prefix's migrated stack in the server's access log (S3's server access log format:
    the operation, then the key), after byte offset since."""
    key = f"{prefix}/.pulumi/stacks/{PROJECT}/migrated.json"
    lines = (store.dir / "access.log").read_text()[since:].splitlines()
    return sum(1 for line in lines if f" s3_PutObject {key} " in line)


def timed_up(ws: Workspace, env: dict[str, str], strace_to: Path | None = None) -> float:
    """`pulumi up` of the migrated stack (made with Workspace.init first), timed; under strace if strace_to."""
    argv = ["pulumi", "up", "--stack", "migrated", "--yes", "--skip-preview", "--non-interactive"]
    if strace_to:
        argv = ["strace", "-f", "--seccomp-bpf", "-e", "trace=rename,renameat,renameat2", "-o", str(strace_to),
                *argv]
    began = time.monotonic()
    subprocess.run(argv, cwd=ws.dir, env=env, check=True, capture_output=True, text=True)
    return time.monotonic() - began


def file_renames(trace: Path) -> int:
    """Renames onto the migrated stack's state file (the file backend writes a temporary file, then renames)."""
    return sum(1 for line in trace.read_text().splitlines() if "rename" in line
               and re.search(r'"[^"]*/\.pulumi/stacks/[^"]*/migrated\.json"\)', line))


def backend_cost(store: statestore.StateStore, size: fixture.FixtureSize, work: Path) -> dict[str, Any]:
    result = {}
    for backend in ("file", "s3"):
        [ws] = fresh([f"cost-{backend}"], size)
        try:
            env = ws.env | (store.env(prefix=ws.cluster.name) if backend == "s3" else {})
            ws.init("migrated", env=env)  # the stack's creation is not the update's: time and count after it
            if backend == "s3":
                offset = (store.dir / "access.log").stat().st_size
                seconds = timed_up(ws, env)
                writes = checkpoint_puts(store, ws.cluster.name, offset)
            else:
                trace = work / "file-backend.strace"
                seconds = timed_up(ws, env, strace_to=trace)
                writes = file_renames(trace)
            result[backend] = {"update_s": round(seconds, 1), "state_writes": writes}
        finally:
            purge([ws])
    return result


def singles(store: statestore.StateStore, size: fixture.FixtureSize) -> list[float]:
    workspaces = fresh(list(CLUSTERS), size)
    try:
        times = []
        for ws in workspaces:
            env = ws.env | store.env(prefix=f"single-{ws.cluster.name}")
            ws.init("migrated", env=env)
            times.append(round(timed_up(ws, env), 1))
        return times
    finally:
        purge(workspaces)


def fleet_run(store: statestore.StateStore, size: fixture.FixtureSize, max_parallel: int, work: Path) -> dict:
    workspaces = fresh(list(CLUSTERS), size)
    try:
        root = work / f"fleet-p{max_parallel}"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        spec = {"backend": store.backend_url(f"fleet-p{max_parallel}"), "config": {"allowDevelopmentBuilds": True},
                "clusters": [{"name": ws.cluster.name, "kubeconfig": str(ws.cluster.kubeconfig)} for ws in workspaces]}
        (root / "fleet.yaml").write_text(yaml.safe_dump(spec))
        env = toolchain.tool_env() | store.env() | {
            "PULUMI_CONFIG_PASSPHRASE": (workspaces[0].cluster.dir / "passphrase").read_text()}
        env.pop("PULUMI_BACKEND_URL")
        began = time.monotonic()
        proc = subprocess.run([str(toolchain.VENV_BIN / "python"), "-m", "fleet", "up", str(root / "fleet.yaml"),
                               "--max-parallel", str(max_parallel), "--results", str(root / "results.json")],
                              cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.monotonic() - began
        if proc.returncode:
            raise RuntimeError(f"fleet up --max-parallel {max_parallel} failed:\n{proc.stdout[-4000:]}\n"
                               f"{proc.stderr[-2000:]}")
        results = json.loads((root / "results.json").read_text())["clusters"]
        return {"wall_s": round(wall, 1), "up_s": [r["seconds"] for r in results],
                "preview_s": [r["previewSeconds"] for r in results]}
    finally:
        purge(workspaces)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=int, default=2)
    parser.add_argument("--deployments", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / ".state" / "bench")
    args = parser.parse_args()
    let_children_be_interrupted()
    size = fixture.FixtureSize(profiles=args.profiles, deployments=args.deployments, kubeflow_shape=False,
                               pod_stage_ms=250)
    store = statestore.start("bench-fleet")
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        cost = backend_cost(store, size, args.out)
        print(f"one migration: file backend {cost['file']}, S3 backend {cost['s3']}", flush=True)
        alone = singles(store, size)
        print(f"three clusters one after the other: {alone} s (sum {sum(alone):.1f} s)", flush=True)
        fleets = {p: fleet_run(store, size, p, args.out) for p in (1, 3)}
    finally:
        store.stop()
        shutil.rmtree(store.dir, ignore_errors=True)
    total = sum(alone)
    report = {"size": f"{args.profiles}x{args.deployments}", "backend_cost": cost, "singles_s": alone,
              "singles_sum_s": round(total, 1),
              "fleet": {f"max-parallel {p}": {**r, "ratio_to_sum": round(r["wall_s"] / total, 2)}
                        for p, r in fleets.items()}}
    (args.out / "fleet.json").write_text(json.dumps(report, indent=2))
    print(f"{'run':28} {'wall s':>7} {'ratio to the sum of single runs':>32}")
    print(f"{'3 x pulumi up, one by one':28} {total:7.1f} {1.0:32.2f}")
    for p, r in fleets.items():
        print(f"{f'fleet --max-parallel {p}':28} {r['wall_s']:7.1f} {r['wall_s'] / total:32.2f}   "
              f"(updates {r['up_s']} s, previews {r['preview_s']} s)")
    s3, file = cost["s3"], cost["file"]
    print(f"S3 backend / file backend, one migration: update {s3['update_s'] / file['update_s']:.2f} "
          f"({s3['update_s']} s / {file['update_s']} s), state writes {s3['state_writes']} / {file['state_writes']}")
    print(f"written: {args.out / 'fleet.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
