"""handOver=helm: which release takes each object, the metadata Helm adopts it by, and the values the charts take
(the real `helm template` and `helm upgrade --install` run in tests/integration/test_hand_over_to_helm.py)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from migration import helm, render
from migration.config import from_mapping
from migration.decide import decide
from migration.marks import PURGE_SELECTOR_LABEL
from migration.plan import PreflightRefused
from tests.fixtures import recorded
from tests.unit.harness import TARGET, run_program
from tests.unit.live_mesh import charm_install

CONFIG = {"topology": "migrated", "handOver": "helm"}
CFG = from_mapping(CONFIG)
RELEASES = helm.HelmReleases(base="istio-base", istiod="istiod", namespace="istio-system")


def plane() -> list[dict]:
    return recorded.renders(CFG).migrated


def moved() -> object:
    """After the move: istiod runs in istio-system only."""
    return dataclasses.replace(charm_install(), istiod_deployments=[
        o for o in recorded.renders(from_mapping({"topology": "migrated"})).migrated if o["kind"] == "Deployment"])


def test_each_chart_takes_what_it_renders_and_nothing_istioctl_adds_outside_them():
    by_chart = {}
    for obj in plane():
        by_chart.setdefault(helm.chart_of(obj), set()).add((obj["kind"], obj["metadata"]["name"]))
    assert {name for kind, name in by_chart["base"] if kind == "CustomResourceDefinition"} == \
           {c["metadata"]["name"] for c in render.crds(plane())}
    assert {o for o in by_chart["base"] if o[0] != "CustomResourceDefinition"} == \
           {("ServiceAccount", "istio-reader-service-account"),
            ("ValidatingWebhookConfiguration", "istiod-default-validator")}
    assert ("Deployment", "istiod-kf-1-30") in by_chart["istiod"]
    assert ("ValidatingWebhookConfiguration", "istio-validator-kf-1-30-istio-system") in by_chart["istiod"]
    assert helm.chart_of({"kind": "Namespace", "metadata": {"name": "istio-system"}}) is None
    assert helm.chart_of({"kind": "MutatingWebhookConfiguration", "metadata": {
        "name": "istio-revision-tag-default-kubeflow", "labels": {"helm.sh/chart": "default-1.0.0"}}}) is None


@pytest.mark.parametrize("kind", ["CustomResourceDefinition", "ServiceAccount", "Deployment",
                                  "MutatingWebhookConfiguration", "ConfigMap"])
def test_the_release_name_replaces_istioctls_and_nothing_else_changes(kind):
    obj = next(o for o in plane() if o["kind"] == kind)
    owned = helm.owned_by_release(obj, RELEASES)
    release = RELEASES.release_of(helm.chart_of(obj))
    meta = owned["metadata"]
    assert meta["annotations"][helm.RELEASE_NAME] == release
    assert meta["annotations"][helm.RELEASE_NAMESPACE] == "istio-system"
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert meta["labels"]["app.kubernetes.io/instance"] == release
    assert meta["labels"].get("release", release) == release
    assert {k: v for k, v in meta["labels"].items() if k not in helm.RELEASE_LABELS} == \
           {k: v for k, v in obj["metadata"]["labels"].items() if k not in helm.RELEASE_LABELS}
    rest = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "spec")}  # noqa: E731
    assert rest(owned) == rest(obj)
    if kind == "Deployment":
        pod_labels = owned["spec"]["template"]["metadata"]["labels"]
        assert pod_labels["app.kubernetes.io/instance"] == "istiod"
        assert owned["spec"]["template"]["spec"] == obj["spec"]["template"]["spec"]
    else:
        assert owned.get("spec") == obj.get("spec")


def test_the_values_are_the_renders_own_with_the_validator_armed():
    values = helm.values(plane(), "kf-1-30")
    assert values["base"] == {"validationFailurePolicy": "Fail"}
    assert (values["revision"], values["global"]["istioNamespace"]) == ("kf-1-30", "istio-system")
    assert values["meshConfig"]["rootNamespace"] == "kubeflow"
    validator = next(o for o in plane() if o["kind"] == "ValidatingWebhookConfiguration")
    assert {h["failurePolicy"] for h in validator["webhooks"]} == {"Fail"}
    assert yaml.safe_load(helm.values_yaml(plane(), "kf-1-30")) == values
    with pytest.raises(ValueError, match="no ConfigMap values-kf-1-31"):
        helm.values(plane(), "kf-1-31")


def test_the_stack_declares_the_plane_as_the_releases_render_it_and_lets_go():
    """What the program declares (decide; Pulumi's mocks run no resource transform, so the release itself is
    tested in tests/unit/test_hand_over.py and for real in the integration tier)."""
    decided = decide(CFG, recorded.renders(CFG), moved(), TARGET)
    declared = [*decided.crds.crds, *decided.control_plane.objects]
    charted = [o for o in declared if helm.chart_of(o) is not None]
    assert len([o for o in charted if o["kind"] == "CustomResourceDefinition"]) == 15
    assert all(o["metadata"]["annotations"][helm.RELEASE_NAME] ==
               ("istio-base" if helm.chart_of(o) == "base" else "istiod") for o in charted)
    deployment = next(o for o in charted if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["metadata"]["labels"][PURGE_SELECTOR_LABEL] == "Pilot", \
        "the chart renders the label; without it the first helm upgrade would restart istiod"
    # The default validator is the base chart's (defaultRevision: the moved revision), so the base release owns it
    # and the switch no longer declares it; what istioctl makes outside the charts (the default tag's injector)
    # and what the migration adds stay outside both releases.
    validator = next(o for o in charted if o["metadata"]["name"] == "istiod-default-validator")
    assert helm.chart_of(validator) == "base" and decided.steps.switch.validator is None
    assert validator["webhooks"][0]["clientConfig"]["service"] == {
        "name": "istiod-kf-1-30", "namespace": "istio-system", "path": "/validate"}
    assert helm.values(plane(), "kf-1-30")[helm.DEFAULT_REVISION] == "kf-1-30"
    outside = [*[o for o in declared if helm.chart_of(o) is None], decided.default_tag.injector]
    assert {o["metadata"]["name"] for o in outside} >= {"istio-revision-tag-default", "istio-ca-secret",
                                                        "istio-system"}
    assert not [o["metadata"]["name"] for o in outside
                if helm.RELEASE_NAME in (o["metadata"].get("annotations") or {})]
    assert decided.release is not None and decided.release.keep_guard


def test_a_hand_over_to_helm_before_the_move_is_done_is_refused():
    with pytest.raises(PreflightRefused, match=r"handOver helm lets go of a finished move only, but istiod still "
                                               r"runs in kubeflow \(kubeflow/istiod\)"):
        run_program("migrated", CONFIG, charm_install())


def test_the_outputs_give_the_values_file_and_the_commands():
    outputs = decide(CFG, recorded.renders(CFG), moved(), TARGET).outputs
    assert yaml.safe_load(outputs["helmValues"]) == helm.values(plane(), "kf-1-30")
    assert outputs["helmCommands"] == [
        "pulumi stack output helmValues > istio-values.yaml", "pulumi destroy",
        "helm upgrade --install istio-base <charts>/base --namespace istio-system --values istio-values.yaml",
        "helm upgrade --install istiod <charts>/istiod --namespace istio-system --values istio-values.yaml"]
    assert "releases istio-base (chart base) and istiod (chart istiod) in istio-system" in outputs["handOver"]
    assert "helmValues" not in decide(from_mapping({"topology": "migrated"}), recorded.renders(
        from_mapping({"topology": "migrated"})), moved(), TARGET).outputs


def test_the_hand_over_ends_the_former_appliers_ownership_and_keeps_the_tools_marks():
    entry = lambda manager, operation="Apply": {"manager": manager, "operation": operation,  # noqa: E731
                                                 "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}
    meta = {"labels": {"kfistio.io/protected": "true", "app": "istiod"},
            "annotations": {"pulumi.com/patchForce": "true", "meta.helm.sh/release-name": "istiod"},
            "managedFields": [entry("pulumi-kubernetes-0c7c7193"), entry("istio-operator"),
                              entry("pilot-discovery", "Update"), entry("kube-controller-manager", "Update")]}
    left = helm.ownership_left(meta, "v1")
    assert [e["manager"] for e in left] == ["pilot-discovery", "kube-controller-manager", "kf-istio-migrate"]
    assert left[-1]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:kfistio.io/protected": {}},
                                                   "f:annotations": {"f:pulumi.com/patchForce": {}}}}
    assert helm.ownership_left({"managedFields": [entry("pilot-discovery", "Update")]}, "v1") == \
           [entry("pilot-discovery", "Update")], "nothing to end, nothing added"
