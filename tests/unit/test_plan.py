"""Planning and preflight refusals: pure functions over a recorded live mesh."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from migration import plan, render
from migration.analysis import AnalysisMessage
from migration.config import from_mapping
from migration.decide import decide
from migration.live_mesh import LiveMesh, object_id
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.live_mesh import LEGACY_ISTIOD, NEW_ISTIOD, charm_install, pod

CFG = from_mapping({"topology": "migrated"})
LEGACY = recorded.renders(CFG).legacy


def make_plan(live):
    return plan.plan(live, CFG, LEGACY, "istiod-kf-1-30")


def test_plan_for_a_charm_install():
    p = make_plan(charm_install())
    assert p.default_injector["metadata"]["name"] == "istio-revision-tag-default-kubeflow"
    assert p.default_injector["metadata"]["labels"]["istio.io/rev"] == "kf-1-30"
    assert {(h["clientConfig"]["service"]["namespace"], h["clientConfig"]["service"]["name"])
            for h in p.default_injector["webhooks"]} == {("istio-system", "istiod-kf-1-30")}
    assert p.default_validator["metadata"]["name"] == "istiod-default-validator"
    assert p.ca_secret["metadata"] == {"name": "istio-ca-secret", "namespace": "istio-system"}
    assert p.ca_secret["data"] == charm_install().ca_secrets["kubeflow"]["istio-ca-secret"]
    teardown = {(k, n) for k, _, n in p.teardown}
    assert ("Deployment", "istiod") in teardown and ("MutatingWebhookConfiguration",
                                                     "istio-sidecar-injector-kubeflow") in teardown
    assert not any(k == "CustomResourceDefinition" for k, _ in teardown)
    assert ("MutatingWebhookConfiguration", "istio-revision-tag-default-kubeflow") not in teardown
    assert ("Service", plan.TAG_SERVICE) in teardown, "istioctl install's tag Service goes with the old plane"


def test_plan_is_stable_after_migration():
    """After the switch, preflight sees the retargeted webhooks; the plan must not change (second up = no-op)."""
    live = charm_install()
    first = make_plan(live)
    after = dataclasses.replace(live, mutating_webhooks=[
        first.default_injector if w["metadata"]["name"] == first.default_injector["metadata"]["name"] else w
        for w in live.mutating_webhooks], istiod_deployments=[],
        ca_secrets={**live.ca_secrets, "istio-system": live.ca_secrets["kubeflow"]})
    after = dataclasses.replace(after, istiod_deployments=[{"metadata": {"namespace": "istio-system",
                                                                         "name": "istiod-kf-1-30"}}])
    assert make_plan(after) == first


def refusal(mutate):
    live = copy.deepcopy(charm_install())
    return mutate(live) or live


@pytest.mark.parametrize("mutate,message", [
    (lambda l: dataclasses.replace(l, crds={}), "no Istio CRDs"),
    (lambda l: dataclasses.replace(l, serves_admission_policies=False, kubernetes_version="v1.29.4"),
     "Kubernetes v1.29.4. does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy"),
    (lambda l: dataclasses.replace(l, namespaces={k: v for k, v in l.namespaces.items() if k != "kubeflow"}),
     "source namespace kubeflow does not exist"),
    (lambda l: dataclasses.replace(l, istiod_deployments=[]), "no istiod Deployment in kubeflow"),
    (lambda l: dataclasses.replace(l, istiod_deployments=l.istiod_deployments + [
        {"metadata": {"namespace": "istio-system", "name": "istiod"}}]),
     "istio-system already runs istiod Deployment(s) ['istiod']"),
    (lambda l: dataclasses.replace(l, ca_secrets={**l.ca_secrets, "istio-system": {
        "istio-ca-secret": {"ca-cert.pem": "T1RIRVI="}}}), "holds a different root certificate"),
    (lambda l: dataclasses.replace(l, ca_secrets={}), "no CA Secret"),
    (lambda l: dataclasses.replace(l, precheck=(
        AnalysisMessage("IST0142", "Error", "", "The Kubernetes version v1.27.0 is not supported"),
        AnalysisMessage("IST0102", "Info", "Namespace default", "The namespace is not enabled"))),
     "`istioctl x precheck -i istio-system` found what would break an install there: Error [IST0142] () The "
     "Kubernetes version v1.27.0 is not supported; fix it first"),
    (lambda l: dataclasses.replace(l, mutating_webhooks=l.mutating_webhooks + [
        dict(copy.deepcopy(l.mutating_webhooks[1]), metadata={"name": "second-injector", "labels": {}})]),
     "namespace kubeflow-user-000 is already matched by several injectors"),
    (lambda l: dataclasses.replace(l, mutating_webhooks=[l.mutating_webhooks[0]]),
     "expected exactly one MutatingWebhookConfiguration injecting .* found none"),
])
def test_preflight_refusals(mutate, message):
    with pytest.raises(plan.PreflightRefused, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(s)", r"\(s\)").replace("()", r"\(\)")):
        make_plan(refusal(mutate))


def test_rollback_plan_of_a_migration_stopped_before_the_ca_copy():
    """Nothing in the target namespace holds a CA yet: the way back copies none; it removes the target's CA under
    both names as after any move (a no-op here), so that its plan is the same once done."""
    legacy_cfg = from_mapping({"topology": "legacy"})
    migrated_plane = render.control_plane(recorded.renders(CFG).migrated)
    p = plan.rollback_plan(charm_install(), legacy_cfg, migrated_plane, "istiod", ())
    assert p.ca_secret is None
    assert {(ns, name) for kind, ns, name in p.teardown if kind == "Secret"} == {
        ("istio-system", "cacerts"), ("istio-system", "istio-ca-secret")}
    assert ("Deployment", "istio-system", "istiod-kf-1-30") in p.teardown
    assert {(h["clientConfig"]["service"]["namespace"], h["clientConfig"]["service"]["name"])
            for h in p.default_injector["webhooks"]} == {("kubeflow", "istiod")}


LEGACY_CFG = from_mapping({"topology": "legacy"})


def _webhooks_as(live: LiveMesh, *declared: dict) -> dict:
    """live's webhook lists with each of declared in place of the live object of its name."""
    by_name = {d["metadata"]["name"]: d for d in declared}
    return {field: [by_name.get(w["metadata"]["name"], w) for w in getattr(live, field)]
            for field in ("mutating_webhooks", "validating_webhooks")}


