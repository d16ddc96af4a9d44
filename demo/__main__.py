"""python -m demo [--cluster NAME] [--profiles N] [--deployments M]

The main job: on a fresh embedded cluster, build a Charmed-Kubeflow-like mesh the charms' way, migrate it with
`pulumi up --stack migrated`, then print a verification table. Exits non-zero if any check fails.
"""

from __future__ import annotations

import argparse
import sys
import time

from demo import fixture
from demo.migrate import migrate_and_verify
from demo.verification import print_table
from devcluster.cluster import Cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", default="demo")
    parser.add_argument("--profiles", type=int, default=5)
    parser.add_argument("--deployments", type=int, default=3)
    args = parser.parse_args()
    size = fixture.FixtureSize(profiles=args.profiles, deployments=args.deployments)

    cluster = Cluster(args.cluster)
    print(f"[1/4] fresh embedded cluster '{args.cluster}'", flush=True)
    cluster.down(purge=True)
    cluster.up()
    env = cluster.env()
    (cluster.dir / "pulumi").mkdir(exist_ok=True)

    print(f"[2/4] legacy mesh the charms' way: istioctl install in kubeflow, gateway, {size.profiles} profiles x "
          f"{size.deployments} workloads", flush=True)
    started = time.monotonic()
    fixture.build(env, size)
    print(f"      built in {time.monotonic() - started:.0f}s", flush=True)

    print("[3/4] pulumi up --stack migrated (sampling injectors per namespace during the update)", flush=True)
    try:
        results, _, duration = migrate_and_verify(cluster, env, size)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"      migrated in {duration:.0f}s", flush=True)
    print("[4/4] verification", flush=True)
    print_table(results)
    return 0 if all(ok for _, _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
