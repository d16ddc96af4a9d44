"""Read-only observations of a live mesh: snapshots to compare before/after, and the history of the objects that
decide injection and validation, taken during `up`.

The history is the tests' and the demo's oracle for "exactly one injector per namespace", so it shares no code with
the program's planning (migration.webhooks): it evaluates label selectors by Kubernetes' rules, checks that
evaluation against the apiserver's own at the end, and needs only a small rule for the objectSelector of a plain
pod.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib
import re
import threading
import time
from typing import Any

import yaml
from kubernetes import client, config, watch


API_GROUPS = {
    "/api/v1": ("namespaces", "pods", "services", "secrets", "configmaps", "serviceaccounts"),
    "/apis/apps/v1": ("deployments", "statefulsets", "daemonsets"),
    "/apis/policy/v1": ("poddisruptionbudgets",),
    "/apis/autoscaling/v2": ("horizontalpodautoscalers",),
    "/apis/apiextensions.k8s.io/v1": ("customresourcedefinitions",),
    "/apis/admissionregistration.k8s.io/v1": ("mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                                              "validatingadmissionpolicies", "validatingadmissionpolicybindings"),
    "/apis/rbac.authorization.k8s.io/v1": ("clusterroles", "clusterrolebindings", "roles", "rolebindings"),
}
"""The built-in kinds the observations read, by resource (plural) under their API path."""
API_PATH = {plural: path for path, plurals in API_GROUPS.items() for plural in plurals}


@functools.lru_cache(maxsize=None)
def _api(kubeconfig: str) -> client.ApiClient:
    """A client per kubeconfig's content: a cluster started again under the same path has new keys and port."""
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig))


def read(env: dict[str, str], resource: str, namespace: str | None = None, name: str | None = None, *,
         label_selector: str | None = None, field_selector: str | None = None) -> dict[str, Any]:
    """An object, or a list of one resource (every namespace's without namespace), as the apiserver of env's
    KUBECONFIG serves it. Read in this process: observations are taken around every change in the tests, and a
    kubectl costs ~90 ms of CPU to start. resource is a built-in plural (API_PATH) or `plural.group/version`. A list's
    items carry their kind, as in `kubectl get -o json`."""
    plural, _, group_version = resource.partition(".")
    path = f"/apis/{group_version}" if group_version else API_PATH[plural]
    path += (f"/namespaces/{namespace}" if namespace else "") + f"/{plural}" + (f"/{name}" if name else "")
    query = [(key, value) for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector))
             if value]
    response = _api(pathlib.Path(env["KUBECONFIG"]).read_text()).call_api(path, "GET", query_params=query,
                                                header_params={"Accept": "application/json"},
                                                auth_settings=["BearerToken"], _preload_content=False,
                                                _return_http_data_only=True)
    served = json.loads(response.data)
    if name is None:
        kind = served["kind"].removesuffix("List")
        for item in served["items"]:
            item.setdefault("kind", kind)
    return served


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' order of API versions: GA before beta before alpha, then the higher number (v1 > v1beta1 >
    v1alpha3), as kubectl picks a CRD's version."""
    major, stability, minor = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version).groups()
    return {"alpha": 0, "beta": 1, None: 2}[stability], int(major), int(minor or 0)


def served_resource(crd: dict[str, Any]) -> str:
    """`plural.group/version` of a CRD at the version kubectl would read it."""
    versions = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    return f"{crd['spec']['names']['plural']}.{crd['spec']['group']}/{max(versions, key=_version_priority)}"


def snapshot(env: dict[str, str]) -> dict[str, Any]:
    """CRD UIDs and specs (as served, canonical JSON), every Istio CR's spec/labels/annotations, and each namespace's
    istio-ca-root-cert."""
    crds = {c["metadata"]["name"]: c for c in read(env, "customresourcedefinitions")["items"]
            if c["metadata"]["name"].endswith(".istio.io")}
    crs = {}
    for item in (item for crd in crds.values() for item in read(env, served_resource(crd))["items"]):
        meta = item["metadata"]
        crs[f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"] = {
            "spec": item.get("spec"), "labels": meta.get("labels") or {},
            "annotations": {k: v for k, v in (meta.get("annotations") or {}).items()
                            if k != "kubectl.kubernetes.io/last-applied-configuration"}}
    roots = {cm["metadata"]["namespace"]: hashlib.sha256(cm["data"].get("root-cert.pem", "").encode()).hexdigest()
             for cm in read(env, "configmaps", field_selector="metadata.name=istio-ca-root-cert")["items"]}
    return {"crd_uids": {n: c["metadata"]["uid"] for n, c in crds.items()}, "crs": crs, "roots": roots,
            "crd_specs": {n: json.dumps(c["spec"], sort_keys=True) for n, c in crds.items()}}


