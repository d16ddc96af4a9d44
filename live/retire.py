"""python -m live.retire --revision REV --namespace NS [--kubeconfig FILE --context NAME]

After the migrated stack's upgrade, once no sidecar uses the revision it replaced: fails, naming them, while any
webhook configuration other than that revision's own still calls its istiod (the cluster is ahead of the stack's
state: run `pulumi refresh`, then `pulumi up`); else annotates the revision's own objects
kfistio.io/allow-delete=true (migration.retire.selector), so the guard lets the engine delete them.
"""

from __future__ import annotations

import sys

from kubernetes import client, dynamic

from live import cli
from live.target import api_client
from migration.guard import ALLOW_DELETE_ANNOTATION
from migration.retire import KINDS, selector, still_calling


def main(argv: list[str] | None = None) -> int:
    args = cli.Retire.from_argv(argv, __doc__)
    api = api_client(args)
    admission = client.AdmissionregistrationV1Api(api)
    configurations = [api.sanitize_for_serialization(c) for c in
                      admission.list_mutating_webhook_configuration().items +
                      admission.list_validating_webhook_configuration().items]
    if calling := still_calling(configurations, args.revision, args.namespace):
        print(f"{', '.join(calling)} still call istiod-{args.revision} in {args.namespace}, whose objects this update "
              f"deletes: the cluster is ahead of the stack's state (an update cut off after its webhook switch); run "
              f"`pulumi refresh`, then `pulumi up`", file=sys.stderr)
        return 1
    resources = dynamic.DynamicClient(api).resources
    patch = {"metadata": {"annotations": {ALLOW_DELETE_ANNOTATION: "true"}}}
    let_go = 0
    for kind in KINDS:
        plural, _, group = kind.partition(".")
        resource = resources.get(api_version=f"{group}/v1" if group else "v1", name=plural)
        for item in resource.get(label_selector=selector(args.revision)).items:
            resource.patch(body=patch, name=item.metadata.name, namespace=item.metadata.namespace,
                           content_type="application/merge-patch+json")
            let_go += 1
    print(f"istiod-{args.revision}: {let_go} objects let go by the guard")
    return 0


if __name__ == "__main__":
    sys.exit(main())
