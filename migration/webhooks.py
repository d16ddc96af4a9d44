"""Which injector webhooks a pod would be sent to: Kubernetes label-selector semantics over webhook configurations.

Pure functions over plain objects; used to prove a stack never declares two injectors for one namespace, and by
the plan and the preflight to find the injectors a namespace meets on a live cluster. The tests' and the demo's
injector oracle (demo.observe) evaluates selectors on its own, so a bug here cannot hide itself there.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

Labels = Mapping[str, str]

DEFAULT_VALIDATOR = "istiod-default-validator"
"""The default revision's validator (unlabelled Istio CRs), made by istioctl beside the charts or by the base chart
with `defaultRevision`: never a revision's own."""


def called_service(hook: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of the Service a webhook calls; empty strings for a URL webhook."""
    svc = (hook.get("clientConfig") or {}).get("service") or {}
    return svc.get("namespace", ""), svc.get("name", "")


def selector_matches(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """metav1.LabelSelector semantics: a missing or empty selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown label selector operator {op!r}")
    return True


def matching_hooks(configs: Iterable[Mapping[str, Any]], namespace_labels: Labels,
                   pod_labels: Labels | None = None) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(configuration, webhook) of every webhook that would be called for a pod with pod_labels created in a
    namespace with namespace_labels. Pods with no labels are the common case."""
    return [(config, hook) for config in configs for hook in config.get("webhooks") or []
            if selector_matches(hook.get("namespaceSelector"), namespace_labels)
            and selector_matches(hook.get("objectSelector"), pod_labels or {})]


def matching_webhooks(configs: Iterable[Mapping[str, Any]], namespace_labels: Labels,
                      pod_labels: Labels | None = None) -> list[tuple[str, str]]:
    """(configuration name, webhook name) of each of matching_hooks."""
    return [(config["metadata"]["name"], hook["name"])
            for config, hook in matching_hooks(configs, namespace_labels, pod_labels)]


def injectors(configs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Istio sidecar injectors among MutatingWebhookConfigurations (webhooks named *sidecar-injector.istio.io)."""
    return [c for c in configs if c.get("kind", "MutatingWebhookConfiguration") == "MutatingWebhookConfiguration"
            and any(h["name"].endswith("sidecar-injector.istio.io") for h in c.get("webhooks") or [])]


def injection_services(configs: Iterable[Mapping[str, Any]], namespace_labels: Labels) -> list[tuple[str, str]]:
    """(namespace, name) of the Service called by each Istio injector webhook that a pod without labels created in a
    namespace with namespace_labels meets: exactly one entry where the namespace has one injector."""
    return [called_service(hook) for _, hook in matching_hooks(injectors(configs), namespace_labels)
            if hook["name"].endswith("sidecar-injector.istio.io")]
