"""The canary phase, pure: which namespaces move first, the one label write that moves each, and what the canary
gate makes of their pods in the live view (live.canary runs it).

A canary namespace leaves the default injection path (`istio-injection=enabled`, whose injector still calls the
plane being left) for the new plane's revision (`istio.io/rev=<revision>`) in one write: Istio's injectors select
namespaces so that `istio-injection` wins over `istio.io/rev` (every revision webhook requires `istio-injection`
to be absent), so before the write only the default injector matches, after it only the revision's, and a
controller that puts `istio-injection=enabled` back makes the default injector match again instead of the
revision's: one injector at every instant, never two (docs/design.md, "Canary first").
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

from migration.live_mesh import ObjectId
from migration.proxies import ConnectedProxy, runs_a_proxy
from migration.workloads import Workload, expects_sidecar, owner, proxy_address, service_of

INJECTION = "istio-injection"
REVISION = "istio.io/rev"


def to_revision(revision: str) -> dict[str, Any]:
    """The namespace merge patch that moves it to revision's injector: one write, never two injectors."""
    return {"metadata": {"labels": {INJECTION: None, REVISION: revision}}}


def back_to_default() -> dict[str, Any]:
    """The namespace merge patch that puts it back on the default injection path (the way back, a failed canary)."""
    return {"metadata": {"labels": {INJECTION: "enabled", REVISION: None}}}


def on_revision(labels: Mapping[str, str], revision: str) -> bool:
    """The namespace's new pods go to revision's injector (and only to it)."""
    return labels.get(REVISION) == revision and INJECTION not in labels


def on_default_path(labels: Mapping[str, str]) -> bool:
    return labels.get(INJECTION) == "enabled"


def injection_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels that decide which injector a namespace's pods get (what a refusal or the gate names)."""
    return {k: v for k, v in labels.items() if k in (INJECTION, REVISION)}


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
          served: Iterable[ConnectedProxy], destination: str, revision: str) -> Verdict:
    """The canary gate over namespaces: each still on revision's injector; every running pod with a proxy on the
    destination plane (pod spec), connected to one of its istiods and in sync with it (live view: every xDS type
    SYNCED or NOT_SENT), Ready, its istio-proxy never restarted; no pod lacking the sidecar it would be given."""
    canary, bad, left, proven = set(namespaces), [], [], 0
    for ns in namespaces:
        if not on_revision(labels.get(ns, {}), revision):
            bad.append(f"namespace {ns}: labels {injection_labels(labels.get(ns, {})) or 'none'} instead of {REVISION}={revision} alone: its new pods "
                       f"are not injected by the new plane (did a controller put {INJECTION} back?)")
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
