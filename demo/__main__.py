"""python -m demo [--cluster NAME] [--profiles N] [--deployments M] [--state file|s3]

The main job: on a fresh embedded cluster, build a Charmed-Kubeflow-like mesh the charms' way, migrate it with
`pulumi up --stack migrated`, then print a verification table and write a timeline of the update (TIMELINE). Exits
non-zero if any check fails. With --state s3 (`make demo STATE=s3`) the stacks' state goes to a bucket on a state
store started beside the cluster (devcluster.statestore), as a team sharing its state would have it.
"""

from __future__ import annotations

import argparse
import sys
import time

from demo import fixture
from demo.migrate import migrate_and_verify
from demo.timeline import draw
from demo.verification import print_table
from devcluster import statestore
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO, let_children_be_interrupted
from devcluster.workspace import PulumiFailed, Workspace

TIMELINE = REPO / ".state" / "demo" / "timeline.png"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", default="demo")
    parser.add_argument("--profiles", type=int, default=5)
    parser.add_argument("--deployments", type=int, default=3)
    parser.add_argument("--state", choices=["file", "s3"], default="file")
    args = parser.parse_args()
    let_children_be_interrupted()
    size = fixture.FixtureSize(profiles=args.profiles, deployments=args.deployments)

    print(f"[1/4] fresh embedded cluster '{args.cluster}'", flush=True)
    workspace = Workspace(Cluster.fresh(args.cluster)).create()
    if args.state == "s3":  # a store of the cluster's name, its stacks at the bucket's root
        store = statestore.start(args.cluster)
        workspace.env.update(store.env())
        print(f"      state in {store.backend_url()} (versitygw, pid {store.pid})", flush=True)
    print(f"[2/4] legacy mesh the charms' way: istioctl install in kubeflow, gateway, {size.profiles} profiles x "
          f"{size.deployments} workloads", flush=True)
    started = time.monotonic()
    fixture.build(workspace.env, size)
    print(f"      built in {time.monotonic() - started:.0f}s", flush=True)

    print("[3/4] pulumi up --stack migrated (following every change to each profile namespace's injectors)",
          flush=True)
    try:
        migration = migrate_and_verify(workspace, fixture.profile_namespaces(size), timeline=True)
    except PulumiFailed as err:
        print(err, file=sys.stderr)
        return 1
    print(f"      migrated in {migration.seconds:.0f}s (cluster {migration.outputs['cluster']}, context "
          f"{migration.outputs['context']})", flush=True)
    print("[4/4] verification", flush=True)
    print_table(migration.rows)
    print(f"migration wall time: {migration.seconds:.0f}s (measured, not a check)")
    draw(migration.timeline, TIMELINE)
    print(f"timeline of the migration: {TIMELINE}")
    state = (f" && eval \"$(cd {REPO} && .venv/bin/python -m devcluster state-up --name {args.cluster})\""
             if args.state == "s3" else "")
    print(f"inspect: eval \"$(cd {REPO} && .venv/bin/python -m devcluster env --name {args.cluster})\"{state} && "
          f"cd {workspace.dir} && pulumi stack output --stack migrated")
    return 0 if all(ok for _, _, ok in migration.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
