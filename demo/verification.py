"""The verification table: each check compares before/after snapshots, the injector history and live state. What "new"
and "old" mean comes from the migrated stack's outputs, not from constants: a row can only pass for the plane the
stack really declared."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import config

from demo.observe import read
from devcluster import toolchain
from devcluster.proxy_events import issuers, lost_control_plane
from live.analyze import analyze, check_inject, injected_pods
from live.discovery import pod_view
from live.verify import proxy_status
from migration.analysis import errors, new_problems, parse_messages
from migration.proxies import runs_a_proxy
from migration.versions import build_of, istiod_image
from migration.workloads import offenders, proxy_address, service_of


def checks(env: dict[str, str], outputs: dict[str, Any], before: dict[str, Any], after: dict[str, Any],
           states: list[dict[str, Any]], second_preview_clean: bool,
           proxy_events: list[dict[str, Any]], precheck: str | None) -> list[tuple[str, str, bool]]:
    """(check, observed, passed) rows. outputs: `pulumi stack output --json` of the migrated stack; proxy_events:
    the proxy simulator's log (devcluster.proxy_events) over the update; precheck: what the stack's preflight said
    `istioctl x precheck` found (None if the update's output has no such line)."""
    new_ns, address, old_ns = outputs["controlPlaneNamespace"], outputs["istiodAddress"], outputs["sourceNamespace"]
    new_istiod = address.split(".", 1)[0]  # istioctl names the Deployment like its Service
    counts = [c for s in states for c in s["injectors"].values()]
    dangling = sum(1 for s in states if s["dangling_validators"])
    view = pod_view(config.new_client_from_config(config_file=env["KUBECONFIG"]))
    bad = offenders(**view, leaving=outputs["leavingIstiodAddress"], destination=address)
    moved = sum(1 for p in view["pods"] if service_of(proxy_address(p) or "") == service_of(address))
    kinds: dict[str, int] = {}
    for ways in outputs["workloadMoves"].values():
        for way, count in ways.items():
            kinds[way] = kinds.get(way, 0) + count
    istiods = {(d["metadata"]["namespace"], d["metadata"]["name"]): d
               for d in read(env, "deployments", label_selector="app=istiod")["items"]}
    new = istiods.get((new_ns, new_istiod))
    conditions = (new or {}).get("status", {}).get("conditions", [])
    available = next((c["status"] for c in conditions if c["type"] == "Available"), "missing")
    old = sorted(name for ns, name in istiods if ns == old_ns)
    legacy, new_image = outputs["legacyIstiod"], istiod_image(new) if new else "missing"
    istioctl = str(toolchain.binary("istioctl"))
    live = proxy_status(istioctl, new_ns, outputs["revision"], env["KUBECONFIG"], None)
    with_proxy = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in view["pods"] if runs_a_proxy(p)}
    lost, roots = lost_control_plane(proxy_events), set().union(*issuers(proxy_events).values())
    analyzed = analyze(istioctl, new_ns, outputs["revision"], env["KUBECONFIG"])
    analyzed_before = parse_messages(json.dumps(outputs.get("analysisBefore", [])))
    judged = new_problems(analyzed_before, analyzed)
    injections = check_inject(istioctl, injected_pods(view["pods"], address), env["KUBECONFIG"])
    injected_twice = [c.problem for c in injections if c.problem]
    same_specs = [n for n, spec in before["crd_specs"].items() if after["crd_specs"].get(n) == spec]
    changed_crs = sorted(k for k in before["crs"] if before["crs"][k] != after["crs"].get(k))
    return [
        ("CRD UIDs unchanged", f"{sum(before['crd_uids'][n] == after['crd_uids'].get(n) for n in before['crd_uids'])}"
         f"/{len(before['crd_uids'])}", before["crd_uids"] == after["crd_uids"] and len(before["crd_uids"]) > 0),
        ("CRD specs byte-identical (same version)", f"{len(same_specs)}/{len(before['crd_specs'])}",
         before["crd_specs"] == after["crd_specs"] and len(same_specs) > 0),
        ("Istio CRs identical (spec, labels, annotations)", f"{len(before['crs'])} before, {len(after['crs'])} after,"
         f" {len(changed_crs)} changed", before["crs"] == after["crs"] and len(before["crs"]) > 0),
        ("istio-ca-root-cert identical in every namespace", f"{len(set(after['roots'].values()))} distinct root(s)",
         len(set(after["roots"].values())) == 1 and all(after["roots"].get(ns) == h for ns, h in before["roots"].items())),
        ("new istiod Available", f"{new_ns}/{new_istiod} Available={available}", available == "True"),
        ("Istio version kept (the same image)", f"{legacy['version']} -> {build_of(new_image).version} "
         f"({new_image})", new_image == legacy["image"]),
        ("injectors per profile namespace, every state", f"min {min(counts, default=0)}, max {max(counts, default=0)}"
         f" over {len(states)} states", bool(counts) and min(counts) == max(counts) == 1),
        ("default validator targets a live Service", f"{dangling} bad states", dangling == 0 and bool(states)),
        ("workloads moved, by way and kind", ", ".join(f"{n} {way}" for way, n in sorted(kinds.items())) or "none",
         bool(kinds)),
        ("no pod left on the old istiod (gateway included)", f"{moved} proxies on {address}, {len(bad)} left"
         + (f"; e.g. {bad[0]}" if bad else ""), not bad and moved > 0),
        ("live: every proxy connected to the new istiod (istioctl proxy-status)",
         f"{len(live)} of {len(with_proxy)} on {sorted({p.istiod for p in live})}, versions "
         f"{sorted({p.version for p in live})}", {(p.namespace, p.pod) for p in live} == with_proxy and bool(live)),
        ("no proxy lost its istiod while its pod ran; one issuing root", f"{len(lost)} lost"
         + (f" (e.g. {lost[0]})" if lost else "") + f", {len(roots)} root(s) over both istiods' certificates",
         not lost and len(roots) == 1),
        ("istioctl x precheck before the move (preflight)", precheck or "not run",
         bool(precheck) and "Error [" not in precheck),
        ("istioctl analyze: no new Error, no IST0139", f"{len(analyzed)} message(s), {len(errors(analyzed))} Error "
         f"({len(errors(analyzed_before))} before the move)" + (f"; e.g. {judged[0]}" if judged else ""),
         not judged and outputs.get("analysisBefore") is not None),
        ("istioctl x check-inject: one injector for a pod of each injected namespace",
         f"{len(injections)} namespace(s)" + (f"; {injected_twice[0]}" if injected_twice else ""),
         not injected_twice and bool(injections)),
        ("old control plane removed", f"istiod Deployments left in {old_ns}: {old or 'none'}", not old),
        ("second `pulumi preview` shows no changes", "no changes" if second_preview_clean else "changes",
         second_preview_clean),
    ]


def print_table(rows: list[tuple[str, str, bool]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\n{'check':<{width}}  result  observed")
    print(f"{'-' * width}  ------  {'-' * 40}")
    for check, observed, ok in rows:
        print(f"{check:<{width}}  {'PASS' if ok else 'FAIL':<6}  {observed}")
    print(f"\n{sum(ok for *_, ok in rows)} passed, {sum(not ok for *_, ok in rows)} failed")
