"""Label-selector semantics used to count injectors per namespace."""

from migration.webhooks import matching_webhooks, selector_matches


def test_selector_semantics():
    sel = {"matchLabels": {"a": "1"}, "matchExpressions": [
        {"key": "b", "operator": "In", "values": ["x", "y"]}, {"key": "c", "operator": "DoesNotExist"},
        {"key": "d", "operator": "NotIn", "values": ["no"]}, {"key": "e", "operator": "Exists"}]}
    assert selector_matches(sel, {"a": "1", "b": "x", "e": ""})
    assert not selector_matches(sel, {"a": "2", "b": "x", "e": ""})
    assert not selector_matches(sel, {"a": "1", "b": "z", "e": ""})
    assert not selector_matches(sel, {"a": "1", "b": "x", "c": "", "e": ""})
    assert not selector_matches(sel, {"a": "1", "b": "x", "d": "no", "e": ""})
    assert not selector_matches(sel, {"a": "1", "b": "x"})
    assert selector_matches(None, {}) and selector_matches({}, {"any": "thing"})


def test_matching_considers_namespace_and_object_selectors():
    config = {"metadata": {"name": "inj"}, "webhooks": [
        {"name": "namespace.sidecar-injector.istio.io",
         "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
         "objectSelector": {"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn",
                                                  "values": ["false"]}]}}]}
    assert matching_webhooks([config], {"istio-injection": "enabled"}) == [
        ("inj", "namespace.sidecar-injector.istio.io")]
    assert matching_webhooks([config], {"istio-injection": "enabled"}, {"sidecar.istio.io/inject": "false"}) == []
    assert matching_webhooks([config], {}) == []