def _on(live: LiveMesh, address: str) -> LiveMesh:
    return dataclasses.replace(live, pods=[pod(p["metadata"]["namespace"], p["metadata"]["name"],
                                               (p["metadata"]["ownerReferences"][0]["kind"],
                                                p["metadata"]["ownerReferences"][0]["name"]), address)
                                           for p in live.pods])


def moved_and_rolled_back(source_ca: bool = True) -> tuple[LiveMesh, LiveMesh]:
    """The charm's mesh after a finished move (webhooks switched, pods on the new istiod, the old plane gone, the
    CA copied; without source_ca, the source namespace's CA was lost since), and after the way back from there (the
    old plane created again by the legacy stack, so made here, beside the switched webhooks it found)."""
    charm = charm_install()
    moved_by = decide(CFG, recorded.renders(CFG), charm, TARGET)
    migrated_plane = {object_id(o) for o in moved_by.control_plane.objects}
    legacy_plane = {object_id(o) for o in render.control_plane(LEGACY)}
    ca = charm.ca_secrets["kubeflow"]
    moved = dataclasses.replace(
        _on(charm, NEW_ISTIOD), **_webhooks_as(charm, moved_by.steps.switch.injector, moved_by.steps.switch.validator),
        istiod_deployments=[{"metadata": {"namespace": "istio-system", "name": "istiod-kf-1-30"}}],
        ca_secrets={"istio-system": ca, **({"kubeflow": ca} if source_ca else {})},
        present=(charm.present - legacy_plane) | migrated_plane)
    back_by = decide(LEGACY_CFG, recorded.renders(LEGACY_CFG), moved, TARGET)
    copied_back = {object_id(o) for o in back_by.control_plane.objects if o["kind"] == "Secret"}
    back = dataclasses.replace(
        _on(charm, LEGACY_ISTIOD), **_webhooks_as(charm, back_by.steps.switch.injector, back_by.steps.switch.validator),
        ca_secrets={"kubeflow": ca}, present=charm.present | copied_back,
        made_here=frozenset((legacy_plane - {object_id(w) for w in (back_by.steps.switch.injector,
                                                                    back_by.steps.switch.validator)}) | copied_back))
    return moved, back


@pytest.mark.parametrize("source_ca", [True, False], ids=["ca-kept", "ca-copied-back"])
def test_the_way_back_is_declared_the_same_once_done(source_ca):
    """The legacy stack that rolled back proposes nothing on its next run: it finds the default path switched by
    this program (now to the legacy istiod) and declares the same steps, switch, CA and outputs as the way back did
    (a step whose triggers are unchanged does not run again). A CA Secret copied back stays declared: dropping it
    would delete the root of trust from under the legacy istiod."""
    moved, back = moved_and_rolled_back(source_ca)
    during = decide(LEGACY_CFG, recorded.renders(LEGACY_CFG), moved, TARGET)
    after = decide(LEGACY_CFG, recorded.renders(LEGACY_CFG), back, TARGET)
    assert after.steps == during.steps and after.lift_guard == during.lift_guard
    assert after.outputs == during.outputs and after.outputs["rollingBack"] is True
    assert after.control_plane.objects == during.control_plane.objects, "the plane the way back created, as created"
    assert len([o for o in during.control_plane.objects if o["kind"] == "Secret"]) == (0 if source_ca else 1)


def test_a_mesh_this_program_never_switched_is_not_rolled_back():
    assert not plan.default_path_switched(charm_install())
    assert decide(LEGACY_CFG, recorded.renders(LEGACY_CFG), charm_install(), TARGET).steps is None
