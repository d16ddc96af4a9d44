"""python -m live.disown [--kubeconfig FILE --context NAME] REF...

Ends the former appliers' ownership of fields (migration.helm.FORMER_APPLIERS) on each REF
(`apiVersion/kind/namespace/name`, namespace empty for a cluster-scoped object): their managedFields entries are
removed, and this tool's marks get an entry of their own (migration.helm.ownership_left); nothing else of the object
changes. Each write is conditional on the resourceVersion just read (a JSON
patch `test`), and read again if someone wrote in between, so an entry another manager adds meanwhile is never
lost. Prints how many entries it removed from each object.
"""

from __future__ import annotations

import sys

from kubernetes import client, dynamic

from live import cli
from live.target import api_client
from migration.helm import ownership_left

ATTEMPTS = 10


def disown(api: dynamic.DynamicClient, ref: str) -> int:
    """Remove the former appliers' entries from ref's managedFields; returns how many were removed."""
    api_version, kind, namespace, name = ref.rsplit("/", 3)
    resource = api.resources.get(api_version=api_version, kind=kind)
    for _ in range(ATTEMPTS):
        meta = resource.get(name=name, namespace=namespace or None).to_dict()["metadata"]
        entries = meta.get("managedFields") or []
        kept = ownership_left(meta, api_version)
        removed = sum(1 for e in entries if e not in kept)
        if not removed:
            return 0
        patch = [{"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
                 {"op": "replace", "path": "/metadata/managedFields", "value": kept}]
        try:
            resource.patch(body=patch, name=name, namespace=namespace or None,
                           content_type="application/json-patch+json")
            return removed
        except client.ApiException as err:
            if err.status not in (409, 422):  # the test failed: written in between
                raise
    raise RuntimeError(f"{ref} kept changing; its field managers were not updated after {ATTEMPTS} attempts")


def main(argv: list[str] | None = None) -> int:
    args = cli.Disown.from_argv(argv, __doc__)
    api = dynamic.DynamicClient(api_client(args))
    for ref in args.refs:
        print(f"{ref}: {disown(api, ref)} field manager entries removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
