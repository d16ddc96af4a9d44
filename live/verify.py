"""python -m live.verify [--kubeconfig FILE --context NAME] --istiod ADDR --leaving ADDR
                        [--istioctl-version V | --istioctl PATH] [--revision R --leaving-revision R] [--timeout S]
                        [--analysis-before FILE]

The in-use gate: exit 0 only if no running pod anywhere in the cluster still needs moving off the plane at
--leaving, judged twice:
  - from pod specs (migration.workloads.needs_move: its proxy uses that istiod, or it has no proxy though an
    injector of either plane would give it one);
  - live, from the control planes (migration.proxies): `istioctl proxy-status -o json` against each plane's
    istiods, as an operator runs it; no proxy may still be connected to the plane being left, and every running
    pod whose proxy names the destination must be served by a destination istiod.
Then Istio's own analyzers judge the mesh moved to (live.analyze, migration.analysis): `istioctl analyze
--all-namespaces` for the destination plane shows no Error message that was not there before the move (the messages
of --analysis-before) and no IST0139, and `istioctl x check-inject` finds exactly one injecting webhook for one
running pod of every namespace with sidecars.
The gate is retried until --timeout (a restarted pod's proxy connects a moment after it runs); the analyzers run
once it passes, and what they find fails the step at once. When the live view
cannot be had (no istioctl of that version, istiod unreachable), it says so and the pod-spec check alone decides;
it never passes silently. Otherwise print each offending pod with its owner and why.
The migration passes the stack's resolved cluster (--kubeconfig and --context); an operator checking by hand may
leave them out to read KUBECONFIG and its current context.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

from kubernetes import client

from live import cli
from live.analyze import AnalysisFailed, analyze, check_inject, injected_pods
from live.discovery import pod_view
from live.target import api_client
from migration import istioctls
from migration.analysis import AnalysisMessage, errors, new_problems, parse_messages
from migration.proxies import ConnectedProxy, live_offenders, namespace_of, parse_proxy_status
from migration.workloads import offenders, proxy_address, service_of


class LiveViewUnavailable(RuntimeError):
    pass


def proxy_status(istioctl: str, namespace: str, revision: str, kubeconfig: str | None,
                 context: str | None) -> list[ConnectedProxy]:
    """The proxies the istiods of one plane serve, as `istioctl proxy-status -i NAMESPACE -r REVISION -o json`
    reports them (istioctl port-forwards to each istiod pod labelled app=istiod and istio.io/rev=REVISION)."""
    command = [istioctl, "proxy-status", "-i", namespace, "-r", revision, "-o", "json", "--timeout", "20s",
               *istioctls.cluster_flags(kubeconfig, context)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LiveViewUnavailable(f"`istioctl proxy-status -i {namespace} -r {revision}` failed: "
                                  f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
    return parse_proxy_status(proc.stdout)


def running_istiods(api: client.ApiClient, namespace: str, revision: str) -> int:
    """istiod pods of the plane that run and are not being deleted (those istioctl would port-forward to)."""
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=f"app=istiod,istio.io/rev={revision}",
                                                     field_selector="status.phase=Running").items
    return sum(1 for p in pods if p.metadata.deletion_timestamp is None)


def live_check(args: cli.Verify, istioctl: str, api: client.ApiClient, pods: list) -> tuple[list[str], str]:
    """Offenders by the live view, and what it saw; raises LiveViewUnavailable naming why it cannot be had."""
    planes = [(namespace_of(args.leaving), args.leaving_revision), (namespace_of(args.istiod), args.revision)]
    # A plane without running istiods serves nobody (istioctl would look elsewhere, at the webhooks' address).
    leaving, destination = ([] if not running_istiods(api, ns, rev)
                            else proxy_status(istioctl, ns, rev, args.kubeconfig, args.context) for ns, rev in planes)
    seen = (f"live (istioctl proxy-status): {len(destination)} proxies connected to the istiods of {planes[1][0]}, "
            f"{len(leaving)} to those of {planes[0][0]}")
    return live_offenders(leaving, destination, pods, args.istiod), seen


def analyzers_check(args: cli.Verify, istioctl: str, pods: list,
                    before: tuple[AnalysisMessage, ...]) -> tuple[list[str], str]:
    """What Istio's analyzers find wrong with the mesh moved to (before: their messages before the move), and what
    they saw."""
    after = analyze(istioctl, namespace_of(args.istiod), args.revision, args.kubeconfig, args.context)
    injections = check_inject(istioctl, injected_pods(pods, args.istiod), args.kubeconfig, args.context)
    problems = [f"istioctl analyze: {m}" for m in new_problems(before, after)]
    problems += [f"istioctl x check-inject: {c.problem}" for c in injections if c.problem]
    seen = (f"istioctl analyze: {len(after)} message(s), {len(errors(after))} Error ({len(before)} before the move); "
            f"istioctl x check-inject: one pod in each of {len(injections)} namespace(s)")
    return problems, seen


def main(argv: list[str] | None = None) -> int:
    args = cli.Verify.from_argv(argv, __doc__)
    before = parse_messages(sys.stdin.read() if args.analysis_before == "-" else
                            pathlib.Path(args.analysis_before).read_text()) if args.analysis_before else ()
    api = api_client(args)
    deadline = time.monotonic() + args.timeout
    while True:
        view = pod_view(api)
        bad, judged = offenders(**view, leaving=args.leaving, destination=args.istiod), []
        if not (args.istioctl_version or args.istioctl):
            live_note = "live proxy view not asked (no --istioctl-version or --istioctl): pod specs only"
        elif bad:
            live_note = "live proxy view not asked: the pod specs already name pods to move"
        else:
            try:
                istioctl = istioctls.named(args.istioctl_version, args.istioctl)
                bad, live_note = live_check(args, istioctl, api, view["pods"])
            except (istioctls.RenderError, LiveViewUnavailable) as err:
                istioctl, live_note = None, f"live proxy view unavailable, pod specs only: {err}"
                if args.require_live_view:
                    bad, live_note = [f"the live proxy view is required (--require-live-view): {err}"], "no live view"
            if istioctl and not bad:
                try:
                    judged, analyzers_note = analyzers_check(args, istioctl, view["pods"], before)
                except AnalysisFailed as err:  # istioctl runs, so the judge must too
                    judged, analyzers_note = [str(err)], "istioctl's analyzers did not run"
                live_note += f"; {analyzers_note}"
        # The analyzers judge a settled mesh (the gate passed): what they find does not go away by waiting.
        if not bad or time.monotonic() >= deadline:
            break
        time.sleep(2)
    for line in bad:
        print(f"still needs moving off {args.leaving}: {line}", file=sys.stderr)
    for line in judged:
        print(f"Istio's analyzers: {line}", file=sys.stderr)
    moved = sum(1 for p in view["pods"] if service_of(proxy_address(p) or "") == service_of(args.istiod))
    print(f"{moved} proxies use {args.istiod}; {len(bad)} pod(s) still need moving off {args.leaving}; {live_note}")
    return 1 if bad or judged else 0


if __name__ == "__main__":
    sys.exit(main())
