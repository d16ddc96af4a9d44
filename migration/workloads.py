"""Which pods use a control plane, which workload owns each, and how each is moved (pure).

Discovery starts from pods, not from Deployments: a pod belongs to the mesh if its istio-proxy talks to one of the
two planes (the source or the destination istiod), or if one of their injectors would inject it and it has no
proxy yet. Each such pod is grouped under its top restartable owner, found through controller ownerReferences:

- Deployment (via its ReplicaSet), StatefulSet, DaemonSet, or a ReplicaSet without a Deployment: a *workload*.
  It is restarted with `kubectl rollout restart` when nothing controls it, else its pods are *evicted* (Eviction
  API, one at a time, PodDisruptionBudgets respected): a controller that owns the workload (a Knative Revision owns
  KServe's Deployments, a Notebook its StatefulSet) owns its template and may revert a patch; a StatefulSet or
  DaemonSet with `updateStrategy: OnDelete` ignores template changes until its pods are deleted; a ReplicaSet
  cannot be rolled.
- anything else (no controller, a Job, an Argo Workflow...): an *unmanaged pod*, handled by the
  `unmanagedPods` policy (wait for it to finish, evict it, or refuse before any change).

The same rule decides, after the restarts, whether a pod still needs moving: verification and the in-use gate
before teardown are `needs_move` over every pod in the cluster.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Iterable, Mapping

from migration.live_mesh import ObjectId
from migration.webhooks import called_service, injectors, matching_hooks

INJECT = "sidecar.istio.io/inject"
INJECT_YES = ("y", "yes", "true", "on")  # what istiod's injectRequired accepts as "inject"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")
PROXY_ENV = ("PROXY_CONFIG", "CA_ADDR")


@dataclasses.dataclass(frozen=True, order=True)
class Workload:
    namespace: str
    kind: str
    name: str
    evict_because: str | None = None
    """None: `kubectl rollout restart`; otherwise why its pods are evicted instead."""

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclasses.dataclass(frozen=True)
class Moves:
    workloads: tuple[Workload, ...]
    """Every workload with a pod on either plane (stable across the move, so a re-run changes nothing)."""
    unmanaged: tuple[str, ...]
    """'namespace/pod (owner)' of every running pod on the plane being left that no workload can restart."""


def slim(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a pod (as the API returns it) that these functions read: keeps a cluster's pods small in memory."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    proxy = [{"name": c["name"], "env": [e for e in c.get("env") or [] if e["name"] in PROXY_ENV]}
             for c in spec.get("containers") or [] if c["name"] == "istio-proxy"]
    return {"metadata": {k: meta.get(k) for k in ("namespace", "name", "uid", "labels", "annotations",
                                                   "ownerReferences", "deletionTimestamp")},
            "spec": {"hostNetwork": spec.get("hostNetwork", False), "containers": proxy},
            "status": {"phase": status.get("phase"),
                       "ready": any(c["type"] == "Ready" and c["status"] == "True"
                                    for c in status.get("conditions") or []),
                       "proxyRestarts": sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or []
                                            if c["name"] == "istio-proxy")}}


def proxy_address(pod: Mapping[str, Any]) -> str | None:
    """The istiod address a pod's istio-proxy uses (PROXY_CONFIG discoveryAddress, else CA_ADDR), or None."""
    proxy = next((c for c in pod["spec"]["containers"] if c["name"] == "istio-proxy"), None)
    if proxy is None:
        return None
    env = {e["name"]: e.get("value") or "" for e in proxy.get("env") or []}
    if env.get("PROXY_CONFIG"):
        address = json.loads(env["PROXY_CONFIG"]).get("discoveryAddress")
        if address:
            return address
    return env.get("CA_ADDR")


def service_of(address: str) -> str:
    """'name.namespace' of an istiod address such as istiod.kubeflow.svc:15012."""
    return ".".join(address.split(":")[0].split(".")[:2])


