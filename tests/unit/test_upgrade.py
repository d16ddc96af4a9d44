"""The migrated stack's upgrade of the moved plane, decided purely: the plane it leaves is the revision it replaces
(retiring now, or as recorded once done), whose objects the guard lets go after the in-use gate; going back keeps the
newer CRD schemas. The recorded renders serve as the new revision (kf-1-30) beside a retiring kf-1-29."""

from __future__ import annotations

import dataclasses

from migration.decide import as_live_if_unchanged, decide, with_live_defaults
from migration.live_mesh import LiveMesh
from migration.retire import selector, still_calling
from migration.version_policy import PlaneVersion, RetiringPlane
from migration.versions import PREVIOUS_REVISION_ANNOTATION, PREVIOUS_VERSION_ANNOTATION
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.live_mesh import CFG, NEW_ISTIOD, charm_install

RETIRING = "istiod-kf-1-29.istio-system.svc:15012"


def moved(istiod_name: str) -> LiveMesh:
    """The charm's mesh after its move: no istiod in kubeflow, istiod_name in istio-system (the plane's details
    beyond its istiod do not decide anything here), every pod on kf-1-29, the CA copied, the CRDs with a schema
    of their own (a newer version's)."""
    live = charm_install()
    istiod = next(d for d in live.istiod_deployments)
    for pod in live.pods:
        pod["proxy_address"] = RETIRING
    for name, crd in live.crds.items():
        crd["spec"] = {"group": name.split(".", 1)[1], "names": {"kind": name}, "scope": "Namespaced",
                       "versions": [{"name": "v1", "served": True, "storage": True}]}
    return dataclasses.replace(live, istiod_deployments=[{
        **istiod, "metadata": {**istiod["metadata"], "name": istiod_name, "namespace": "istio-system"}}],
        ca_secrets={**live.ca_secrets, "istio-system": live.ca_secrets["kubeflow"]})


def upgrade(previous_version: str, retiring: bool = True):
    """decide for the migrated stack at kf-1-30, having replaced kf-1-29 (of previous_version): retiring, or done
    (then only istiod-kf-1-30 runs)."""
    renders = recorded.renders(CFG)
    previous = RetiringPlane("kf-1-29", PlaneVersion(previous_version))
    versions = dataclasses.replace(renders.versions, retiring=previous if retiring else None, previous=previous)
    live = moved("istiod-kf-1-29" if retiring else "istiod-kf-1-30")
    return decide(CFG, dataclasses.replace(renders, versions=versions), live, TARGET)


def test_the_upgrade_leaves_the_retiring_revision_and_records_it_on_the_new_istiod():
    decided = upgrade(recorded.PINNED)
    steps = decided.steps
    assert steps.verification.leaving == steps.rollouts.leaving == RETIRING
    assert steps.verification.revisions == ("kf-1-30", "kf-1-29")
    assert steps.switch.injector["webhooks"][0]["clientConfig"]["service"]["name"] == "istiod-kf-1-30"
    istiod = next(o for o in decided.control_plane.objects if o["kind"] == "Deployment")
    assert {k: istiod["metadata"]["annotations"][k] for k in (PREVIOUS_REVISION_ANNOTATION,
                                                              PREVIOUS_VERSION_ANNOTATION)} == {
        PREVIOUS_REVISION_ANNOTATION: "kf-1-29", PREVIOUS_VERSION_ANNOTATION: recorded.PINNED}
    assert decided.retired.revision == "kf-1-29"
    assert decided.outputs["phase"].startswith("upgrade: istiod-kf-1-30") and \
        "then istiod-kf-1-29's objects are deleted" in decided.outputs["phase"]
    assert decided.outputs["leavingIstiodAddress"] == RETIRING != NEW_ISTIOD