def selector_string(selector: dict[str, Any] | None) -> str:
    """A metav1.LabelSelector in the apiserver's label-selector syntax ("" selects everything)."""
    terms = [f"{k}={v}" for k, v in ((selector or {}).get("matchLabels") or {}).items()]
    for expr in (selector or {}).get("matchExpressions") or []:
        key, values = expr["key"], ",".join(expr.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[expr["operator"]])
    return ",".join(terms)


def selects_unlabelled_pod(selector: dict[str, Any] | None) -> bool:
    """Whether an objectSelector matches a pod without labels: only terms that hold for absent keys."""
    selector = selector or {}
    return not selector.get("matchLabels") and all(
        e["operator"] in ("NotIn", "DoesNotExist") for e in selector.get("matchExpressions") or [])


WATCHED_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Namespace", "Service",
                 "Deployment")
"""What decides where a new pod's sidecar is injected and whether Istio's configuration is validated: the webhook
configurations, the namespaces' labels, the Services they call, and the istiod Deployments (label app=istiod)."""

FOLLOW_SECONDS = 2
"""Each watch request ends after this long and is made again from where it stopped: a stopped history ends within
it."""


class OracleFailed(Exception):
    """The history cannot vouch for every state: a watch broke, missed a write, or the apiserver disagrees with it."""


