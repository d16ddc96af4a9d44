"""python -m live.canary --kubeconfig F --context C --istiod ADDR --leaving ADDR --revision R --leaving-revision R
       --injector NAME --namespaces NS[,NS...] --soak S --timeout S --limit N --wave KEY [--istioctl-version V]
       [--istioctl PATH] < PLAN
python -m live.canary --kubeconfig F --context C --put-back --revision R

The canary phase, between the destination istiod serving and the switch of the default injector:
  1. the default injector (--injector) sends the canary namespaces' new pods to the destination's istiod, every
     other namespace's where they went, in one write (migration.canary.with_canary: one injector at every instant,
     whatever a controller does to the namespaces' labels);
  2. their workloads (PLAN, as live.rollout reads it) are moved off --leaving the way each kind allows;
  3. the canary gate (migration.canary.judge), retried until --timeout: every proxy of those namespaces connected
     to an istiod of the destination and in sync with it (`istioctl proxy-status`: every xDS type SYNCED or
     NOT_SENT), every pod Ready, no istio-proxy restarted, each namespace's new pods still sent to the destination;
  4. the soak (--soak seconds), then the gate once more.
If any of it fails, the canary is put back: the default injector is written as it was before the canary (one write)
and the canary's workloads are moved back, so that every pod ends on the plane it started on; then the command
fails, naming each pod or namespace and why. The live view is required: a canary is proven on the live mesh or not
at all (without the istioctl to ask for it, the command stops before any change). The switch removes the canary's
webhooks in the write that points every namespace at the destination (live.fold).

--put-back (the way back): every namespace an earlier release's canary relabelled to revision R (`istio.io/rev=R`)
returns to the default injection path, one write each.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any, Callable, Sequence

from kubernetes import client

from live import cli, rollout
from live.discovery import pod_view
from live.target import api_client
from live.verify import LiveViewUnavailable, proxy_status
from migration import istioctls
from migration.account import account_line
from migration.canary import REVISION, Verdict, back_to_default, judge, with_canary, without_canary
from migration.proxies import namespace_of
from migration.workloads import service_of

POLL_SECONDS = 1.0
LIVE_VIEW_TRIES = 3
FIELD_MANAGER = "kf-istio-migrate"
WRITE_ATTEMPTS = 10


def rewrite_injector(api: client.ApiClient, name: str, change: Callable[[dict[str, Any]], dict[str, Any] | None],
                     what: str) -> None:
    """One write of the MutatingWebhookConfiguration name: change(live), or nothing when it returns None or live
    itself. The write carries the live resourceVersion, so the API server refuses it if anyone wrote in between
    (istiod refreshing a caBundle): it is then made again from what is live."""
    admission = client.AdmissionregistrationV1Api(api)
    for _ in range(WRITE_ATTEMPTS):
        live = api.sanitize_for_serialization(admission.read_mutating_webhook_configuration(name))
        live["metadata"].pop("managedFields", None)
        new = change(live)
        if new is None or new == live:
            return
        try:
            admission.replace_mutating_webhook_configuration(name, new, field_manager=FIELD_MANAGER)
        except client.ApiException as err:
            if err.status != 409:
                raise
            continue
        print(f"default injector {name}: {what} (one write)", flush=True)
        return
    raise RuntimeError(f"default injector {name}: written by someone else {WRITE_ATTEMPTS} times while this command "
                       f"wrote it; nothing of it was changed by this command")


def put_back_injector(api: client.ApiClient, name: str) -> None:
    """The default injector as it was before the canary (one write)."""
    rewrite_injector(api, name, without_canary,
                     "the canary's webhooks removed, every namespace's pods sent where they went before")


def relabel(api: client.ApiClient, namespaces: Sequence[str], patch: dict, what: str) -> None:
    core = client.CoreV1Api(api)
    for ns in namespaces:
        core.patch_namespace(ns, patch)
        print(f"namespace {ns}: {what} (one write)", flush=True)


def gate(api: client.ApiClient, args: cli.Canary, istioctl: str) -> Verdict:
    """The canary gate, once."""
    views = [pod_view(api, ns) for ns in args.namespaces]
    for attempt in range(LIVE_VIEW_TRIES):  # a port-forward to istiod can drop once: look again before judging
        try:
            served = proxy_status(istioctl, namespace_of(args.istiod), args.revision, args.kubeconfig, args.context)
            break
        except LiveViewUnavailable as err:
            if attempt == LIVE_VIEW_TRIES - 1:
                return Verdict(offenders=(f"the live view the canary gate needs cannot be had: {err}",), left=(),
                               proven=0)
            time.sleep(POLL_SECONDS)
    return judge(args.namespaces, {ns: labels for v in views for ns, labels in v["namespaces"].items()},
                 [p for v in views for p in v["pods"]], {k: c for v in views for k, c in v["controllers"].items()},
                 views[0]["webhooks"], served, args.istiod)


def gate_until(api: client.ApiClient, args: cli.Canary, istioctl: str, timeout: float) -> Verdict:
    """The gate, retried until it passes or timeout (a restarted pod's proxy connects and syncs a moment after);
    what it finds is printed whenever that changes, so a failure also shows what the gate saw before its last look."""
    began, seen = time.monotonic(), ()
    while (verdict := gate(api, args, istioctl)).offenders and time.monotonic() < began + timeout:
        if verdict.offenders != seen:
            seen = verdict.offenders
            print(f"canary gate after {time.monotonic() - began:.0f}s, not yet: {'; '.join(seen)}", flush=True)
        time.sleep(POLL_SECONDS)
    return verdict


def put_back(api: client.ApiClient, args: cli.Canary, named: list) -> list[BaseException]:
    """The default injector as before the canary, the canary's workloads moved back off the destination."""
    put_back_injector(api, args.injector)
    back = dataclasses.replace(args, leaving=args.istiod, istiod=args.leaving)
    return rollout.move(api, back, named)[1]


def run(api: client.ApiClient, args: cli.Canary, named: list) -> int:
    try:  # the gate's live view needs it: without one, stop before any change
        istioctl = istioctls.named(args.istioctl_version, args.istioctl)
    except istioctls.RenderError as err:
        print(f"the canary gate cannot look without istioctl, nothing was changed: {err}", file=sys.stderr)
        return 1
    destination = tuple(reversed(service_of(args.istiod).split(".")))
    rewrite_injector(api, args.injector, lambda live: with_canary(live, args.namespaces, destination),
                     f"the new pods of {', '.join(args.namespaces)} sent to {service_of(args.istiod)}")
    began = time.monotonic()
    moved, errors = rollout.move(api, args, named)
    failures = [f"moving {err}" for err in errors]
    if not failures:
        verdict = gate_until(api, args, istioctl, args.timeout)
        failures = list(verdict.offenders)
        if not failures:
            print(f"canary gate passed: {verdict.proven} proxies in {', '.join(args.namespaces)} connected and in sync "
                  f"with the istiods of {namespace_of(args.istiod)}, {len(moved)} workload(s) moved in "
                  f"{time.monotonic() - began:.1f}s; soaking {args.soak}s", flush=True)
            time.sleep(args.soak)
            verdict = gate(api, args, istioctl)  # a settled canary: what fails now does not go away by waiting
            failures = [f"after the soak: {line}" for line in verdict.offenders]
        for pod in verdict.left:
            print(f"left on {args.leaving} (no workload moves it; unmanagedPods applies after the switch): {pod}")
    if not failures:
        print(f"canary passed: {', '.join(args.namespaces)} on {args.istiod}", flush=True)
        print(account_line(moved), flush=True)
        return 0
    for line in failures:
        print(f"canary gate: {line}", file=sys.stderr, flush=True)
    print("putting the canary back on the plane it left", file=sys.stderr, flush=True)
    for err in put_back(api, args, named):
        print(f"error putting back: {err}", file=sys.stderr)
    print(f"canary failed and put back: the new pods of {', '.join(args.namespaces)} sent to {args.leaving} again; "
          f"the default injector was not switched", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = cli.Canary.from_argv(argv, __doc__)
    api = api_client(args)
    if args.put_back:
        found = client.CoreV1Api(api).list_namespace(label_selector=f"{REVISION}={args.revision}").items
        relabel(api, sorted(n.metadata.name for n in found), back_to_default(),
                f"back on the default injection path ({REVISION}={args.revision} removed)")
        return 0
    return run(api, args, rollout.plan_workloads(json.load(sys.stdin)))


if __name__ == "__main__":
    sys.exit(main())