def test_an_upgrade_with_a_canary_sends_the_canary_to_the_next_revision_first():
    """canaryNamespaces during the upgrade: the canary calls the new revision's istiod and moves off the retiring
    one, the phase says so, and the switch declares no canary webhook (the fold removes them in its write)."""
    renders = recorded.renders(CFG)
    previous = RetiringPlane("kf-1-29", PlaneVersion(recorded.PINNED))
    versions = dataclasses.replace(renders.versions, retiring=previous, previous=previous)
    namespace = next(iter(charm_install().pods))["metadata"]["namespace"]
    decided = decide(dataclasses.replace(CFG, canary_namespaces=(namespace,)),
                     dataclasses.replace(renders, versions=versions), moved("istiod-kf-1-29"), TARGET)
    canary = decided.steps.canary
    assert canary.namespaces == (namespace,) and canary.check.istiod_address == NEW_ISTIOD
    assert canary.check.leaving == RETIRING and canary.injector == decided.steps.switch.injector["metadata"]["name"]
    assert f"the canary ({namespace}) moves and is proven, the default injector" in decided.outputs["phase"]
    assert not [h for h in decided.steps.switch.injector["webhooks"] if h["name"].startswith("canary.")]


def test_once_done_the_same_steps_are_declared_from_the_record():
    during, after = upgrade(recorded.PINNED), upgrade(recorded.PINNED, retiring=False)
    assert after.steps.verification == during.steps.verification and after.retired == during.retired
    assert after.steps.rollouts == during.steps.rollouts and after.control_plane == during.control_plane
    assert after.outputs["phase"] == during.outputs["phase"] and after.outputs["crdSchemas"] == \
        during.outputs["crdSchemas"], "a preview after the upgrade proposes no change, outputs included"


def test_going_back_keeps_the_newer_crd_schemas_as_they_stand():
    back = upgrade("1.31-dev")
    live = moved("istiod-kf-1-29").crds
    assert back.crds.as_they_stand == frozenset(live) and not back.crds.change_the_cluster
    assert all(c["spec"] == live[c["metadata"]["name"]]["spec"] for c in back.crds.crds)
    assert back.outputs["crdSchemas"].startswith("kept at 1.31-dev's")
    forward = upgrade("1.29-dev")
    assert forward.outputs["crdSchemas"] == f"updated from 1.29-dev to {recorded.PINNED}"


def test_the_retired_revision_is_selected_by_its_own_plane_labels_only():
    assert selector("kf-1-29") == \
        "istio.io/rev=kf-1-29,operator.istio.io/component=Pilot,kfistio.io/protected=true,!istio.io/tag"


def test_a_webhook_still_calling_the_retired_istiod_stops_its_deletion_unless_it_is_its_own():
    """After the switch only the retired revision's own webhooks call its istiod; the default tag's injector still
    calling it (an update cut off after its switch, resumed without refresh) is named."""
    def config(name, labels, service):
        return {"metadata": {"name": name, "labels": labels},
                "webhooks": [{"clientConfig": {"service": {"namespace": "istio-system", "name": service}}}]}
    own = {"istio.io/rev": "kf-1-29", "operator.istio.io/component": "Pilot", "kfistio.io/protected": "true"}
    configs = [config("istio-sidecar-injector-kf-1-29", own, "istiod-kf-1-29"),
               config("istio-validator-kf-1-29-istio-system", own, "istiod-kf-1-29"),
               config("istio-revision-tag-default-kubeflow", {**own, "istio.io/tag": "default"}, "istiod-kf-1-30")]
    assert still_calling(configs, "kf-1-29", "istio-system") == []
    configs[2]["webhooks"][0]["clientConfig"]["service"]["name"] = "istiod-kf-1-29"
    assert still_calling(configs, "kf-1-29", "istio-system") == ["istio-revision-tag-default-kubeflow"]


def test_a_crd_whose_schema_changes_is_declared_as_the_runs_after_it_declare_it():
    """The upgrade declares a changed CRD with the fields the API server defaulted (taken from live), as the next
    run declares it once it stands as rendered: a preview after the upgrade proposes nothing."""
    rendered = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "x.istio.io"}, "spec": {"group": "istio.io", "versions": [{"name": "v2"}]}}
    defaulted = {"conversion": {"strategy": "None"}}
    during = with_live_defaults(rendered, {"spec": {"group": "istio.io", "versions": [{"name": "v1"}], **defaulted}})
    assert during["spec"] == {**rendered["spec"], **defaulted}
    assert as_live_if_unchanged(rendered, {"spec": during["spec"]}) == during
