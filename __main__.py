"""kf-istio-migrate: the Istio control plane of Charmed Kubeflow, before (`legacy`) and after (`migrated`) its move.

Reads and validates config once, renders Istio with the pinned istioctl, builds the components in phase order,
exports what operators check. No resource is declared here.
"""

import pulumi

from components.control_plane import ControlPlaneArgs, IstioControlPlane
from components.crds import IstioCrds, IstioCrdsArgs
from components.gateway import GatewayArgs, IngressGateway
from migration import config, render

try:
    cfg = config.load()
except config.ConfigError as err:
    raise pulumi.RunError(str(err)) from None

rendered = render.render(render.legacy_input(cfg) if cfg.topology == "legacy" else render.migrated_input(cfg))
topology = render.topology(rendered, cfg.control_plane_namespace, cfg.control_plane_revision)

crds = IstioCrds("istio-crds", IstioCrdsArgs(crds=tuple(render.crds(rendered)), adopt=cfg.topology == "migrated"))
control_plane = IstioControlPlane("control-plane", ControlPlaneArgs(
    namespace=cfg.control_plane_namespace, revision=cfg.control_plane_revision,
    objects=tuple(render.control_plane(rendered)),
    create_namespace=cfg.topology == "migrated" or cfg.create_source_namespace, depends_on=[crds]))
gateway = IngressGateway("ingress-gateway", GatewayArgs(
    namespace=cfg.gateway_namespace, istiod_address=topology.istiod_address, revision=cfg.control_plane_revision,
    proxy_image=topology.proxy_image, gateway_cr_namespace=cfg.source_namespace, adopt=cfg.topology == "migrated"),
    opts=pulumi.ResourceOptions(depends_on=[control_plane]))

pulumi.export("topology", cfg.topology)
pulumi.export("controlPlaneNamespace", cfg.control_plane_namespace)
pulumi.export("revision", cfg.control_plane_revision)
pulumi.export("istiodAddress", topology.istiod_address)
pulumi.export("injectorWebhook", topology.injector_webhook)
pulumi.export("validatorWebhook", topology.validator_webhook)
