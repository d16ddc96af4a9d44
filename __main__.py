"""kf-istio-migrate: the Istio control plane of Charmed Kubeflow, before (`legacy`) and after (`migrated`) its move.

Reads and validates config once; decides (renders, reads the live mesh, plans; read-only, refusing before any
mutation); then declares the phases in order. `migrated` moves the mesh to the target namespace; `legacy` converges
on the charm's layout, which after a migration is the way back. No resource is declared here.
"""

import pulumi

from components.control_plane import ControlPlaneArgs, IstioControlPlane
from components.crds import IstioCrds, IstioCrdsArgs
from components.gateway import GatewayArgs, IngressGateway
from components.objects import adoptable
from migration import config, plan
from migration.decide import decide
from migration.guard import Guard, purge_proof
from migration.transition import (Rollouts, RolloutsArgs, WebhookSwitch, WebhookSwitchArgs, serving_command,
                                  teardown_command, verification_command)

try:
    cfg = config.load()
    decided = decide(cfg)  # phase 0: read-only
except config.ConfigError as err:
    raise pulumi.RunError(str(err)) from None
except plan.PreflightRefused as err:
    raise pulumi.RunError(f"preflight refused: {err}") from None
migrated, steps, topology = cfg.topology == "migrated", decided.steps, decided.topology

# Phase 1: CRDs (adopted where they exist, with the labels and annotations others put on them; never deleted).
crds = IstioCrds("istio-crds", IstioCrdsArgs(crds=decided.crds, adopt=decided.adopt_crds,
                                            live_metadata=steps.crd_metadata if steps else {}))
# Phase 2: the control plane, with the CA copied in before istiod starts (one root of trust).
objects = decided.control_plane + ((steps.ca_secret,) if migrated and steps.ca_secret else ())
objects = tuple(dict(o, data=pulumi.Output.secret(o["data"])) if o["kind"] == "Secret" else o for o in objects)
control_plane = IstioControlPlane("control-plane", ControlPlaneArgs(
    namespace=cfg.control_plane_namespace, revision=cfg.control_plane_revision, objects=objects,
    create_namespace=migrated or cfg.create_source_namespace, depends_on=[crds], adopt=decided.adopt_objects,
    # adoptable: a create cut off by a crash is re-applied on resume, over its own earlier field manager.
    mark=(lambda o: adoptable(purge_proof(o))) if migrated else dict, protect=migrated))
gateway_after = [control_plane]
if steps:
    # Phase 3: once the destination istiod serves, point the default injector and validator at it (one write each).
    serving = serving_command("istiod-serving", topology.validator_webhook, cfg.rollout_timeout_seconds,
                              pulumi.ResourceOptions(depends_on=[control_plane]))
    switch = WebhookSwitch("webhook-switch", WebhookSwitchArgs(steps.default_injector, steps.default_validator),
                           opts=pulumi.ResourceOptions(depends_on=[serving]))
    gateway_after = [switch]
# Phase 4: the gateway talks to this topology's istiod (its Deployment rolls when that changes).
gateway = IngressGateway("ingress-gateway", GatewayArgs(
    namespace=cfg.gateway_namespace, istiod_address=topology.istiod_address, revision=cfg.control_plane_revision,
    proxy_image=topology.proxy_image, gateway_cr_namespace=cfg.source_namespace, adopt=decided.adopt_gateway),
    opts=pulumi.ResourceOptions(depends_on=gateway_after))
if steps:
    # Phase 4: restart every injected workload; 5: verify every sidecar; 6: remove the other control plane.
    rollouts = Rollouts("rollout", RolloutsArgs(workloads=steps.rollouts, parallelism=cfg.rollout_parallelism,
                                                strategy=cfg.rollout_strategy,
                                                timeout_seconds=cfg.rollout_timeout_seconds,
                                                istiod_address=topology.istiod_address),
                        opts=pulumi.ResourceOptions(depends_on=[switch]))
    verified = verification_command("verify-sidecars", topology.istiod_address,
                                    sorted({ns for ns, _ in steps.rollouts}), cfg.gateway_namespace,
                                    pulumi.ResourceOptions(depends_on=[rollouts, gateway]))
    teardown = teardown_command("teardown-legacy-control-plane" if migrated else "teardown-migrated-control-plane",
                                steps.teardown, pulumi.ResourceOptions(depends_on=[verified]))
    pulumi.export("restartedWorkloads", len(steps.rollouts))
    pulumi.export("removedObjects", len(steps.teardown))
if migrated:
    # Phase 7: refuse deletion of the CRDs and the new plane (e.g. by the old charm's `istioctl uninstall --purge`).
    Guard("guard", opts=pulumi.ResourceOptions(depends_on=[crds, control_plane, switch, teardown]))

pulumi.export("topology", cfg.topology)
pulumi.export("rollingBack", decided.rolling_back)
pulumi.export("controlPlaneNamespace", cfg.control_plane_namespace)
pulumi.export("revision", cfg.control_plane_revision)
pulumi.export("istiodAddress", topology.istiod_address)
pulumi.export("injectorWebhook", topology.injector_webhook)
pulumi.export("validatorWebhook", topology.validator_webhook)
