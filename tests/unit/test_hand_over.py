"""handOver=release: the transform that lets go of every resource (the real engine applies it in the integration
tier; Pulumi's mocks have no callback server for transforms)."""

from __future__ import annotations

import pulumi
import pytest

from components.guard import Guard
from components.hand_over import let_go
from migration.args import ReleaseArgs


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
