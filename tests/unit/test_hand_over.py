"""handOver=release: the transform that lets go of every resource (the real engine applies it in the integration
tier; Pulumi's mocks have no callback server for transforms)."""

from __future__ import annotations

import pulumi
import pytest

from components.guard import Guard
from components.hand_over import let_go
from migration import guard
from migration.args import ReleaseArgs
from migration.config import from_mapping
from migration.decide import decide
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
