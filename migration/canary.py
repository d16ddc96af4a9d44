"""The canary phase, pure: which namespaces move first, the one write of the default injector that moves them, and
what the canary gate makes of their pods in the live view (live.canary runs it).

The canary is a state of the default injector itself, written in one API write: each of its webhooks leaves the
canary namespaces out (`kubernetes.io/metadata.name NotIn [...]`), and a copy of each, named `canary.<name>`, takes
exactly those namespaces (`In [...]`) and calls the destination's istiod. A namespace's name never changes and the
API server sets that label itself, so no controller that manages namespace labels (Charmed Kubeflow 2.0's profile
controller forces `istio-injection=enabled` on every reconcile) can send a canary namespace back, and there is no
label write whose two halves could leave a namespace with two injectors or none. Before the write the default
injector's own webhooks select the canary namespaces, after it only its copies do; the switch (or, on a failed
canary or the way back, the put-back) is one more write of the same object, which removes the copies (docs/design.md,
"Canary first").
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

from migration.live_mesh import ObjectId
from migration.proxies import ConnectedProxy, runs_a_proxy
from migration.webhooks import injection_services
from migration.workloads import Workload, expects_sidecar, owner, proxy_address, service_of

INJECTION = "istio-injection"
REVISION = "istio.io/rev"
NAMESPACE_NAME = "kubernetes.io/metadata.name"
"""The label the API server gives every namespace: its name (immutable, and no controller can change it)."""
COPY_PREFIX = "canary."
"""A canary webhook's name: its original's, prefixed (it still ends with sidecar-injector.istio.io, so istiod keeps
its caBundle current as it does for the others)."""


def back_to_default() -> dict[str, Any]:
    """The namespace merge patch that puts a namespace an earlier release's canary relabelled (`istio.io/rev` in
    place of `istio-injection`) back on the default injection path."""
    return {"metadata": {"labels": {INJECTION: "enabled", REVISION: None}}}


def on_default_path(labels: Mapping[str, str]) -> bool:
    return labels.get(INJECTION) == "enabled"


def injection_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels that decide which injector a namespace's pods get (what a refusal names)."""
    return {k: v for k, v in labels.items() if k in (INJECTION, REVISION)}


def canary_namespaces(injector: Mapping[str, Any]) -> tuple[str, ...]:
    """The namespaces injector's canary webhooks take (none when it holds no canary)."""
    for hook in injector.get("webhooks") or []:
        if hook["name"].startswith(COPY_PREFIX):
            for expr in (hook.get("namespaceSelector") or {}).get("matchExpressions") or []:
                if expr["key"] == NAMESPACE_NAME and expr["operator"] == "In":
                    return tuple(expr["values"])
    return ()


def _names(operator: str, namespaces: Sequence[str]) -> dict[str, Any]:
    return {"key": NAMESPACE_NAME, "operator": operator, "values": list(namespaces)}


def _narrowed(hook: Mapping[str, Any], expression: Mapping[str, Any]) -> dict[str, Any]:
    selector = dict(hook.get("namespaceSelector") or {})
    selector["matchExpressions"] = [*(selector.get("matchExpressions") or []), dict(expression)]
    return {**hook, "namespaceSelector": selector}


def without_canary(injector: Mapping[str, Any]) -> dict[str, Any]:
    """injector as it was before its canary: the copies gone, the exclusion of the canary namespaces removed from
    its own webhooks (injector itself when it holds no canary)."""
    namespaces = canary_namespaces(injector)
    if not namespaces:
        return dict(injector)
    excluded, hooks = _names("NotIn", namespaces), []
    for hook in injector["webhooks"]:
        if hook["name"].startswith(COPY_PREFIX):
            continue
        selector = dict(hook.get("namespaceSelector") or {})
        kept = [e for e in selector.get("matchExpressions") or [] if e != excluded]
        if kept:
            selector["matchExpressions"] = kept
        else:
            selector.pop("matchExpressions", None)
        hooks.append({**hook, "namespaceSelector": selector})
    return {**injector, "webhooks": hooks}


