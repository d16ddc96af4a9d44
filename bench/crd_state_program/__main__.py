"""bench.crd_state's program: the Istio CRDs of the cluster (config `crds`: a `kubectl get crd -o yaml` list) held by
this stack in one of three ways (config `variant`), each retained on delete:

- `whole`: imported as they stand, what the migration does (components/crds.py);
- `ignore-spec`: imported with only their identity (group, names, scope) declared and `ignoreChanges: [spec]`;
- `patch`: a CustomResourceDefinitionPatch of their metadata and identity (server-side apply; no import).
"""

import pulumi
import pulumi_kubernetes as k8s
import yaml

config = pulumi.Config()
variant = config.require("variant")
with open(config.require("crds")) as listing:
    crds = yaml.safe_load(listing)["items"]

for crd in crds:
    name = crd["metadata"]["name"]
    metadata = {"name": name, **{f: crd["metadata"][f] for f in ("labels", "annotations") if crd["metadata"].get(f)}}
    identity = {key: crd["spec"][key] for key in ("group", "names", "scope")}
    if variant == "patch":
        k8s.apiextensions.v1.CustomResourceDefinitionPatch(
            name, metadata=metadata, spec=identity, opts=pulumi.ResourceOptions(retain_on_delete=True))
    elif variant in ("whole", "ignore-spec"):
        whole = variant == "whole"
        k8s.apiextensions.v1.CustomResourceDefinition(
            name, metadata=metadata, spec=crd["spec"] if whole else {**identity, "versions": []},
            opts=pulumi.ResourceOptions(retain_on_delete=True, import_=name,
                                        ignore_changes=None if whole else ["spec"]))
    else:
        raise ValueError(f"config variant: {variant!r} is not whole, ignore-spec or patch")
