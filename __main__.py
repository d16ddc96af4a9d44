"""kf-istio-migrate: the Istio control plane of Charmed Kubeflow, before (`legacy`) and after (`migrated`) its move.

Reads and validates config once, renders Istio with the pinned istioctl, reads the live mesh (migrated), plans,
then builds the components in phase order and exports what operators check. No resource is declared here.
"""

import pulumi

from components.control_plane import ControlPlaneArgs, IstioControlPlane
from components.crds import IstioCrds, IstioCrdsArgs
from components.gateway import GatewayArgs, IngressGateway
from migration import config, discovery, plan, render
from migration.guard import Guard, protected
from migration.transition import (Rollouts, RolloutsArgs, WebhookSwitch, WebhookSwitchArgs, serving_command,
                                  teardown_command, verification_command)

try:
    cfg = config.load()
except config.ConfigError as err:
    raise pulumi.RunError(str(err)) from None
migrated = cfg.topology == "migrated"

legacy_rendered = render.render(render.legacy_input(cfg))
rendered = render.render(render.migrated_input(cfg)) if migrated else legacy_rendered
topology = render.topology(rendered, cfg.control_plane_namespace, cfg.control_plane_revision)
steps = None
if migrated:  # Phase 0, read-only: refuse before any mutation.
    try:
        steps = plan.plan(discovery.read(cfg.source_namespace, cfg.target_namespace), cfg, legacy_rendered,
                          topology.istiod_service)
    except plan.PreflightRefused as err:
        raise pulumi.RunError(f"preflight refused: {err}") from None

# Phase 1: CRDs (created, or adopted with the labels and annotations others put on them; never deleted).
crds = IstioCrds("istio-crds", IstioCrdsArgs(crds=tuple(render.crds(rendered)), adopt=migrated,
                                            live_metadata=steps.crd_metadata if steps else {}))
# Phase 2: the control plane, with the source's CA copied in before istiod starts (one root of trust).
extra = (dict(steps.ca_secret, data=pulumi.Output.secret(steps.ca_secret["data"])),) if steps else ()
control_plane = IstioControlPlane("control-plane", ControlPlaneArgs(
    namespace=cfg.control_plane_namespace, revision=cfg.control_plane_revision,
    objects=tuple(render.control_plane(rendered)) + extra,
    create_namespace=migrated or cfg.create_source_namespace, depends_on=[crds], mark=protected if migrated else dict))
gateway_after = [control_plane]
if steps:
    # Phase 3: once the new istiod serves, point the default injector and validator at it (one write each).
    serving = serving_command("new-istiod-serving", topology.validator_webhook, cfg.rollout_timeout_seconds,
                              pulumi.ResourceOptions(depends_on=[control_plane]))
    switch = WebhookSwitch("webhook-switch", WebhookSwitchArgs(steps.default_injector, steps.default_validator),
                           opts=pulumi.ResourceOptions(depends_on=[serving]))
    gateway_after = [switch]
# Phase 4 (migrated): the gateway talks to the new istiod (its Deployment rolls).
gateway = IngressGateway("ingress-gateway", GatewayArgs(
    namespace=cfg.gateway_namespace, istiod_address=topology.istiod_address, revision=cfg.control_plane_revision,
    proxy_image=topology.proxy_image, gateway_cr_namespace=cfg.source_namespace, adopt=migrated),
    opts=pulumi.ResourceOptions(depends_on=gateway_after))
if steps:
    # Phase 4: restart every injected workload; phase 5: verify every sidecar; phase 6: remove the old plane.
    rollouts = Rollouts("rollout", RolloutsArgs(workloads=steps.rollouts, parallelism=cfg.rollout_parallelism,
                                                timeout_seconds=cfg.rollout_timeout_seconds,
                                                istiod_address=topology.istiod_address),
                        opts=pulumi.ResourceOptions(depends_on=[switch]))
    verified = verification_command("verify-sidecars", topology.istiod_address,
                                    sorted({ns for ns, _ in steps.rollouts}), cfg.gateway_namespace,
                                    pulumi.ResourceOptions(depends_on=[rollouts, gateway]))
    teardown = teardown_command("teardown-legacy-control-plane", steps.teardown,
                                pulumi.ResourceOptions(depends_on=[verified]))
    # Phase 7: refuse deletion of the CRDs and the new plane (e.g. by the old charm's `istioctl uninstall --purge`).
    Guard("guard", opts=pulumi.ResourceOptions(depends_on=[crds, control_plane, switch, teardown]))
    pulumi.export("restartedWorkloads", len(steps.rollouts))
    pulumi.export("removedLegacyObjects", len(steps.teardown))

pulumi.export("topology", cfg.topology)
pulumi.export("controlPlaneNamespace", cfg.control_plane_namespace)
pulumi.export("revision", cfg.control_plane_revision)
pulumi.export("istiodAddress", topology.istiod_address)
pulumi.export("injectorWebhook", topology.injector_webhook)
pulumi.export("validatorWebhook", topology.validator_webhook)
