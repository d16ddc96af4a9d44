"""P3's yardstick: a plain Pulumi program of `count` ConfigMaps (config), previewed against the same cluster as the
migration, so `pulumi preview --stack migrated` can be read as a ratio to the engine's and the provider's own cost
for as many resources (bench.runs.preview_run)."""

import pulumi
import pulumi_kubernetes as k8s

for i in range(pulumi.Config().require_int("count")):
    k8s.core.v1.ConfigMap(f"plain-{i}", metadata={"name": f"plain-{i}", "namespace": "default"}, data={"i": str(i)})
