"""python -m migration.verify --istiod ADDR [--gateway-namespace NS] NAMESPACE...

Exit 0 only if every pod in the namespaces has a sidecar whose discovery address is ADDR (pods that opt out with
sidecar.istio.io/inject=false excepted) and the ingress gateway pods use ADDR; otherwise print each offending pod.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kubernetes import client, config


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--istiod", required=True)
    parser.add_argument("--gateway-namespace")
    parser.add_argument("namespaces", nargs="*")
    args = parser.parse_args(argv)
    config.load_kube_config()
    api = client.ApiClient()
    core = client.CoreV1Api(api)
    pods = [api.sanitize_for_serialization(p) for ns in args.namespaces for p in core.list_namespaced_pod(ns).items]
    if args.gateway_namespace:
        pods += [api.sanitize_for_serialization(p) for p in core.list_namespaced_pod(
            args.gateway_namespace, label_selector="istio=ingressgateway").items]
    bad = offenders(pods, args.istiod)
    for line in bad:
        print(f"not on {args.istiod}: {line}", file=sys.stderr)
    print(f"{len(pods) - len(bad)}/{len(pods)} pods use {args.istiod}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
