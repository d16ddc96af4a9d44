"""Planning and preflight refusals: pure functions over a recorded live mesh."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from migration import plan, render
from tests.fixtures import recorded
from migration.config import from_mapping
from tests.unit.live_mesh import charm_install

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
    (lambda l: dataclasses.replace(l, mutating_webhooks=l.mutating_webhooks + [
        dict(copy.deepcopy(l.mutating_webhooks[1]), metadata={"name": "second-injector", "labels": {}})]),
     "namespace kubeflow-user-000 is already matched by several injectors"),
    (lambda l: dataclasses.replace(l, mutating_webhooks=[l.mutating_webhooks[0]]),
     "expected exactly one MutatingWebhookConfiguration injecting .* found none"),
])
def test_preflight_refusals(mutate, message):
    with pytest.raises(plan.PreflightRefused, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(s)", r"\(s\)")):
        make_plan(refusal(mutate))


def test_rollback_plan_of_a_migration_stopped_before_the_ca_copy():
    """Nothing in the target namespace holds a CA yet: the way back copies none and removes none."""
    legacy_cfg = from_mapping({"topology": "legacy"})
    migrated_plane = render.control_plane(recorded.renders(CFG).migrated)
    p = plan.rollback_plan(charm_install(), legacy_cfg, migrated_plane, "istiod", ())
    assert p.ca_secret is None
    assert not any(kind == "Secret" for kind, _, _ in p.teardown)
    assert ("Deployment", "istio-system", "istiod-kf-1-30") in p.teardown
    assert {(h["clientConfig"]["service"]["namespace"], h["clientConfig"]["service"]["name"])
            for h in p.default_injector["webhooks"]} == {("kubeflow", "istiod")}
