"""python -m live.fold --kubeconfig F --context C < DECLARED

Runs right before the switch writes the default injector (DECLARED: the injector as the switch declares it, JSON).
When the live one holds a canary's webhooks (migration.canary), it is written as declared in one write: the canary's
webhooks go in the same write that points every namespace at the switch's istiod, so no namespace has two injectors
or none at any instant; the switch's own write then finds nothing left to change. The same holds on the way back from
a canary that never reached the switch (the legacy stack's switch points every namespace at the old istiod again).
Without a canary on the live injector, nothing is written: the switch writes it.
"""

from __future__ import annotations

import json
import sys

from live import cli
from live.canary import rewrite_injector
from live.target import api_client
from migration.canary import canary_namespaces, folded


def main(argv: list[str] | None = None) -> int:
    args = cli.Fold.from_argv(argv, __doc__)
    declared = json.load(sys.stdin)
    name = declared["metadata"]["name"]
    rewrite_injector(api_client(args), name, lambda live: folded(live, declared) if canary_namespaces(live) else None,
                     "the canary's webhooks folded into the switch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
