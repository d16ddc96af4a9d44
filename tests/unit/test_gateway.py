"""The gateway: patched where another owner made it (only what the move must change), whole where this program
makes it; optional objects only when present."""

from __future__ import annotations

import dataclasses

from migration import decide as decide_module
from migration import render
from migration.config import from_mapping
from migration.gateway import gateway_patches
from migration.marks import MADE_HERE
from migration.live_mesh import object_id
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.live_mesh import LEGACY_ISTIOD, NEW_ISTIOD, charm_install, empty_cluster

METRICS = ("Service", "kubeflow", "istio-gateway-metrics")
DEPLOYMENT = ("Deployment", "kubeflow", "istio-ingressgateway-workload")


def _gateway(topology: str, live):
    cfg = from_mapping({"topology": topology})
    return decide_module.decide(cfg, recorded.renders(cfg), live, TARGET).gateway


def _env(patch) -> list[dict]:
    return patch["spec"]["template"]["spec"]["containers"][0]["env"]


def test_migrated_patches_only_the_istiod_address_and_protects_every_charm_object():
    gateway = _gateway("migrated", charm_install())
    assert gateway.patches and gateway.purge_proof == (DEPLOYMENT,)
    deployment = next(p for p in gateway.objects if p["kind"] == "Deployment")
    assert deployment["spec"] == {"template": {"spec": {"containers": [{"name": "istio-proxy", "env": [
        {"name": "CA_ADDR", "value": NEW_ISTIOD},
        {"name": "PROXY_CONFIG", "value": '{"discoveryAddress": "%s"}' % NEW_ISTIOD}]}]}}}
    assert all(p["metadata"]["labels"] == {"kfistio.io/protected": "true"} for p in gateway.objects)
    assert all(set(p) == {"apiVersion", "kind", "metadata"} for p in gateway.objects if p["kind"] != "Deployment")
    assert "Gateway" not in {p["kind"] for p in gateway.objects}, "the Gateway CR stays its owner's"


def test_an_object_an_older_charm_never_made_is_neither_patched_nor_created():
    live = charm_install()
    older = dataclasses.replace(live, present=live.present - {METRICS})
    for topology in ("migrated", "legacy"):
        assert METRICS not in {object_id(p) for p in _gateway(topology, older).objects}, topology


def test_rolling_back_a_charm_gateway_patches_the_deployment_back_and_protects_nothing():
    gateway = _gateway("legacy", charm_install())
    assert gateway.patches and not gateway.purge_proof
    (deployment,) = gateway.objects
    assert _env(deployment)[0] == {"name": "CA_ADDR", "value": LEGACY_ISTIOD}
    assert deployment["spec"]["template"]["metadata"]["labels"] == {"operator.istio.io/component": "IngressGateways"}
    assert "labels" not in deployment["metadata"]


def test_the_legacy_stack_makes_whole_objects_and_keeps_the_ones_it_made():
    made = _gateway("legacy", empty_cluster())
    assert not made.patches and not made.adopt
    assert all(MADE_HERE.items() <= o["metadata"]["labels"].items() for o in made.objects)
    live = charm_install()
    own = _gateway("legacy", dataclasses.replace(live, made_here=live.present))
    assert not own.patches and DEPLOYMENT in own.adopt
    gateway_cr = ("Gateway", "kubeflow", "kubeflow-gateway")
    # The Gateway it made stays declared (a second run would otherwise drop it); one the charm made is left alone.
    assert gateway_cr in live.present
    mine = _gateway("legacy", dataclasses.replace(live, made_here=live.present))
    assert gateway_cr in {object_id(o) for o in mine.objects} and gateway_cr in mine.adopt
    theirs = _gateway("legacy", dataclasses.replace(live, made_here=live.present - {gateway_cr}))
    assert gateway_cr not in {object_id(o) for o in theirs.objects}


def test_patches_are_empty_for_objects_that_are_absent():
    cfg = from_mapping({"topology": "migrated"})
    layout = decide_module._gateway_layout(cfg, render.topology(recorded.renders(cfg).migrated, "istio-system", "kf-1-30"))
    assert gateway_patches(layout, frozenset(), protect=True) == []


def test_the_patched_env_lists_the_live_entries_in_order_by_name_and_sets_only_the_address():
    charm_env = [{"name": "JWT_POLICY", "value": "third-party-jwt"},
                 {"name": "PILOT_CERT_PROVIDER", "value": "istiod.kubeflow.svc"},
                 {"name": "CA_ADDR", "value": LEGACY_ISTIOD},
                 {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    live = charm_install()
    live = dataclasses.replace(live, proxy_env={DEPLOYMENT: charm_env})
    deployment = next(p for p in _gateway("migrated", live).objects if p["kind"] == "Deployment")
    assert _env(deployment) == [{"name": "JWT_POLICY"}, {"name": "PILOT_CERT_PROVIDER"},
                                {"name": "CA_ADDR", "value": NEW_ISTIOD}, {"name": "POD_NAME"},
                                {"name": "PROXY_CONFIG", "value": '{"discoveryAddress": "%s"}' % NEW_ISTIOD}]
    live_after = charm_env[:2] + [{"name": "CA_ADDR", "value": NEW_ISTIOD}, charm_env[3], _env(deployment)[4]]
    moved = dataclasses.replace(live, proxy_env={DEPLOYMENT: live_after})
    assert _env(next(p for p in _gateway("migrated", moved).objects if p["kind"] == "Deployment")) == \
        _env(deployment), "after the move, the same patch: nothing to change"
