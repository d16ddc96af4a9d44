"""The demo's and tests' injector oracle (demo.observe) is written independently of migration.webhooks; here the
two are checked against each other on every selector istioctl renders, so a bug in either shows."""

from __future__ import annotations

from demo.observe import selector_string, selects_unlabelled_pod
from migration.webhooks import selector_matches
from tests.fixtures import recorded
from tests.unit.live_mesh import CFG


def test_selector_syntax():
    assert selector_string(None) == ""
    assert selector_string({"matchLabels": {"a": "1"}, "matchExpressions": [
        {"key": "b", "operator": "In", "values": ["x", "y"]}, {"key": "c", "operator": "NotIn", "values": ["z"]},
        {"key": "d", "operator": "Exists"}, {"key": "e", "operator": "DoesNotExist"}]}) == \
        "a=1,b in (x,y),c notin (z),d,!e"


def test_the_two_agree_on_every_rendered_object_selector():
    renders = recorded.renders(CFG)
    hooks = [h for objects in (renders.legacy, renders.migrated) for o in objects
             if o["kind"] == "MutatingWebhookConfiguration" for h in o["webhooks"]]
    assert len(hooks) >= 4
    for hook in hooks:
        assert selects_unlabelled_pod(hook.get("objectSelector")) == selector_matches(hook.get("objectSelector"), {}), \
            hook["name"]
    assert any(selects_unlabelled_pod(h.get("objectSelector")) for h in hooks)
    assert not all(selects_unlabelled_pod(h.get("objectSelector")) for h in hooks)
