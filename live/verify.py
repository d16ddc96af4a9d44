"""python -m live.verify [--kubeconfig FILE --context NAME] --istiod ADDR [--gateway-namespace NS] NAMESPACE...

Exit 0 only if every pod in the namespaces has a sidecar whose discovery address is ADDR (pods that opt out with
sidecar.istio.io/inject=false excepted) and the ingress gateway pods use ADDR; otherwise print each offending pod.
The migration's verification step passes the stack's resolved cluster (--kubeconfig and --context); an operator
checking by hand may leave them out to read the cluster KUBECONFIG and its current context name.
"""

from __future__ import annotations

import argparse
import sys

from kubernetes import client, config

from migration.sidecars import offenders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", help="default: KUBECONFIG, else ~/.kube/config")
    parser.add_argument("--context", help="default: the kubeconfig's current context")
    parser.add_argument("--istiod", required=True)
    parser.add_argument("--gateway-namespace")
    parser.add_argument("namespaces", nargs="*")
    args = parser.parse_args(argv)
    api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
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