class InjectorHistory:
    """Every state the apiserver went through, between start() and stop(), of the objects that decide injection and
    validation (WATCHED_KINDS), and in each of them: how many Istio injector webhooks it would call for a plain pod
    created in each watched namespace, which istiod Services they call, which default validators call a Service
    that does not exist, and which istiod Deployments exist.

    One watch per kind, each from the resourceVersion of its first list. The apiserver numbers every write with one
    resourceVersion sequence (etcd's revision), so the writes of all kinds, ordered by it, replay the states in the
    order they existed, at any speed of this machine. stop() checks what it returns: each watch reached a list of its
    kind taken at the end; each webhook configuration's generations were all seen, none skipped; and the apiserver
    selects, for each injector of the last state, the namespaces the history's selector evaluation does."""

    def __init__(self, kubeconfig: str, namespaces: list[str]):
        api = config.new_client_from_config(config_file=kubeconfig)
        core, admission = client.CoreV1Api(api), client.AdmissionregistrationV1Api(api)
        self.core = core
        self.listers = {
            "MutatingWebhookConfiguration": (admission.list_mutating_webhook_configuration, {}),
            "ValidatingWebhookConfiguration": (admission.list_validating_webhook_configuration, {}),
            "Namespace": (core.list_namespace, {}),
            "Service": (core.list_service_for_all_namespaces, {}),
            "Deployment": (client.AppsV1Api(api).list_deployment_for_all_namespaces, {"label_selector": "app=istiod"}),
        }
        self.namespaces = namespaces
        self._first: dict[str, tuple[int, dict[str, dict]]] = {}
        self._changes: list[Change] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._failures: list[str] = []
        self._halt = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def stopped(self) -> bool:
        return self._halt.is_set()

    def _list(self, kind: str) -> tuple[int, dict[str, dict]]:
        lister, selector = self.listers[kind]
        listed = json.loads(lister(_preload_content=False, **selector).data)
        return int(listed["metadata"]["resourceVersion"]), {_key(o): o for o in listed["items"]}

    def start(self) -> None:
        self.started = time.monotonic(), time.time()
        for kind in WATCHED_KINDS:
            self._first[kind] = self._list(kind)
            self._seen[kind] = self._first[kind][0]
            thread = threading.Thread(target=self._follow, args=(kind, self._first[kind][0]), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _follow(self, kind: str, version: int) -> None:
        lister, selector = self.listers[kind]
        try:
            while not self._halt.is_set():
                for event in watch.Watch(return_type="object").stream(
                        lister, resource_version=str(version), allow_watch_bookmarks=True,
                        timeout_seconds=FOLLOW_SECONDS, **selector):
                    obj = event["raw_object"]
                    version = int(obj["metadata"]["resourceVersion"])
                    with self._lock:
                        if event["type"] != "BOOKMARK":
                            self._changes.append(Change(version, time.monotonic(), time.time(), kind,
                                                        event["type"], obj))
                        self._seen[kind] = version
        except Exception as err:  # noqa: BLE001 - any broken watch makes the history unusable; stop() says why
            self._failures.append(f"the watch of {kind} broke at resourceVersion {version}: {err}")

    def _caught_up(self, kind: str, version: int, listed: dict[str, dict]) -> bool:
        """Whether the watch of kind has delivered everything up to a list of it at version: it has seen that
        version or a later one, or what it replayed is exactly that list (no write of kind since)."""
        with self._lock:
            if self._seen[kind] >= version:
                return True
            replayed = dict(self._first[kind][1])
            for change in self._changes:
                if change.kind == kind:
                    _apply(replayed, change)
        return _versions(replayed) == _versions(listed)

    def stop(self, timeout: float = 60) -> list[dict[str, Any]]:
        """The states from start() to now, oldest first; raises OracleFailed if they cannot be vouched for."""
        last = {kind: self._list(kind) for kind in WATCHED_KINDS}
        deadline = time.monotonic() + timeout
        while not self._failures and not all(self._caught_up(kind, *last[kind]) for kind in WATCHED_KINDS):
            if time.monotonic() > deadline:
                self._failures.append(f"the watches did not reach the lists taken at the end within {timeout}s")
            time.sleep(0.1)
        self._halt.set()
        for thread in self._threads:
            thread.join()
        if self._failures:
            raise OracleFailed("; ".join(self._failures))
        end = max(version for version, _ in last.values())
        states, objects = replay(self._first, [c for c in self._changes if c.version <= end], self.namespaces,
                                 self.started)
        self._check_generations()
        self._check_selectors(objects)
        return states

    def _check_generations(self) -> None:
        """A webhook configuration's generation grows by one with each write to its webhooks: a step of more than
        one is a write the history missed."""
        seen: dict[str, int] = {}
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for obj in self._first[kind][1].values():
                seen[obj["metadata"]["uid"]] = obj["metadata"].get("generation", 0)
        for change in sorted(self._changes, key=lambda c: c.version):
            if change.kind.endswith("WebhookConfiguration"):
                uid, generation = change.obj["metadata"]["uid"], change.obj["metadata"].get("generation", 0)
                before = seen.get(uid, 0 if change.type == "ADDED" else generation)
                if generation - before > 1:
                    raise OracleFailed(f"{change.kind} {change.obj['metadata']['name']} went from generation "
                                       f"{before} to {generation}: the history missed a write")
                seen[uid] = generation

    def _check_selectors(self, objects: dict[str, dict[str, dict]], tries: int = 5) -> None:
        """The apiserver's own evaluation of each injector's namespaceSelector against the history's, over the
        namespaces as they are now (all taken again if a namespace changed between the lists)."""
        hooks = _injector_hooks(objects["MutatingWebhookConfiguration"])
        for _ in range(tries):
            namespaces = self.core.list_namespace().items
            differ = {}
            for _, hook in hooks:
                selector = hook.get("namespaceSelector")
                served = {n.metadata.name for n in self.core.list_namespace(
                    label_selector=selector_string(selector)).items}
                evaluated = {n.metadata.name for n in namespaces if selects(selector, n.metadata.labels)}
                if served != evaluated:
                    differ[hook["name"]] = sorted(served ^ evaluated)
            if not differ:
                return
        raise OracleFailed(f"the apiserver's selection differs from the history's: {differ}")


@dataclasses.dataclass(frozen=True)
class Change:
    """One write the apiserver made to a watched object, as its watch delivered it."""
    version: int
    t: float
    wall: float
    kind: str
    type: str
    obj: dict[str, Any]


def replay(first: dict[str, tuple[int, dict[str, dict]]], changes: list[Change], namespaces: list[str],
           started: tuple[float, float]) -> tuple[list[dict[str, Any]], dict[str, dict[str, dict]]]:
    """first: each kind's list (its resourceVersion, key -> object); changes: every write delivered since, of any
    kind and in any order. Returns the state at the newest of the lists and after each later write, oldest first,
    and the objects of the last state. A write older than the newest list only completes the first state."""
    objects = {kind: dict(listed) for kind, (_, listed) in first.items()}
    complete = max(version for version, _ in first.values())
    ordered = sorted(changes, key=lambda c: c.version)
    for change in ordered:
        if change.version <= complete:
            _apply(objects[change.kind], change)
    states = [state_of(objects, namespaces, *started, version=complete, change="start")]
    for change in ordered:
        if change.version > complete:
            _apply(objects[change.kind], change)
            name = f"{change.obj['metadata'].get('namespace', '')}/{change.obj['metadata']['name']}".lstrip("/")
            states.append(state_of(objects, namespaces, change.t, change.wall, version=change.version,
                                   change=f"{change.kind} {name} {change.type}"))
    return states, objects


def state_of(objects: dict[str, dict[str, dict]], namespaces: list[str], t: float, wall: float, version: int,
             change: str) -> dict[str, Any]:
    """What a new pod would meet in each of namespaces (injectors, the Services they call), the default validators
    whose Service does not exist, and the istiod Deployments, given every watched object."""
    labels = {o["metadata"]["name"]: o["metadata"].get("labels") for o in objects["Namespace"].values()}
    targets: set[str] = set()
    injected_by: dict[str, list[str]] = {ns: [] for ns in namespaces}
    for name, hook in _injector_hooks(objects["MutatingWebhookConfiguration"]):
        for ns in namespaces:
            if ns in labels and selects(hook.get("namespaceSelector"), labels[ns]):
                injected_by[ns].append(f"{name}/{hook['name']}")
                targets.add(_target(hook))
    dangling = [f"{v['metadata']['name']}/{h['name']}" for v in objects["ValidatingWebhookConfiguration"].values()
                if v["metadata"]["name"].startswith("istiod-default-validator") for h in v.get("webhooks") or []
                if _target(h) not in objects["Service"]]
    return {"t": t, "wall": wall, "version": version, "change": change,
            "injectors": {ns: len(hooks) for ns, hooks in injected_by.items()}, "injected_by": injected_by,
            "injector_targets": sorted(targets), "dangling_validators": dangling,
            "istiods": sorted(objects["Deployment"])}


def selects(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """Whether a metav1.LabelSelector matches labels (Kubernetes' rules: NotIn and DoesNotExist hold for an absent
    key; an empty selector matches everything)."""
    labels = labels or {}
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, values, present = expr["key"], expr.get("values") or [], expr["key"] in labels
        held = {"In": present and labels.get(key) in values, "NotIn": not present or labels[key] not in values,
                "Exists": present, "DoesNotExist": not present}[expr["operator"]]
        if not held:
            return False
    return True


def _injector_hooks(configurations: dict[str, dict]) -> list[tuple[str, dict[str, Any]]]:
    """(configuration name, webhook) of each Istio injector webhook that a pod without labels meets, wherever its
    namespaceSelector matches."""
    return [(name, h) for name, c in configurations.items() for h in c.get("webhooks") or []
            if h["name"].endswith("sidecar-injector.istio.io") and selects_unlabelled_pod(h.get("objectSelector"))]


def _target(hook: dict[str, Any]) -> str:
    service = hook["clientConfig"].get("service")
    return f"{service['namespace']}/{service['name']}" if service else hook["clientConfig"].get("url", "")


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def _apply(objects: dict[str, dict], change: Change) -> None:
    if change.type == "DELETED":
        objects.pop(_key(change.obj), None)
    else:
        objects[_key(change.obj)] = change.obj


def _versions(objects: dict[str, dict]) -> dict[str, str]:
    return {key: o["metadata"]["resourceVersion"] for key, o in objects.items()}
