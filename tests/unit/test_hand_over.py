"""handOver=release: the transform that lets go of every resource (the real engine applies it in the integration
tier; Pulumi's mocks have no callback server for transforms)."""

from __future__ import annotations

import dataclasses

import pulumi
import pytest

from components.guard import Guard
from components.hand_over import let_go
from migration import guard
from migration.args import ReleaseArgs
from migration.config import from_mapping
from migration.decide import decide
from migration.plan import PreflightRefused, tag_injector_name
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.test_helm import moved


def released(keep_guard: bool, parent) -> pulumi.ResourceOptions:
    resource = pulumi.ResourceTransformArgs(custom=True, type_="kubernetes:core/v1:ConfigMap", name="x",
                                            props={"data": {"k": "v"}},
                                            opts=pulumi.ResourceOptions(parent=parent, protect=True, depends_on=[]))
    result = let_go(ReleaseArgs(keep_guard=keep_guard))(resource)
    assert result.props == {"data": {"k": "v"}}, "a release changes options only, never what is declared"
    assert result.opts.parent is parent
    return result.opts


@pytest.mark.parametrize("keep_guard", [True, False])
def test_everything_is_retained_and_unprotected(keep_guard):
    opts = released(keep_guard, object())  # any parent but the guard
    assert opts.protect is False and opts.retain_on_delete is True


def test_the_guard_goes_with_the_stack_unless_kept():
    guard = Guard.__new__(Guard)  # its class is what the transform looks at
    assert released(True, guard).retain_on_delete is True
    assert released(False, guard).retain_on_delete is False and released(False, guard).protect is False


@pytest.mark.parametrize("hand_over", ["release", "helm"])
def test_handing_over_aims_the_guard_at_the_source_models_charms(hand_over):
    """Held, the guard refuses every DELETE of what it protects; handed over, the plane's only to the service
    accounts of the source namespace (a Juju model's charms), Istio CRDs still to anyone."""
    def deletes(config: dict) -> str:
        cfg = from_mapping(config)
        policy = decide(cfg, recorded.renders(cfg), moved(), TARGET).guard.policy
        return policy["spec"]["validations"][0]["expression"]

    held = deletes({"topology": "migrated"})
    handed = deletes({"topology": "migrated", "handOver": hand_over})
    group = f"'{guard.model_service_accounts('kubeflow')}' in request.userInfo.groups"
    assert group not in held and group in handed
    assert "oldObject.metadata.name.endsWith('.istio.io'))" in handed


def test_handing_over_gives_the_default_injector_the_default_tags_name():
    """The moved default injector is declared under the name Istio's tools give the default tag's injector in
    istio-system, with the same webhooks as the switch held it, and its former names are retired; the switch keeps
    the validator only."""
    held = decide(from_mapping({"topology": "migrated"}), recorded.renders(from_mapping({"topology": "migrated"})),
                  moved(), TARGET)
    cfg = from_mapping({"topology": "migrated", "handOver": "release"})
    handed = decide(cfg, recorded.renders(cfg), moved(), TARGET)
    assert handed.steps.switch.injector is None and handed.steps.switch.validator == held.steps.switch.validator
    tag = handed.default_tag
    assert tag.injector["metadata"]["name"] == "istio-revision-tag-default" and not tag.exists
    assert tag.injector["webhooks"] == held.steps.switch.injector["webhooks"]
    assert tag.injector["metadata"]["labels"] == {**held.steps.switch.injector["metadata"]["labels"],
                                                  "istio.io/tag": "default"}
    assert [name for _, _, name in tag.retire.objects] == ["istio-revision-tag-default-kubeflow",
                                                          "istio-sidecar-injector-kubeflow"]
    assert held.default_tag is None


def test_once_renamed_the_same_declaration_adopts_it():
    """After the hand-over's update (only the new name on the cluster), and after one cut off between the create
    and the delete (both names, the same webhooks): the same injector, adopted; anything else beside it is still
    a second injector, refused."""
    cfg = from_mapping({"topology": "migrated", "handOver": "release"})
    first = decide(cfg, recorded.renders(cfg), moved(), TARGET).default_tag
    former = next(w for w in moved().mutating_webhooks
                  if w["metadata"]["name"] == "istio-revision-tag-default-kubeflow")
    renamed = {**first.injector, "webhooks": former["webhooks"]}
    for webhooks in ([renamed], [renamed, former]):
        others = [w for w in moved().mutating_webhooks if w["metadata"]["name"] != former["metadata"]["name"]]
        live = dataclasses.replace(moved(), mutating_webhooks=others + webhooks)
        again = decide(cfg, recorded.renders(cfg), live, TARGET).default_tag
        assert again.exists and again.injector == first.injector and again.retire == first.retire
    stray = {**renamed, "metadata": {**renamed["metadata"], "name": "second-injector"}}
    live = dataclasses.replace(moved(), mutating_webhooks=moved().mutating_webhooks + [stray])
    with pytest.raises(PreflightRefused, match="already matched by several injectors"):
        decide(cfg, recorded.renders(cfg), live, TARGET)


@pytest.mark.parametrize("namespace, name", [("istio-system", "istio-revision-tag-default"),
                                             ("mesh", "istio-revision-tag-default-mesh")])
def test_the_default_tags_name_follows_the_charts_rule(namespace, name):
    assert tag_injector_name(namespace) == name


def test_a_released_stack_tells_the_flags_its_plane_was_rendered_with():
    """istioctlFlags: what the next owner's `istioctl install --revision <new>` takes, the flags the moved plane
    was rendered with; a stack that holds the mesh has no such output."""
    cfg = from_mapping({"topology": "migrated", "handOver": "release"})
    flags = decide(cfg, recorded.renders(cfg), moved(), TARGET).outputs["istioctlFlags"]
    assert ["--set", "revision=kf-1-30"] == flags[4:6] and "values.global.istioNamespace=istio-system" in flags
    assert "istioctlFlags" not in decide(from_mapping({"topology": "migrated"}),
                                         recorded.renders(from_mapping({"topology": "migrated"})), moved(),
                                         TARGET).outputs


def test_the_moved_plane_carries_the_labels_istioctl_install_gives_its_objects():
    """`istioctl uninstall --revision kf-1-30` (the next owner retiring the moved plane) prunes what carries
    istioctl install's owner labels; the plane rendered by `manifest generate` gets them here, on every object of
    it (not the target namespace, not the copied CA). Handed to Helm, the objects are the releases' instead."""
    cfg = from_mapping({"topology": "migrated", "handOver": "release"})
    objects = decide(cfg, recorded.renders(cfg), moved(), TARGET).control_plane.objects
    owner = {"operator.istio.io/managed": "Reconcile", "operator.istio.io/version": recorded.PINNED,
             "install.operator.istio.io/owning-resource-namespace": "istio-system", "istio.io/rev": "kf-1-30",
             "operator.istio.io/component": "Pilot"}
    plane = [o for o in objects if o["kind"] not in ("Namespace", "Secret")]
    assert len(plane) >= 15 and all(owner.items() <= o["metadata"]["labels"].items() for o in plane)
    assert not any("operator.istio.io/managed" in (o["metadata"].get("labels") or {})
                   for o in objects if o["kind"] in ("Namespace", "Secret"))
    helm = from_mapping({"topology": "migrated", "handOver": "helm"})
    assert not any("operator.istio.io/managed" in (o["metadata"].get("labels") or {})
                   for o in decide(helm, recorded.renders(helm), moved(), TARGET).control_plane.objects)
