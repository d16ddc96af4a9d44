"""Which istiod a pod's proxy uses, and which pods are not on the expected one (pure; live.verify runs it)."""

from __future__ import annotations

import json
from typing import Any


def proxy_address(pod: dict[str, Any]) -> str | None:
    """The istiod address a pod's istio-proxy uses (PROXY_CONFIG discoveryAddress, else CA_ADDR), or None."""
    proxy = next((c for c in pod["spec"]["containers"] if c["name"] == "istio-proxy"), None)
    if proxy is None:
        return None
    env = {e["name"]: e.get("value") or "" for e in proxy.get("env") or []}
    if env.get("PROXY_CONFIG"):
        address = json.loads(env["PROXY_CONFIG"]).get("discoveryAddress")
        if address:
            return address
    return env.get("CA_ADDR")


def offenders(pods: list[dict[str, Any]], istiod: str) -> list[str]:
    """'namespace/pod: reason' for every live pod not using istiod (opted-out pods excepted)."""
    found = []
    for pod in pods:
        meta = pod["metadata"]
        address = proxy_address(pod)
        opted_out = (meta.get("labels") or {}).get("sidecar.istio.io/inject") == "false"
        if meta.get("deletionTimestamp") or (opted_out and address is None):
            continue  # terminating, or a plain pod that opted out (gateways opt out but are proxies: checked)
        if address != istiod:
            found.append(f"{meta['namespace']}/{meta['name']}: {'no sidecar' if address is None else address}")
    return found
