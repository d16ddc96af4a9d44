"""The demo's and tests' injector oracle (demo.observe) is written independently of migration.webhooks; here the
two are checked against each other on every selector istioctl renders, so a bug in either shows."""

from __future__ import annotations

from demo.observe import WATCHED_KINDS, Change, replay, selector_string, selects, selects_unlabelled_pod
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


LABEL_SETS = [{}, {"istio-injection": "enabled"}, {"istio-injection": "disabled"}, {"istio.io/rev": "kf-1-30"},
              {"istio.io/rev": "default"}, {"istio-injection": "enabled", "istio.io/rev": "kf-1-30"},
              {"kubernetes.io/metadata.name": "kubeflow"}, {"istio.io/rev": "kf-1-30", "istio-injection": "disabled"}]


def test_the_two_agree_on_every_rendered_namespace_selector():
    """The history evaluates namespaceSelectors itself (its stop() also checks that against the apiserver's);
    migration.webhooks has its own evaluation: they agree on every selector istioctl renders, for every label set
    a Kubeflow namespace carries."""
    renders = recorded.renders(CFG)
    selectors = [h.get("namespaceSelector") for objects in (renders.legacy, renders.migrated) for o in objects
                 if o["kind"].endswith("WebhookConfiguration") for h in o["webhooks"]]
    assert len(selectors) >= 4
    for selector in selectors:
        for labels in LABEL_SETS:
            assert selects(selector, labels) == selector_matches(selector, labels), (selector, labels)
    assert {selects(s, {"istio-injection": "enabled"}) for s in selectors} == {True, False}


def configuration(name: str, version: int, selector: dict, service: str = "istiod", generation: int = 1) -> dict:
    return {"metadata": {"name": name, "resourceVersion": str(version), "uid": name, "generation": generation},
            "webhooks": [{"name": "namespace.sidecar-injector.istio.io", "namespaceSelector": selector,
                          "clientConfig": {"service": {"namespace": "kubeflow", "name": service}}}]}


def namespace(name: str, version: int, labels: dict) -> dict:
    return {"metadata": {"name": name, "resourceVersion": str(version), "labels": labels}}


DEFAULT_PATH = {"matchLabels": {"istio-injection": "enabled"}}
REVISION = {"matchLabels": {"istio.io/rev": "kf-1-30"}}


def first_lists(versions: dict[str, int], **objects: list[dict]) -> dict:
    listed = {kind: (versions.get(kind, 10), {}) for kind in WATCHED_KINDS}
    for kind, items in objects.items():
        listed[kind] = (versions.get(kind, 10), {o["metadata"]["name"]: o for o in items})
    return listed


def test_writes_of_every_kind_replay_in_the_apiservers_order_whatever_order_they_arrived_in():
    """A namespace moved from the default path to the revision in one write (version 13) after the revision's
    injector came (12) and before the default path's went (14): the watches of two kinds deliver them in any order,
    the replay puts them in the apiserver's, and every state has one injector."""
    first = first_lists({}, MutatingWebhookConfiguration=[configuration("default", 5, DEFAULT_PATH)],
                        Namespace=[namespace("p0", 6, {"istio-injection": "enabled"})])
    changes = [Change(14, 3.0, 3.0, "MutatingWebhookConfiguration", "DELETED",
                      configuration("default", 14, DEFAULT_PATH)),
               Change(13, 2.0, 2.0, "Namespace", "MODIFIED", namespace("p0", 13, {"istio.io/rev": "kf-1-30"})),
               Change(12, 1.0, 1.0, "MutatingWebhookConfiguration", "ADDED",
                      configuration("revision", 12, REVISION, "istiod-kf-1-30"))]
    states, objects = replay(first, changes, ["p0"], (0.0, 0.0))
    assert [s["version"] for s in states] == [10, 12, 13, 14]
    assert [s["injectors"]["p0"] for s in states] == [1, 1, 1, 1]
    assert [s["injected_by"]["p0"] for s in states] == [["default/namespace.sidecar-injector.istio.io"]] * 2 + \
        [["revision/namespace.sidecar-injector.istio.io"]] * 2
    assert states[2]["change"] == "Namespace p0 MODIFIED"
    assert set(objects["MutatingWebhookConfiguration"]) == {"revision"}


def test_a_write_between_two_kinds_lists_completes_the_first_state_and_is_not_a_state_of_its_own():
    """The namespaces were listed at 10, the webhooks at 20: a namespace write at 15 is in the first complete state
    (at 20), which is the first state judged; the state of 15 alone was never fully seen."""
    first = first_lists({"MutatingWebhookConfiguration": 20},
                        MutatingWebhookConfiguration=[configuration("default", 5, DEFAULT_PATH)],
                        Namespace=[namespace("p0", 6, {})])
    changes = [Change(15, 1.0, 1.0, "Namespace", "MODIFIED", namespace("p0", 15, {"istio-injection": "enabled"}))]
    states, _ = replay(first, changes, ["p0"], (0.0, 0.0))
    assert [(s["version"], s["injectors"]["p0"]) for s in states] == [(20, 1)]


def test_a_state_with_two_injectors_or_none_is_kept_as_it_was():
    first = first_lists({}, MutatingWebhookConfiguration=[configuration("default", 5, DEFAULT_PATH)],
                        Namespace=[namespace("p0", 6, {"istio-injection": "enabled"})])
    changes = [Change(11, 1.0, 1.0, "MutatingWebhookConfiguration", "ADDED", configuration("second", 11, {})),
               Change(12, 2.0, 2.0, "Namespace", "MODIFIED", namespace("p0", 12, {"istio-injection": "disabled"})),
               Change(13, 3.0, 3.0, "MutatingWebhookConfiguration", "DELETED", configuration("second", 13, {}))]
    states, _ = replay(first, changes, ["p0", "missing"], (0.0, 0.0))
    assert [s["injectors"]["p0"] for s in states] == [1, 2, 1, 0]
    assert {s["injectors"]["missing"] for s in states} == {0}, "a namespace that does not exist has no injector"


def test_a_default_validator_calling_a_missing_service_is_dangling():
    validator = {"metadata": {"name": "istiod-default-validator", "resourceVersion": "5"},
                 "webhooks": [{"name": "validation.istio.io",
                               "clientConfig": {"service": {"namespace": "istio-system", "name": "istiod-kf-1-30"}}}]}
    service = {"metadata": {"namespace": "istio-system", "name": "istiod-kf-1-30", "resourceVersion": "12"}}
    first = first_lists({}, ValidatingWebhookConfiguration=[validator])
    states, _ = replay(first, [Change(12, 1.0, 1.0, "Service", "ADDED", service)], [], (0.0, 0.0))
    assert [s["dangling_validators"] for s in states] == [["istiod-default-validator/validation.istio.io"], []]


def test_selects_follows_kubernetes_rules():
    assert selects(None, {}) and selects({}, {"a": "1"})
    assert selects({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {})
    assert not selects({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {})
    assert selects({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"})
    assert not selects({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
                       {"a": "1"})
