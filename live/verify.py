"""python -m live.verify [--kubeconfig FILE --context NAME] --istiod ADDR --leaving ADDR

The in-use gate: exit 0 only if no running pod anywhere in the cluster still needs moving off the plane at
--leaving (migration.workloads.needs_move: its proxy uses that istiod, or it has no proxy though an injector of
either plane would give it one). Otherwise print each such pod with its owner and why it was not moved.
The migration passes the stack's resolved cluster (--kubeconfig and --context); an operator checking by hand may
leave them out to read KUBECONFIG and its current context.
"""

from __future__ import annotations

import argparse
import sys

from kubernetes import config

from live.discovery import pod_view
from migration.workloads import offenders, proxy_address, service_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", help="default: KUBECONFIG, else ~/.kube/config")
    parser.add_argument("--context", help="default: the kubeconfig's current context")
    parser.add_argument("--istiod", required=True, help="the destination istiod, e.g. istiod-kf-1-30.istio-system.svc:15012")
    parser.add_argument("--leaving", required=True, help="the istiod being left, e.g. istiod.kubeflow.svc:15012")
    args = parser.parse_args(argv)
    view = pod_view(config.new_client_from_config(config_file=args.kubeconfig, context=args.context))
    bad = offenders(**view, leaving=args.leaving, destination=args.istiod)
    for line in bad:
        print(f"still needs moving off {args.leaving}: {line}", file=sys.stderr)
    moved = sum(1 for p in view["pods"] if service_of(proxy_address(p) or "") == service_of(args.istiod))
    print(f"{moved} proxies use {args.istiod}; {len(bad)} pod(s) still need moving off {args.leaving}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
