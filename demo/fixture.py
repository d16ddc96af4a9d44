"""A Kubeflow-like legacy mesh, built the way a Charmed Kubeflow cluster has it.

The control plane comes from the istio-pilot charm's own command (`istioctl install` with its flags); the gateway
from the istio-gateway charm's own manifest, applied as its `start` hook does, and the Gateway, ingress
VirtualServices and auth EnvoyFilter as istio-pilot's reconcile makes them (demo.charm_hooks); user configuration
from what Kubeflow creates: profile namespaces labelled for injection with workloads, an `ns-owner-access-istio`
AuthorizationPolicy each, VirtualServices bound to kubeflow/kubeflow-gateway, and mesh-wide config in the kubeflow
namespace.
"""

from __future__ import annotations

import dataclasses
import subprocess

import yaml

from demo import charm_hooks, kubeflow
from demo.profile_controller import OWNER_ANNOTATION, created_labels

CHARM_INSTALL = ["istioctl", "install", "-y", *charm_hooks.CHARM_FLAGS, "--set", "meshConfig.accessLogFile=/dev/stdout"]


@dataclasses.dataclass(frozen=True)
class FixtureSize:
    profiles: int = 5
    """Profile namespaces labelled istio-injection=enabled."""
    deployments: int = 3
    """Deployments per profile namespace."""
    replicas: int = 1
    """Replicas per Deployment (and StatefulSet)."""
    statefulsets: int = 0
    """StatefulSets per profile namespace (nothing owns them: rolled, one pod after the other)."""
    statefulset_replicas: int = 2
    pod_stage_ms: int | None = None
    """Simulated pod start: each kwok pod stage (scheduled, init running, init done, ready) takes between this and
    twice this many ms. None keeps kwok's `general` stages (1-5 s each)."""
    first_profile: int = 0
    """Index of the first profile namespace (to grow a fixture by more namespaces)."""
    kubeflow_shape: bool = True
    """Add demo.kubeflow's workloads (notebook, KServe predictor, pipeline step, Job, DaemonSet, StatefulSet,
    opt-outs, every injection path) to the first profile namespace and two more namespaces."""
    job_seconds: int = 60
    """How long the fixture's Job runs once Ready (kwok completes it)."""
    gateway_charm: str = "1.24"
    """The istio-gateway charm's generation (demo/charms): "1.24" (with istio-gateway-metrics) or "1.21"."""


def profile_namespaces(size: FixtureSize) -> list[str]:
    return [f"kubeflow-user-{i:03d}" for i in range(size.first_profile, size.first_profile + size.profiles)]


KWOK_POD_STAGES = ("pod-create", "pod-init-container-running", "pod-init-container-completed", "pod-ready")


def pod_timing_annotations(stage_ms: int | None) -> dict[str, str]:
    """kwok's per-pod stage delays (annotations its `general` pod stages read), for a pod template."""
    if stage_ms is None:
        return {}
    timing = {f"{stage}.stage.kwok.x-k8s.io/delay": f"{stage_ms}ms" for stage in KWOK_POD_STAGES}
    timing |= {f"{stage}.stage.kwok.x-k8s.io/jitter-delay": f"{2 * stage_ms}ms" for stage in KWOK_POD_STAGES}
    return timing | {"pod-delete.stage.kwok.x-k8s.io/delay": f"{stage_ms}ms"}


def _apply(env: dict[str, str], objects: list[dict]) -> None:
    subprocess.run(["kubectl", "apply", "--server-side", "-f", "-"], input=yaml.safe_dump_all(objects), env=env,
                   check=True, capture_output=True, text=True)


def _workload(kind: str, ns: str, name: str, replicas: int, timing: dict[str, str], image: str) -> dict:
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}, "annotations": timing},
                         "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main", "image": image}]}}}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _virtual_service(ns: str, name: str) -> dict:
    """The route Kubeflow's web apps create for a notebook, bound to the charm's gateway."""
    return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": name, "namespace": ns},
            "spec": {"gateways": ["kubeflow/kubeflow-gateway"], "hosts": ["*"],
                     "http": [{"match": [{"uri": {"prefix": f"/notebook/{ns}/{name}/"}}],
                               "route": [{"destination": {"host": f"{name}.{ns}.svc.cluster.local",
                                                          "port": {"number": 80}}}]}]}}


