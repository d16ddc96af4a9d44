"""The live mesh as the control planes see it: which proxies each istiod serves, from `istioctl proxy-status -o json`
(one istiod sync report per istiod pod, the way istioctl gathers it through port-forwards), and what the in-use gate
makes of it. Pure: live.verify runs istioctl and the pod reads."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Mapping

from migration.workloads import proxy_address, service_of


@dataclasses.dataclass(frozen=True)
class ConnectedProxy:
    istiod: str
    """The istiod (its pod, as istiod identifies itself) the proxy holds its xDS stream with."""
    namespace: str
    pod: str
    version: str
    """ISTIO_VERSION the proxy reports (its build)."""
    sync: tuple[tuple[str, str, str], ...] = ()
    """(xDS type, status, last error) per type the proxy watches, as istiod reports it: SYNCED (the proxy ACKed
    what was sent last), STALE (not yet), ERROR (it NACKed: the error it sent), NOT_SENT (nothing to send)."""

    def unsynced(self) -> list[str]:
        """'LDS ERROR: why' for each type not in sync (SYNCED and NOT_SENT are in sync)."""
        return [f"{kind} {status}" + (f": {error}" if error else "") for kind, status, error in self.sync
                if status not in ("SYNCED", "NOT_SENT")]


def parse_proxy_status(text: str) -> list[ConnectedProxy]:
    """Every proxy in istioctl proxy-status's JSON output (a stream of one DiscoveryResponse per istiod). istioctl
    logs its warnings to stdout too ("2026-12-04T13:55:01.2Z\twarn\t..."): lines outside the documents are skipped."""
    decoder, position, found = json.JSONDecoder(), 0, []
    text = text.strip()
    while position < len(text):
        if text[position] != "{":
            line_end = text.find("\n", position)
            position = len(text) if line_end < 0 else line_end + 1
            continue
        response, position = decoder.raw_decode(text, position)
        while position < len(text) and text[position].isspace():
            position += 1
        identifier = (response.get("controlPlane") or {}).get("identifier") or "{}"
        istiod = json.loads(identifier).get("ID", "")
        for resource in response.get("resources") or []:
            node = resource.get("node") or {}
            meta = node.get("metadata") or {}
            # istiod reports a proxy by its ID, "<pod>.<namespace>" (the third part of the node ID the proxy sent,
            # "<type>~<ip>~<pod>.<namespace>~<domain>", which older versions report whole).
            parts = node.get("id", "").split("~")
            pod_and_ns = parts[2] if len(parts) > 2 else parts[0]
            namespace = meta.get("NAMESPACE") or pod_and_ns.rsplit(".", 1)[-1]
            pod = pod_and_ns[:-len(namespace) - 1] if pod_and_ns.endswith(f".{namespace}") else pod_and_ns
            sync = tuple((_short_type(c.get("typeUrl", "")), c.get("configStatus", "UNKNOWN"),
                          (c.get("errorState") or {}).get("details", ""))
                         for c in resource.get("genericXdsConfigs") or [])
            found.append(ConnectedProxy(istiod, namespace, pod, meta.get("ISTIO_VERSION", ""), sync))
    return found


XDS_TYPES = {"Cluster": "CDS", "Listener": "LDS", "ClusterLoadAssignment": "EDS", "RouteConfiguration": "RDS",
             "Secret": "SDS"}


def _short_type(type_url: str) -> str:
    """CDS for type.googleapis.com/envoy.config.cluster.v3.Cluster, as istioctl proxy-status names the columns."""
    name = type_url.rsplit(".", 1)[-1]
    return XDS_TYPES.get(name, name)


def runs_a_proxy(pod: Mapping[str, Any]) -> bool:
    """A pod whose istio-proxy should hold a stream now: it has one, runs, and is not being deleted."""
    return (bool(proxy_address(pod)) and pod["status"].get("phase") == "Running"
            and not pod["metadata"].get("deletionTimestamp"))


def namespace_of(address: str) -> str:
    """The namespace of an istiod address (istiod.kubeflow.svc:15012 -> kubeflow)."""
    return service_of(address).split(".")[1]


def live_offenders(leaving: Iterable[ConnectedProxy], destination: Iterable[ConnectedProxy],
                   pods: Iterable[Mapping[str, Any]], destination_address: str) -> list[str]:
    """'namespace/pod: why' for every proxy the live view says is not done: still connected to an istiod of the
    plane being left, or a running pod whose sidecar names the destination but that no destination istiod serves
    (it cannot reach or trust the new plane)."""
    bad = [f"{p.namespace}/{p.pod}: proxy {p.version} still connected to istiod {p.istiod}" for p in leaving]
    served = {(p.namespace, p.pod) for p in destination}
    for pod in filter(runs_a_proxy, pods):
        meta, address = pod["metadata"], proxy_address(pod)
        if service_of(address) == service_of(destination_address) and (meta["namespace"], meta["name"]) not in served:
            bad.append(f"{meta['namespace']}/{meta['name']}: its proxy names {address} but no istiod of "
                       f"{namespace_of(destination_address)} serves it")
    return sorted(bad)
