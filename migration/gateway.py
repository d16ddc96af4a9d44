"""The ingress gateway as Charmed Kubeflow's istio-gateway charm deploys it, plus the kubeflow-gateway Gateway CR.

These are the charm's objects (its Deployment of the proxyv2 image is not an Istio chart output), so they are
rendered here from the charm's layout (pure). The gateway is not sidecar-injected: it finds istiod through CA_ADDR
and PROXY_CONFIG's discoveryAddress, which is what the migration changes (and then restarts it).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

WORKLOAD = "istio-ingressgateway-workload"
SERVICE_ACCOUNT = "istio-ingressgateway-workload-service-account"
GATEWAY_CR = "kubeflow-gateway"
POD_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
CHARM_LABELS = {"install.operator.istio.io/owning-resource": "unknown", "istio.io/rev": "default",
                "operator.istio.io/component": "IngressGateways", "release": "istio"}
"""What the istio-gateway charm's manifest puts on every object it creates (and so what `istioctl uninstall
--purge` selects them by)."""


@dataclasses.dataclass(frozen=True)
class GatewayLayout:
    """Where the gateway runs and which istiod it talks to."""

    namespace: str
    """The gateway's namespace (the Kubeflow model namespace unless moved)."""
    istiod_address: str
    """host:port of the istiod the gateway gets config and certificates from (e.g. istiod.kubeflow.svc:15012)."""
    revision: str
    """istio.io/rev label of the gateway pods."""
    proxy_image: str
    """The proxyv2 image (same hub/tag as the control plane)."""
    gateway_cr_namespace: str
    """Namespace of the kubeflow-gateway Gateway CR (the charm puts it in the model namespace)."""


def gateway_objects(args: GatewayLayout) -> list[dict[str, Any]]:
    """The charm's gateway objects for args (pure), in dependency order."""
    ns = args.namespace
    labelled = {**POD_LABELS, **CHARM_LABELS}
    meta = lambda name, labels=CHARM_LABELS, **extra: {  # noqa: E731
        "name": name, "namespace": ns, "labels": labels, **extra}
    env = [
        {"name": "CA_ADDR", "value": args.istiod_address},
        {"name": "PROXY_CONFIG", "value": json.dumps({"discoveryAddress": args.istiod_address})},
        {"name": "PILOT_CERT_PROVIDER", "value": "istiod"},
        {"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "SERVICE_ACCOUNT", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
    ]
    pod_labels = {**POD_LABELS, **CHARM_LABELS, "istio.io/rev": args.revision, "sidecar.istio.io/inject": "false",
                  "service.istio.io/canonical-name": WORKLOAD, "chart": "gateways", "heritage": "Tiller"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(SERVICE_ACCOUNT, labelled)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(f"{WORKLOAD}-sds"),
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(f"{WORKLOAD}-sds"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{WORKLOAD}-sds"},
         "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(WORKLOAD, labelled),
         "spec": {"replicas": 1, "selector": {"matchLabels": POD_LABELS},
                  "template": {"metadata": {"labels": pod_labels},
                               "spec": {"serviceAccountName": SERVICE_ACCOUNT,
                                        "terminationGracePeriodSeconds": 5,
                                        "containers": [{
                                            "name": "istio-proxy", "image": args.proxy_image,
                                            "args": ["proxy", "router", "--domain",
                                                     "$(POD_NAMESPACE).svc.cluster.local"],
                                            "ports": [{"containerPort": 8080}, {"containerPort": 8443},
                                                      {"containerPort": 15090, "name": "http-envoy-prom"}],
                                            "env": env,
                                            "volumeMounts": [{"name": "istiod-ca-cert",
                                                              "mountPath": "/var/run/secrets/istio"}]}],
                                        "volumes": [{"name": "istiod-ca-cert",
                                                     "configMap": {"name": "istio-ca-root-cert"}}]}}}},
        # The charm does not wait for a load balancer address (MetalLB or the cloud may never assign one).
        {"apiVersion": "v1", "kind": "Service",
         "metadata": meta(WORKLOAD, labelled, annotations={"pulumi.com/skipAwait": "true"}),
         "spec": {"type": "LoadBalancer", "selector": POD_LABELS,
                  "ports": [{"name": "http2", "port": 80, "targetPort": 8080},
                            {"name": "https", "port": 443, "targetPort": 8443}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("istio-gateway-metrics", labelled),
         "spec": {"selector": POD_LABELS, "ports": [{"name": "http-envoy-prom", "port": 15090}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(WORKLOAD, labelled),
         "spec": {"minAvailable": 1, "selector": {"matchLabels": POD_LABELS}}},
        {"apiVersion": "networking.istio.io/v1", "kind": "Gateway",
         "metadata": {"name": GATEWAY_CR, "namespace": args.gateway_cr_namespace},
         "spec": {"selector": {"istio": "ingressgateway"},
                  "servers": [{"port": {"number": 8080, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]}},
    ]