def user_objects(size: FixtureSize) -> list[dict]:
    """What Kubeflow users and its profile controller create (pure)."""
    objs: list[dict] = []
    for ns in profile_namespaces(size):
        objs.append({"apiVersion": "v1", "kind": "Namespace",  # as the profile controller creates it
                     "metadata": {"name": ns, "labels": created_labels(),
                                  "annotations": {OWNER_ANNOTATION: f"{ns}@example.com"}}})
        objs.append({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
                     "metadata": {"name": "ns-owner-access-istio", "namespace": ns},
                     "spec": {"rules": [{"from": [{"source": {"principals": [
                         "cluster.local/ns/kubeflow/sa/istio-ingressgateway-workload-service-account"]}}]}]}})
        timing = pod_timing_annotations(size.pod_stage_ms)
        for d in range(size.deployments):
            objs += [_workload("Deployment", ns, f"notebook-{d}", size.replicas, timing, "jupyter"),
                     _virtual_service(ns, f"notebook-{d}")]
        objs += [_workload("StatefulSet", ns, f"store-{d}", size.statefulset_replicas, timing, "store")
                 for d in range(size.statefulsets)]
    objs += [
        {"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
         "metadata": {"name": "ml-pipeline", "namespace": "kubeflow"},
         "spec": {"host": "ml-pipeline.kubeflow.svc.cluster.local", "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL"}}}},
        {"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
         "metadata": {"name": "default", "namespace": "kubeflow"}, "spec": {"mtls": {"mode": "PERMISSIVE"}}},
    ]
    return objs


def build(env: dict[str, str], size: FixtureSize) -> None:
    """Install the legacy mesh the charms' way, then the user objects; waits until every workload is Available."""
    subprocess.run(["kubectl", "create", "namespace", "kubeflow"], env=env, capture_output=True)  # the Juju model
    installed = charm_hooks.pilot_istioctl(env, CHARM_INSTALL)
    if installed.returncode:
        raise RuntimeError(f"the istio-pilot charm's istioctl install failed: {installed.stderr[-2000:]}")
    charm_hooks.gateway_start(env, size.gateway_charm, proxy_image_of(env))
    charm_hooks.pilot_reconcile(env)
    grow(env, size)


def proxy_image_of(env: dict[str, str]) -> str:
    """The gateway charm's `proxy-image`: what its Deployment runs, or before there is one, the proxyv2 image of the
    live kubeflow istiod's build."""
    get = lambda name, path: subprocess.run(  # noqa: E731
        ["kubectl", "-n", "kubeflow", "get", "deploy", name, "-o", f"jsonpath={path}", "--ignore-not-found"],
        env=env, check=True, capture_output=True, text=True).stdout
    return (get("istio-ingressgateway-workload", "{.spec.template.spec.containers[0].image}")
            or get("istiod", "{.spec.template.spec.containers[0].image}").replace("/pilot:", "/proxyv2:"))


def grow(env: dict[str, str], size: FixtureSize) -> None:
    """Add size's profile namespaces and user objects (and the Kubeflow shape, if asked) to a built mesh; waits
    until their workloads are Available."""
    _apply(env, user_objects(size))
    for ns in ["kubeflow", *profile_namespaces(size)]:
        subprocess.run(["kubectl", "-n", ns, "wait", "deployment", "--all", "--for=condition=Available",
                        "--timeout=300s"], env=env, check=True, capture_output=True, text=True)
        for d in range(size.statefulsets if ns != "kubeflow" else 0):
            subprocess.run(["kubectl", "-n", ns, "rollout", "status", f"statefulset/store-{d}", "--timeout=300s"],
                           env=env, check=True, capture_output=True, text=True)
    if size.kubeflow_shape:
        kubeflow.build(env, profile_namespaces(size)[0], pod_timing_annotations(size.pod_stage_ms), size.job_seconds)


def build_with_legacy_stack(workspace, size: FixtureSize) -> None:
    """The same mesh, but the control plane and gateway made by this program's `legacy` stack (no istioctl)."""
    subprocess.run(["kubectl", "create", "namespace", "kubeflow"], env=workspace.env, capture_output=True)  # the Juju model
    workspace.up("legacy")
    grow(workspace.env, size)
