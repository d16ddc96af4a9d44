"""A ConfigMap and a local Command that depends on it and reads it back through kubectl."""

import pulumi
import pulumi_command as command
import pulumi_kubernetes as k8s

config_map = k8s.core.v1.ConfigMap(
    "smoke", metadata={"name": "engine-smoke", "namespace": "default"}, data={"hello": "world"})
read_back = command.local.Command(
    "read-back",
    create=pulumi.Output.concat("kubectl get configmap -n default ", config_map.metadata.name,
                                " -o jsonpath={.data.hello}"),
    opts=pulumi.ResourceOptions(depends_on=[config_map]))
pulumi.export("readBack", read_back.stdout)
