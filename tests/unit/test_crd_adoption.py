"""How the migrated stack declares the CRDs it imports: as they stand when the move changes nothing on them (no
update step after the import), with their new schema forced when a version jump changes them."""

from __future__ import annotations

import copy
import dataclasses

from migration import render
from migration.decide import _crds
from migration.marks import ADOPT_ANNOTATIONS
from tests.fixtures import recorded
from tests.unit.harness import run_program
from tests.unit.live_mesh import CFG, charm_install

RENDERED = render.crds(recorded.renders(CFG).legacy)


def as_the_api_server_returns(crd: dict, **changes) -> dict:
    """What preflight reads for crd after `istioctl install` applied it: its metadata, and its spec with the
    conversion strategy the API server defaults."""
    meta = crd["metadata"]
    live = {"uid": f"uid-{meta['name']}", "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "spec": {**copy.deepcopy(crd["spec"]), "conversion": {"strategy": "None"}}}
    return live | changes


def declared(live_crds: dict) -> dict:
    mesh = dataclasses.replace(charm_install(), crds=live_crds)
    args = _crds(recorded.renders(CFG).legacy, mesh)
    return {c["metadata"]["name"]: c for c in args.crds}


def test_unchanged_crds_are_declared_exactly_as_they_stand():
    live = {c["metadata"]["name"]: as_the_api_server_returns(c) for c in RENDERED}
    for name, crd in declared(live).items():
        assert crd["spec"] == live[name]["spec"], f"{name}: the defaulted conversion is declared, so no diff"
        assert (crd["metadata"].get("annotations") or {}) == live[name]["annotations"], \
            f"{name}: not annotated for a forced apply (that would be an update step after the import)"
        assert crd["metadata"].get("labels") == live[name]["labels"]


def test_metadata_others_added_is_kept_and_still_counts_as_unchanged():
    live = {c["metadata"]["name"]: as_the_api_server_returns(c) for c in RENDERED}
    name = RENDERED[0]["metadata"]["name"]
    live[name]["annotations"] = {**live[name]["annotations"], "helm.sh/resource-policy": "keep"}
    crd = declared(live)[name]
    assert crd["metadata"]["annotations"] == live[name]["annotations"]


def test_a_changed_schema_or_label_is_forced_over_the_old_field_managers():
    live = {c["metadata"]["name"]: as_the_api_server_returns(c) for c in RENDERED}
    first, second = (c["metadata"]["name"] for c in RENDERED[:2])
    live[first]["spec"]["versions"] = live[first]["spec"]["versions"][:1] + [{"name": "v0", "served": False}]
    live[second]["labels"] = {**live[second]["labels"], "app.kubernetes.io/version": "1.0.1"}
    out = declared(live)
    for name in (first, second):
        assert ADOPT_ANNOTATIONS.items() <= out[name]["metadata"]["annotations"].items(), name
    assert out[second]["metadata"]["labels"]["app.kubernetes.io/version"] != "1.0.1", "the rendered label wins"
    untouched = [n for n in out if n not in (first, second)]
    assert untouched and not any("pulumi.com/patchForce" in (out[n]["metadata"].get("annotations") or {})
                                 for n in untouched)


def _waits_for_crds(live_crds: dict) -> bool:
    """Whether the new istiod's Deployment waits, directly or not, for a CRD step in the migrated stack."""
    registered = run_program("migrated", {"topology": "migrated"}, dataclasses.replace(charm_install(), crds=live_crds))
    by_urn = {r.urn: r for r in registered}
    istiod = next(r for r in registered if r.kind == "Deployment" and r.parent.endswith("ControlPlane::control-plane"))
    seen, todo = set(), list(istiod.dependencies)
    while todo:
        urn = todo.pop()
        if urn in by_urn and urn not in seen:
            seen.add(urn)
            todo += by_urn[urn].dependencies
    waits = any(by_urn[u].kind == "CustomResourceDefinition" or by_urn[u].type == "kfistio:istio:Crds" for u in seen)
    crds = next(r for r in registered if r.type == "kfistio:istio:Crds")
    after = {by_urn[u].parent.split("::")[-1] for u in crds.dependencies if u in by_urn}
    assert waits or after == {"analyze-before", "unmanaged-pods"}, \
        "unchanged CRDs are imported after the rollouts started (with the unmanaged-pods check), while workloads roll"
    return waits


def test_the_control_plane_waits_for_the_crds_only_when_they_change_on_the_cluster():
    live = {c["metadata"]["name"]: as_the_api_server_returns(c) for c in RENDERED}
    assert not _waits_for_crds(live), "imports that write nothing must not hold up the new istiod"
    name = RENDERED[0]["metadata"]["name"]
    live[name]["spec"] = {**live[name]["spec"], "versions": live[name]["spec"]["versions"][:1]}
    assert _waits_for_crds(live), "a CRD that changes (a version jump) comes before the istiod that needs it"
