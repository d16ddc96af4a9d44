"""The workloads a Charmed Kubeflow cluster has besides plain Deployments, shaped as their controllers make them.

- a notebook: a Notebook (kubeflow.org/v1) owning a StatefulSet and a Service, with the notebook controller's
  labels (`statefulset`, `notebook-name` on the pod template; pod port 8888, NB_PREFIX, /home/jovyan) and its
  Service (ClusterIP, port `http-<name>` 80 -> 8888);
- a KServe predictor: a Knative Revision (serving.knative.dev/v1) owning its Deployment, with Knative's labels;
  Knative reverts template changes, so its template must never be patched;
- a pipeline step: an Argo Workflow (argoproj.io/v1alpha1) owning a bare step pod, with Argo's labels;
- a running Job (kwok completes it after `job_seconds`), a DaemonSet, a StatefulSet nothing owns, Deployments that
  opt out by label and by annotation, a namespace labelled `istio.io/rev=default` and a pod labelled
  `sidecar.istio.io/inject=true` in an unlabelled namespace.

No controller of those kinds runs here: the owner objects exist (so the garbage collector keeps what they own) and
the owned objects are created as their controllers would create them. PipelineSteps plays Argo's part of a step
finishing. CRDs are minimal (schema preserved), and none is an Istio CRD.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any

INJECTED = {"istio-injection": "enabled"}
REV_NAMESPACE, PLAIN_NAMESPACE = "kubeflow-user-rev", "kubeflow-apps"
NO_SIDECAR = {"sidecar.istio.io/inject": "false"}
OWNER_KINDS = {  # kind -> (group, version, plural)
    "Notebook": ("kubeflow.org", "v1", "notebooks"),
    "Revision": ("serving.knative.dev", "v1", "revisions"),
    "Workflow": ("argoproj.io", "v1alpha1", "workflows"),
}
STEP_LABEL = "workflows.argoproj.io/workflow"


def _crd(kind: str) -> dict[str, Any]:
    group, version, plural = OWNER_KINDS[kind]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                     "versions": [{"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _owner(kind: str, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    group, version, _ = OWNER_KINDS[kind]
    return {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def owners(namespace: str) -> list[dict[str, Any]]:
    """The CRDs and the custom resources that own the controlled workloads (applied first, for their UIDs)."""
    notebook = {"template": {"spec": {"containers": [{"name": "nb-0", "image": "kubeflownotebookswg/jupyter"}]}}}
    return [_crd(kind) for kind in OWNER_KINDS] + [
        _owner("Notebook", namespace, "nb-0", notebook),
        _owner("Revision", namespace, "sklearn-iris-predictor-00001", {"containers": [{"image": "kserve/sklearn"}]}),
        _owner("Workflow", namespace, "pipeline-x", {"entrypoint": "train"}),
    ]


def _controlled_by(owner: dict[str, Any]) -> dict[str, Any]:
    return {"ownerReferences": [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                 "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]}


def _template(labels: dict[str, str], timing: dict[str, str], containers: list[dict[str, Any]],
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": labels, "annotations": {**timing, **(annotations or {})}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": containers}}


def controlled(owned_by: dict[str, dict[str, Any]], timing: dict[str, str]) -> list[dict[str, Any]]:
    """What the notebook controller, Knative and Argo create for the owners (owned_by: kind -> live owner)."""
    notebook, revision, workflow = owned_by["Notebook"], owned_by["Revision"], owned_by["Workflow"]
    ns, nb = notebook["metadata"]["namespace"], notebook["metadata"]["name"]
    jupyter = {"name": nb, "image": "kubeflownotebookswg/jupyter", "workingDir": "/home/jovyan",
               "ports": [{"containerPort": 8888, "name": "notebook-port", "protocol": "TCP"}],
               "env": [{"name": "NB_PREFIX", "value": f"/notebook/{ns}/{nb}"}]}
    rev = revision["metadata"]["name"]
    knative = {"serving.knative.dev/revision": rev, "serving.knative.dev/configuration": "sklearn-iris-predictor",
               "serving.knative.dev/service": "sklearn-iris-predictor", "app": rev}
    return [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": nb, "namespace": ns,
                                                                      **_controlled_by(notebook)},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"statefulset": nb}},
                  "template": _template({"statefulset": nb, "notebook-name": nb}, timing, [jupyter])}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": nb, "namespace": ns, **_controlled_by(notebook)},
         "spec": {"type": "ClusterIP", "selector": {"statefulset": nb},
                  "ports": [{"name": f"http-{nb}", "port": 80, "targetPort": 8888, "protocol": "TCP"}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": f"{rev}-deployment", "namespace": ns, "labels": knative, **_controlled_by(revision)},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"serving.knative.dev/revision": rev}},
                  "template": _template(knative, timing, [{"name": "kserve-container", "image": "kserve/sklearn"},
                                                          {"name": "queue-proxy", "image": "knative/queue"}])}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": f"{workflow['metadata']['name']}-train-1", "namespace": ns,
                      "labels": {STEP_LABEL: workflow["metadata"]["name"], "workflows.argoproj.io/completed": "false"},
                      "annotations": {**timing, "workflows.argoproj.io/node-name": "pipeline-x.train"},
                      **_controlled_by(workflow)},
         "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                  "containers": [{"name": "main", "image": "kfp/train"}]}},
    ]


def _deployment(namespace: str, name: str, timing: dict[str, str], labels: dict[str, str] | None = None,
                annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": _template({"app": name, **(labels or {})}, timing,
                                           [{"name": "main", "image": "app"}], annotations)}}


def uncontrolled(namespace: str, timing: dict[str, str], job_seconds: int) -> list[dict[str, Any]]:
    """Workloads nothing else controls, every injection path, and the opt-outs."""
    job_timing = {**timing, "pod-complete.stage.kwok.x-k8s.io/delay": f"{job_seconds}s",
                  "pod-complete.stage.kwok.x-k8s.io/jitter-delay": f"{job_seconds + 5}s"}
    job = _template({"app": "train"}, job_timing, [{"name": "train", "image": "trainer"}])
    job["spec"]["restartPolicy"] = "Never"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REV_NAMESPACE,
                                                               "labels": {"istio.io/rev": "default"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PLAIN_NAMESPACE}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "model-db", "namespace": namespace},
         "spec": {"replicas": 2, "serviceName": "model-db", "selector": {"matchLabels": {"app": "model-db"}},
                  "template": _template({"app": "model-db"}, timing, [{"name": "db", "image": "mysql"}])}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "log-agent", "namespace": namespace},
         "spec": {"selector": {"matchLabels": {"app": "log-agent"}},
                  "template": _template({"app": "log-agent"}, timing, [{"name": "agent", "image": "fluent-bit"}])}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": namespace},
         "spec": {"backoffLimit": 0, "template": job}},
        _deployment(namespace, "opted-out-by-label", timing, labels=NO_SIDECAR),
        _deployment(namespace, "opted-out-by-annotation", timing, annotations=NO_SIDECAR),
        _deployment(REV_NAMESPACE, "rev-tagged", timing),
        _deployment(PLAIN_NAMESPACE, "asks-for-a-sidecar", timing, labels={"sidecar.istio.io/inject": "true"}),
        _deployment(PLAIN_NAMESPACE, "no-mesh", timing),
    ]


def _kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], input=stdin, env=env, check=True, capture_output=True,
                          text=True).stdout


def build(env: dict[str, str], namespace: str, timing: dict[str, str], job_seconds: int) -> None:
    """Create the owners, then what their controllers would create, then the rest; waits until it all runs."""
    crds, crs = owners(namespace)[:len(OWNER_KINDS)], owners(namespace)[len(OWNER_KINDS):]
    _kubectl(env, "apply", "--server-side", "-f", "-", stdin=json.dumps({"kind": "List", "apiVersion": "v1",
                                                                         "items": crds}))
    _kubectl(env, "wait", "--for=condition=Established", "--timeout=60s",
             *[f"crd/{c['metadata']['name']}" for c in crds])
    live = json.loads(_kubectl(env, "apply", "--server-side", "-o", "json", "-f", "-",
                               stdin=json.dumps({"kind": "List", "apiVersion": "v1", "items": crs})))["items"]
    objects = controlled({o["kind"]: o for o in live}, timing) + uncontrolled(namespace, timing, job_seconds)
    _kubectl(env, "apply", "--server-side", "-f", "-", stdin=json.dumps({"kind": "List", "apiVersion": "v1",
                                                                         "items": objects}))
    for ns in (namespace, REV_NAMESPACE, PLAIN_NAMESPACE):
        _kubectl(env, "-n", ns, "wait", "deployment", "--all", "--for=condition=Available", "--timeout=300s")
    _kubectl(env, "-n", namespace, "rollout", "status", "statefulset/model-db", "statefulset/nb-0",
             "daemonset/log-agent", "--timeout=300s")
    _kubectl(env, "-n", namespace, "wait", "pod", "-l", STEP_LABEL, "--for=condition=Ready", "--timeout=300s")


class PipelineSteps(threading.Thread):
    """Argo's part: every running pipeline step pod finishes (its main container exits 0, Argo labels the pod
    completed) `seconds` after start."""

    def __init__(self, env: dict[str, str], seconds: float):
        super().__init__(daemon=True)
        self.env, self.seconds = env, seconds
        self.finished: dict[str, float] = {}
        """namespace/pod -> time.monotonic() when it was marked Succeeded."""
        self._halt = threading.Event()

    def run(self) -> None:
        if self._halt.wait(self.seconds):
            return
        for pod in json.loads(_kubectl(self.env, "get", "pods", "-A", "-l", STEP_LABEL, "-o", "json"))["items"]:
            meta = pod["metadata"]
            if pod["status"].get("phase") != "Running":
                continue
            where = ("-n", meta["namespace"])
            _kubectl(self.env, *where, "patch", "pod", meta["name"], "--subresource=status", "--type=merge", "-p",
                     json.dumps({"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}}))
            _kubectl(self.env, *where, "label", "pod", meta["name"], "workflows.argoproj.io/completed=true",
                     "--overwrite")
            self.finished[f"{meta['namespace']}/{meta['name']}"] = time.monotonic()

    def stop(self) -> dict[str, float]:
        self._halt.set()
        self.join()
        return self.finished