def with_canary(injector: Mapping[str, Any], namespaces: Sequence[str], service: tuple[str, str]) -> dict[str, Any]:
    """injector with a canary: pods created in namespaces go to service ((namespace, name) of the destination's
    istiod), every other namespace's where they went. One object, so one write: no instant with two or none."""
    plain = without_canary(injector)
    copies = []
    for hook in plain["webhooks"]:
        client = dict(hook.get("clientConfig") or {})
        client["service"] = {**client.get("service", {}), "namespace": service[0], "name": service[1]}
        copies.append({**_narrowed(hook, _names("In", namespaces)), "name": COPY_PREFIX + hook["name"],
                       "clientConfig": client})
    own = [_narrowed(hook, _names("NotIn", namespaces)) for hook in plain["webhooks"]]
    return {**plain, "webhooks": own + copies}


def folded(live: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """The live default injector with the switch's declared labels and webhooks (no canary webhooks), each keeping
    the caBundle istiod keeps current on the live one: the switch made in one write where a canary is to be
    removed, so that the stack's own write of the switch finds nothing left to do."""
    bundles = {h["name"]: (h.get("clientConfig") or {}).get("caBundle") for h in live.get("webhooks") or []}
    hooks = []
    for hook in declared["webhooks"]:
        client = dict(hook.get("clientConfig") or {})
        if bundles.get(hook["name"]):
            client["caBundle"] = bundles[hook["name"]]
        hooks.append({**hook, "clientConfig": client})
    metadata = {**live["metadata"], "labels": dict(declared["metadata"].get("labels") or {})}
    return {**live, "metadata": metadata, "webhooks": hooks}


@dataclasses.dataclass(frozen=True)
class Verdict:
    offenders: tuple[str, ...]
    """'namespace/pod: why' (or 'namespace ns: why') for everything that fails the gate."""
    left: tuple[str, ...]
    """'namespace/pod (owner)': running pods on the plane being left that no workload moves (the unmanagedPods policy
    applies to them after the switch)."""
    proven: int
    """Proxies of the canary namespaces connected and in sync with the new plane."""


def judge(namespaces: Sequence[str], labels: Mapping[str, Mapping[str, str]], pods: Iterable[Mapping[str, Any]],
          controllers: Mapping[ObjectId, Mapping[str, Any]], webhooks: list[Mapping[str, Any]],
          served: Iterable[ConnectedProxy], destination: str) -> Verdict:
    """The canary gate over namespaces: the new pods of each sent to the destination's istiod alone (the live
    webhooks and the namespace's live labels); every running pod with a proxy on the destination plane (pod spec),
    connected to one of its istiods and in sync with it (live view: every xDS type SYNCED or NOT_SENT), Ready, its
    istio-proxy never restarted; no pod lacking the sidecar it would be given."""
    canary, bad, left, proven = set(namespaces), [], [], 0
    name, namespace = service_of(destination).split(".")
    for ns in namespaces:
        calls = injection_services(webhooks, labels.get(ns, {}))
        if calls != [(namespace, name)]:
            sent = ", ".join(f"{n}.{s}" for s, n in calls) or "no injector"
            bad.append(f"namespace {ns}: its new pods are sent to {sent}, not to {name}.{namespace} alone")
    connected = {(p.namespace, p.pod): p for p in served}
    for pod in pods:
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if ns not in canary or meta.get("deletionTimestamp") or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        address, top = proxy_address(pod), owner(pod, controllers)
        if address is None:
            if expects_sidecar(pod, labels.get(ns, {}), webhooks, [service_of(destination)]):
                bad.append(f"{ns}/{name}: no sidecar, though the new plane's injector selects it")
            continue
        if service_of(address) != service_of(destination):
            if isinstance(top, Workload):
                bad.append(f"{ns}/{name} ({top.ref}): its proxy still names {address}")
            else:
                left.append(f"{ns}/{name} ({top})")
            continue
        why = []
        proxy = connected.get((ns, name))
        if proxy is None and runs_a_proxy(pod):
            why.append("no istiod of the new plane serves its proxy")
        elif proxy is not None and proxy.unsynced():
            why.append(f"not in sync with istiod {proxy.istiod}: {', '.join(proxy.unsynced())}")
        if not pod["status"].get("ready"):
            why.append("not Ready")
        if pod["status"].get("proxyRestarts"):
            why.append(f"istio-proxy restarted {pod['status']['proxyRestarts']} time(s)")
        if why:
            bad.append(f"{ns}/{name}: {'; '.join(why)}")
        elif proxy is not None:
            proven += 1
    return Verdict(offenders=tuple(sorted(bad)), left=tuple(sorted(left)), proven=proven)
