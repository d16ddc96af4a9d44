"""python -m fleet preview|up|rollback FLEET.yaml [--max-parallel N] [--max-failures N] [--results FILE]

Moves many clusters' Istio control planes with one command, on Pulumi's Automation API, their state in one shared
backend (fleet.spec describes the file). Every cluster is previewed first and shown in one table (live Istio,
workloads to move, refusals); a cluster whose preview fails is not touched. Then `up` (the `migrated` stacks) or
`rollback` (the `legacy` stacks) runs on the canary cluster alone, and on the rest at most --max-parallel at once,
starting no new one once --max-failures have failed (a running one is never interrupted). One line per cluster and
phase while they run; a results file (per cluster: result, exit, seconds, workloads moved and pods left); exit 1 if
any cluster was refused, failed or not started.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

import yaml

from fleet.run import ClusterStack, Outcome, Printer, bounded
from fleet.spec import FleetError, parse
from fleet.table import render_table, result_of

STACK_OF = {"preview": "migrated", "up": "migrated", "rollback": "legacy"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fleet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=sorted(STACK_OF))
    parser.add_argument("fleet_file", type=pathlib.Path)
    parser.add_argument("--max-parallel", type=int, default=2,
                        help="clusters previewed or updated at once after the canary (default 2)")
    parser.add_argument("--max-failures", type=int, default=1,
                        help="start no new update once this many have failed (default 1)")
    parser.add_argument("--results", type=pathlib.Path, help="results file (default: <work root>/results.json)")
    parser.add_argument("--work-root", type=pathlib.Path,
                        help="each cluster's project directory and PULUMI_HOME (default: .fleet/<fleet file name> "
                             "beside the fleet file; keep it: the stack files hold each stack's encryption salt)")
    args = parser.parse_args(argv)
    if args.max_parallel < 1 or args.max_failures < 1:
        parser.error("--max-parallel and --max-failures must be at least 1")
    try:
        fleet = parse(yaml.safe_load(args.fleet_file.read_text()))
    except (OSError, yaml.YAMLError, FleetError) as err:
        print(f"error: {args.fleet_file}: {err}", file=sys.stderr)
        return 2
    if not (os.environ.get("PULUMI_CONFIG_PASSPHRASE") or os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")):
        print("error: set PULUMI_CONFIG_PASSPHRASE (or _FILE): the stacks hold the mesh's CA key encrypted with it",
              file=sys.stderr)
        return 2
    work_root = args.work_root or args.fleet_file.resolve().parent / ".fleet" / args.fleet_file.stem
    say, stack = Printer(), STACK_OF[args.command]
    try:
        stacks = {c.name: ClusterStack(fleet, c, stack, work_root, os.environ, say) for c in fleet.clusters}
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    began = time.monotonic()

    previews, _ = bounded(stacks.values(), lambda s: s.run("preview"), lambda o: False, args.max_parallel, 1)
    previews = sorted(previews, key=lambda o: list(stacks).index(o.cluster))
    print(render_table(previews), flush=True)
    updates: list[Outcome] = []
    not_started: list[str] = []
    if args.command != "preview":
        ready = [o.cluster for o in previews if o.ok]
        canary = fleet.canary(ready)
        first = [stacks[canary].run("up")] if canary else []
        updates += first
        rest = [stacks[name] for name in ready if name != canary]
        if not first or not first[0].ok:
            not_started = [s.spec.name for s in rest]
            if rest:
                say("the canary cluster was refused or failed: no other cluster is started")
        else:
            ended, waiting = bounded(rest, lambda s: s.run("up"), lambda o: not o.ok, args.max_parallel,
                                     args.max_failures)
            updates += ended
            not_started = [s.spec.name for s in waiting]
            if waiting:
                say(f"--max-failures {args.max_failures} reached: not started: {', '.join(not_started)}")
    results = [result_of(name, stack, previews, updates, not_started, args.command) for name in stacks]
    path = args.results or work_root / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"command": args.command, "stack": stack, "backend": fleet.backend,
                                "seconds": round(time.monotonic() - began, 1), "clusters": results}, indent=2))
    print(f"results: {path}", flush=True)
    return 0 if all(r["result"] in ("previewed", "done") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