def _running(pod: Mapping[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and pod["status"].get("phase") not in ("Succeeded", "Failed")


def expects_sidecar(pod: Mapping[str, Any], namespace_labels: Mapping[str, str],
                    webhooks: Iterable[Mapping[str, Any]], planes: Iterable[str]) -> bool:
    """Whether an injector of one of planes ('name.namespace' of an istiod) would give this pod a sidecar: its
    webhook selects the pod, the pod does not opt out (label, else annotation, sidecar.istio.io/inject not a yes),
    and it is not on the host network."""
    meta = pod["metadata"]
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    choice = labels.get(INJECT, annotations.get(INJECT, ""))
    if (choice and choice.lower() not in INJECT_YES) or pod["spec"].get("hostNetwork"):
        return False
    planes = set(planes)
    return any(_hook_service(hook) in planes
               for _, hook in matching_hooks(injectors(webhooks), namespace_labels, labels))


def _hook_service(hook: Mapping[str, Any]) -> str:
    """'name.namespace' of the Service a webhook calls, as service_of gives an istiod address's."""
    namespace, name = called_service(hook)
    return f"{name}.{namespace}"


def needs_move(pod: Mapping[str, Any], leaving: str, namespace_labels: Mapping[str, str],
               webhooks: Iterable[Mapping[str, Any]], planes: Iterable[str]) -> bool:
    """A running pod whose proxy uses the plane being left (leaving: an istiod address), or that has no proxy
    though an injector of planes would give it one."""
    if not _running(pod):
        return False
    address = proxy_address(pod)
    if address is not None:
        return service_of(address) == service_of(leaving)
    return expects_sidecar(pod, namespace_labels, webhooks, planes)


def _controller(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    return (ref["kind"], ref["name"]) if ref else None


def owner(pod: Mapping[str, Any], controllers: Mapping[ObjectId, Mapping[str, Any]]) -> Workload | str:
    """The pod's top restartable workload (with the way to move it), or, if it has none, a description of what
    owns it ('no controller', 'Job/x')."""
    ns = pod["metadata"]["namespace"]
    ref = _controller(pod["metadata"])
    if ref is None:
        return "no controller"
    if ref[0] not in WORKLOAD_KINDS:
        return f"{ref[0]}/{ref[1]}"
    kind, name = ref
    above = (controllers.get((kind, ns, name)) or {}).get("owner")
    if kind == "ReplicaSet" and above and above[0] == "Deployment":
        kind, name = above
        above = (controllers.get((kind, ns, name)) or {}).get("owner")
    if above:
        return Workload(ns, kind, name, f"controlled by {above[0]}/{above[1]}, which owns its template")
    if kind == "ReplicaSet":
        return Workload(ns, kind, name, "a ReplicaSet without a Deployment cannot be rolled")
    if (controllers.get((kind, ns, name)) or {}).get("strategy") == "OnDelete":  # StatefulSet or DaemonSet
        return Workload(ns, kind, name, "updateStrategy OnDelete replaces pods only when they are deleted")
    return Workload(ns, kind, name)


def moves(pods: Iterable[Mapping[str, Any]], controllers: Mapping[ObjectId, Mapping[str, Any]],
          namespaces: Mapping[str, Mapping[str, str]], webhooks: list[Mapping[str, Any]], leaving: str,
          destination: str, excluded: Iterable[ObjectId] = ()) -> Moves:
    """What the move restarts (every workload in the mesh of the two planes, excluded ones aside: the gateway moves
    with its own component) and which running pods on the plane being left no workload covers."""
    planes, excluded = {service_of(leaving), service_of(destination)}, set(excluded)
    found: set[Workload] = set()
    unmanaged = []
    for pod in pods:
        address, labels = proxy_address(pod), namespaces.get(pod["metadata"]["namespace"], {})
        if not _running(pod) or not (service_of(address) in planes if address
                                     else expects_sidecar(pod, labels, webhooks, planes)):
            continue
        top = owner(pod, controllers)
        if isinstance(top, Workload):
            if (top.kind, top.namespace, top.name) not in excluded:
                found.add(top)
        elif needs_move(pod, leaving, labels, webhooks, planes):
            unmanaged.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']} ({top})")
    return Moves(workloads=tuple(sorted(found)), unmanaged=tuple(sorted(unmanaged)))


def offenders(pods: Iterable[Mapping[str, Any]], controllers: Mapping[ObjectId, Mapping[str, Any]],
              namespaces: Mapping[str, Mapping[str, str]], webhooks: list[Mapping[str, Any]], leaving: str,
              destination: str) -> list[str]:
    """'namespace/pod (owner): why' for every running pod that still needs moving off leaving."""
    planes = {service_of(leaving), service_of(destination)}
    found = []
    for pod in pods:
        if needs_move(pod, leaving, namespaces.get(pod["metadata"]["namespace"], {}), webhooks, planes):
            top = owner(pod, controllers)
            what = top.ref + (f", evicted because {top.evict_because}" if top.evict_because else "") \
                if isinstance(top, Workload) else f"{top}, see kf-istio-migrate:unmanagedPods"
            address = proxy_address(pod)
            found.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']} ({what}): "
                         f"{'sidecar on ' + address if address else 'no sidecar yet'}")
    return found
