"""python -m bench [options]   (make bench)

On fresh embedded clusters: a Kubeflow-sized legacy mesh (Deployments and StatefulSets) migrated, once per pod
profile (`fast`: kwok pods Ready in 1-2 s; `realistic`: 8-16 s, see docs/benchmarks.md), with the manual runbook's
namespace-by-namespace loop (rolloutStrategy=one-namespace-at-a-time, the baseline) and with the default single
wave at each rolloutParallelism (workloads moving at once), each while churn creates pods in the profile namespaces
(P1, P2), and the first wave once more without the Pulumi CLI's debug log (what that log costs); once per pod
profile, the peer: Istio's documented canary upgrade scripted as a skilled operator would (bench.peer), on the same
fixture, with the same churn and watchers, so that each wave's wall time is reported as a ratio to it; with --upgrade
(P4), the stack's upgrade of the moved mesh to the next Istio minor beside Istio's canary upgrade between the two
revisions, scripted the same way; then the `pulumi preview` time of `migrated` as the mesh grows, beside a plain
preview of as many resources (P3). Prints a table; writes results.json and timeline.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench import runs
from bench.analysis import growth
from bench.plot import timeline
from bench.report import table
from demo import fixture
from devcluster.toolchain import REPO, ensure, let_children_be_interrupted, pins

UPGRADE_REVISION = "kf-1-31"
"""The revision P4's upgrade moves the mesh to (the next minor's, as an operator would name it)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=int, default=25, help="profile namespaces (default 25)")
    parser.add_argument("--deployments", type=int, default=8, help="Deployments per profile (default 8)")
    parser.add_argument("--statefulsets", type=int, default=2, help="StatefulSets (2 replicas) per profile (default 2)")
    parser.add_argument("--parallelism", default="50", help="rolloutParallelism values of the wave (default 50)")
    parser.add_argument("--per-workload", default="",
                        help="rolloutParallelism values for rolloutStrategy=workloads ('' skips, the default)")
    parser.add_argument("--no-loop", action="store_true", help="skip the namespace-by-namespace baseline")
    parser.add_argument("--no-peer", action="store_true",
                        help="skip the peer run (Istio's documented canary upgrade, scripted)")
    parser.add_argument("--upgrade", action="store_true",
                        help="P4: per pod profile, also the stack's upgrade of the moved mesh to the next Istio minor "
                             "(the first wave's rolloutParallelism) and, unless --no-peer, Istio's canary upgrade "
                             "between the two revisions, scripted")
    parser.add_argument("--no-debug-log-cost", action="store_true",
                        help="skip the run of the first wave without the CLI's debug log (first pod profile only)")
    parser.add_argument("--pods", default="fast=250,realistic=2000",
                        help="pod profiles NAME=MS: each of a pod's 4 kwok stages takes MS to 2 x MS "
                             "(default fast=250,realistic=2000; '' runs no migration, only P3)")
    parser.add_argument("--churn-rate", type=float, default=6.0, help="pods created per second (default 6)")
    parser.add_argument("--preview-sizes", default="25,100,400", help="namespace counts for P3 ('' skips)")
    parser.add_argument("--preview-repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / ".state" / "bench")
    args = parser.parse_args()
    let_children_be_interrupted()
    if args.upgrade:
        ensure("istio-next")  # the next minor's istioctl and pilot-discovery
    upgrade_to = (UPGRADE_REVISION, pins()["ISTIO_NEXT_VERSION"])

    plans = [] if args.no_loop else [("loop", {"rolloutStrategy": "one-namespace-at-a-time"}, True)]
    waves = [(f"p{p}", {"rolloutParallelism": int(p)}, True)
             for p in args.parallelism.split(",") if p]
    plans += waves + [(f"workload-p{p}", {"rolloutStrategy": "workloads", "rolloutParallelism": int(p)}, True)
                      for p in args.per_workload.split(",") if p]
    without_log = [] if args.no_debug_log_cost or not waves else [(waves[0][0] + "-nolog", waves[0][1], False)]
    began = time.monotonic()
    results = []
    for first, profile in enumerate(p for p in args.pods.split(",") if p):
        pods, stage_ms = profile.split("=")
        size = fixture.FixtureSize(profiles=args.profiles, deployments=args.deployments, pod_stage_ms=int(stage_ms),
                                    statefulsets=args.statefulsets, kubeflow_shape=False)
        profile_plans = plans + (without_log if first == 0 else [])
        print(f"P1/P2 ({pods} pods, kwok stages {stage_ms}-{2 * int(stage_ms)} ms): {len(profile_plans)} migrations "
              f"of {size.profiles} profiles x ({size.deployments} Deployments + {size.statefulsets} StatefulSets), "
              f"churn {args.churn_rate}/s", flush=True)
        results += [runs.migration_run(f"{pods}-{label}", size, overrides, args.churn_rate, args.out, debug_log,
                                       log=lambda line: print(line, flush=True)) | {"pods": pods}
                    for label, overrides, debug_log in profile_plans]
        if not args.no_peer:
            results.append(runs.migration_run(f"{pods}-peer", size, {}, args.churn_rate, args.out,
                                              log=lambda line: print(line, flush=True), peer=True) | {"pods": pods})
        if args.upgrade:
            overrides = waves[0][1] if waves else {}
            for peer in (False,) if args.no_peer else (False, True):
                results.append(runs.migration_run(f"{pods}-upgrade" + ("-peer" if peer else ""), size, overrides,
                                                  args.churn_rate, args.out, log=lambda line: print(line, flush=True),
                                                  peer=peer, upgrade_to=upgrade_to) | {"pods": pods})
    previews = {}
    if args.preview_sizes:
        print("P3: pulumi preview --stack migrated as the mesh grows", flush=True)
        previews = growth(*runs.preview_run([int(n) for n in args.preview_sizes.split(",")], args.deployments,
                                            args.preview_repeats, log=lambda line: print(line, flush=True)))
    report = {"commit": runs.git_commit(), "fixture": vars(args) | {"out": str(args.out)},
              "migrations": results, "previews": previews or None,
              "total_s": round(time.monotonic() - began)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=2))
    if results:
        timeline(results, args.out / "timeline.png")
    print(table(report))
    print(f"\nwrote {args.out / 'results.json'}" + (f" and {args.out / 'timeline.png'}" if results else ""))
    failed = [r["label"] for r in results if not r.get("peer") and (
        any(r["churn"][k] for k in ("rejected", "no sidecar", "no such istiod"))
        or r["injectors_min"] != 1 or r["injectors_max"] != 1)]
    if failed:
        print(f"zero-window target missed in: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
