"""The verification table: each check compares before/after snapshots, sampler output and live state."""

from __future__ import annotations

import subprocess
from typing import Any

from demo import fixture
from demo.observe import kubectl_json
from migration.verify import offenders

NEW_ISTIOD = ("istio-system", "istiod-kf-1-30")
NEW_ADDRESS = "istiod-kf-1-30.istio-system.svc:15012"


def checks(env: dict[str, str], before: dict[str, Any], after: dict[str, Any], samples: list[dict[str, Any]],
           duration: float, second_up_noop: bool, size: fixture.FixtureSize) -> list[tuple[str, str, bool]]:
    """(check, observed, passed) rows."""
    counts = [c for s in samples for c in s["injectors"].values()]
    dangling = sum(1 for s in samples if s["dangling_validators"])
    pods = [p for ns in fixture.profile_namespaces(size) for p in kubectl_json(env, "get", "pods", "-n", ns)["items"]]
    pods += kubectl_json(env, "get", "pods", "-n", "kubeflow", "-l", "istio=ingressgateway")["items"]
    bad = offenders(pods, NEW_ADDRESS)
    available = subprocess.run(["kubectl", "-n", NEW_ISTIOD[0], "get", "deploy", NEW_ISTIOD[1], "-o",
                                "jsonpath={.status.conditions[?(@.type=='Available')].status}"],
                               env=env, capture_output=True, text=True).stdout
    old = [d["metadata"]["name"] for d in kubectl_json(env, "get", "deploy", "-n", "kubeflow", "-l", "app=istiod")["items"]]
    changed_crs = sorted(k for k in before["crs"] if before["crs"][k] != after["crs"].get(k))
    return [
        ("CRD UIDs unchanged", f"{sum(before['crd_uids'][n] == after['crd_uids'].get(n) for n in before['crd_uids'])}"
         f"/{len(before['crd_uids'])}", before["crd_uids"] == after["crd_uids"] and len(before["crd_uids"]) > 0),
        ("Istio CRs identical (spec, labels, annotations)", f"{len(before['crs'])} before, {len(after['crs'])} after,"
         f" {len(changed_crs)} changed", before["crs"] == after["crs"] and len(before["crs"]) > 0),
        ("istio-ca-root-cert identical in every namespace", f"{len(set(after['roots'].values()))} distinct root(s)",
         len(set(after["roots"].values())) == 1 and all(after["roots"].get(ns) == h for ns, h in before["roots"].items())),
        ("new istiod Available", f"{'/'.join(NEW_ISTIOD)} Available={available or 'missing'}", available == "True"),
        ("injectors per profile namespace, every sample", f"min {min(counts, default=0)}, max {max(counts, default=0)}"
         f" over {len(samples)} samples", bool(counts) and min(counts) == max(counts) == 1),
        ("default validator targets a live Service", f"{dangling} bad samples", dangling == 0 and bool(samples)),
        ("every sidecar and the gateway use the new istiod", f"{len(pods) - len(bad)}/{len(pods)} pods"
         + (f"; e.g. {bad[0]}" if bad else ""), not bad and len(pods) > 0),
        ("old control plane removed", f"istiod Deployments left in kubeflow: {old or 'none'}", not old),
        ("second `pulumi preview` shows no changes", "no changes" if second_up_noop else "changes", second_up_noop),
        ("migration wall time", f"{duration:.0f}s", True),
    ]


def print_table(rows: list[tuple[str, str, bool]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\n{'check':<{width}}  result  observed")
    print(f"{'-' * width}  ------  {'-' * 40}")
    for check, observed, ok in rows:
        print(f"{check:<{width}}  {'PASS' if ok else 'FAIL':<6}  {observed}")
    print(f"\n{sum(ok for *_, ok in rows)} passed, {sum(not ok for *_, ok in rows)} failed")
