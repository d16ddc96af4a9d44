"""The ingress gateway as Charmed Kubeflow's istio-gateway charm deploys it, plus the kubeflow-gateway Gateway CR.

These are the charm's objects (its Deployment of the proxyv2 image is not an Istio chart output), so they are
rendered here from the charm's layout (pure). The gateway is not sidecar-injected: it finds istiod through CA_ADDR
and PROXY_CONFIG's discoveryAddress (else the mesh config of its namespace), which is what the migration changes
(and then restarts it).

Two ways to declare them. gateway_objects: whole objects, for a gateway this program makes (the legacy stack on a
cluster without one; labelled MADE_HERE). gateway_patches: for a gateway another owner made (the istio-gateway
charm), server-side-apply patches of only the fields the move must change, so every field the charm set stays
the charm's (env order, ports, selector, replicas, image) and a second preview has nothing to say.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from migration.marks import MADE_HERE, PROTECTED_LABEL, PURGE_SELECTOR_LABEL, SKIP_AWAIT

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
        "name": name, "namespace": ns, "labels": {**labels, **MADE_HERE}, **extra}
    env = [
        *address_env(args.istiod_address),
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
         "metadata": meta(WORKLOAD, labelled, annotations=dict(SKIP_AWAIT)),
         "spec": {"type": "LoadBalancer", "selector": POD_LABELS,
                  "ports": [{"name": "http2", "port": 80, "targetPort": 8080},
                            {"name": "https", "port": 443, "targetPort": 8443}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta("istio-gateway-metrics", labelled),
         "spec": {"selector": POD_LABELS, "ports": [{"name": "http-envoy-prom", "port": 15090}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(WORKLOAD, labelled),
         "spec": {"minAvailable": 1, "selector": {"matchLabels": POD_LABELS}}},
        {"apiVersion": "networking.istio.io/v1", "kind": "Gateway",
         "metadata": {"name": GATEWAY_CR, "namespace": args.gateway_cr_namespace, "labels": dict(MADE_HERE)},
         "spec": {"selector": {"istio": "ingressgateway"},
                  "servers": [{"port": {"number": 8080, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]}},
    ]


def address_env(istiod_address: str) -> list[dict[str, str]]:
    """The gateway proxy's env entries that name its istiod (what a move changes)."""
    return [{"name": "CA_ADDR", "value": istiod_address},
            {"name": "PROXY_CONFIG", "value": json.dumps({"discoveryAddress": istiod_address})}]


def readdressed(live_env: list[dict[str, Any]], istiod_address: str) -> list[dict[str, Any]]:
    """The proxy env a patch declares: live_env's entries in their order, by name only, except the ones naming its
    istiod, set to istiod_address (appended where missing). The kubernetes provider diffs a patch's lists position
    by position against the live object, so the patch must list every entry where it is; by name only, it takes
    none of the charm's values (a `valueFrom.fieldRef` is atomic: declaring it with the apiserver's defaults would
    take it over and make the charm's next apply conflict)."""
    wanted = {e["name"]: e for e in address_env(istiod_address)}
    env = [wanted.pop(e["name"], {"name": e["name"]}) for e in live_env]
    return env + list(wanted.values())


def gateway_patches(args: GatewayLayout, present: set | frozenset, protect: bool,
                    live_env: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Server-side-apply patches for the gateway objects in present ((kind, namespace, name)) that another owner
    made: the Deployment's proxy gets args.istiod_address (readdressed live_env) and its pods the charm's component
    label back (a rollback; the migrated stack removes that label with a command, which a patch cannot do); with
    protect, every object is labelled for the guard. Objects with nothing to change get no patch."""
    patches = []
    for obj in gateway_objects(args):
        meta = obj["metadata"]
        if obj["kind"] == "Gateway" or (obj["kind"], meta["namespace"], meta["name"]) not in present:
            continue
        patch = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                 "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                              **({"labels": {PROTECTED_LABEL: "true"}} if protect else {})}}
        if obj["kind"] != "Deployment":
            # The Deployment's patch waits for its rollout; nothing else here has a readiness worth waiting for
            # (a LoadBalancer Service may never get an address: the charm does not wait for one either).
            patch["metadata"]["annotations"] = dict(SKIP_AWAIT)
        else:
            env = readdressed(live_env or [], args.istiod_address)
            template = {"spec": {"containers": [{"name": "istio-proxy", "env": env}]}}
            if not protect:
                template["metadata"] = {"labels": {PURGE_SELECTOR_LABEL: CHARM_LABELS[PURGE_SELECTOR_LABEL]}}
            patch["spec"] = {"template": template}
        if protect or obj["kind"] == "Deployment":
            patches.append(patch)
    return patches
