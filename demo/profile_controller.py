"""Kubeflow's profile controller, as far as it touches a profile namespace's labels: reproduced from its source,
because a canary must hold under it (Istio's own canary, by namespace labels, does not hold under the fork).

Upstream (kubeflow/kubeflow components/profile-controller/controllers/profile_controller.go, identical at v1.8.0,
v1.9.0 and v1.10.0: the images Charmed Kubeflow 1.8-1.10's kubeflow-profiles charm runs, unpatched):
- a namespace it creates gets `istio-injection: enabled` (hard-coded) plus the labels of its namespace-labels
  config, and the `owner` annotation;
- on every reconcile of an existing namespace whose `owner` annotation names the Profile's owner, it applies the
  config alone (`setNamespaceLabels`): a config key that is absent is added, a present key is kept whatever its
  value, a key with an empty value is removed; other labels are never touched. `istio-injection` is not in the
  charm's config (src/templates/namespace-labels.yaml.j2 of canonical/kubeflow-profiles-operator track/1.10), so a
  namespace relabelled to a revision stays so;
- it reconciles at once when an owned namespace changes (`Owns(&corev1.Namespace{})`), and writes with a full
  `Update` (client-go's field manager: the binary's name, `manager`).
Charmed Kubeflow 2.0's forked controller (canonical/kubeflow-dashboard, `setNamespaceLabelsAndServiceMesh`) forces
`istio-injection=enabled` in sidecar mode on every reconcile: a namespace relabelled to a revision gets the label
back, and Istio's selectors then give its new pods to the default injector again (never a second injector). The
canary here changes the default injector's selectors instead (migration.canary), which neither controller touches.

Nothing here runs in the migration: the fixture and the tests use it to treat the namespaces as the controller does.
"""

from __future__ import annotations

import threading
from typing import Mapping

from kubernetes import client, config, watch

OWNER_ANNOTATION = "owner"
FIELD_MANAGER = "manager"
CHARM_NAMESPACE_LABELS = {
    # canonical/kubeflow-profiles-operator track/1.10, src/templates/namespace-labels.yaml.j2, with the charm's
    # default security-policy (privileged).
    "katib-metricscollector-injection": "enabled",
    "katib.kubeflow.org/metrics-collector-injection": "enabled",
    "serving.kubeflow.org/inferenceservice": "enabled",
    "pipelines.kubeflow.org/enabled": "true",
    "app.kubernetes.io/part-of": "kubeflow-profile",
    "user.kubeflow.org/enabled": "true",
    "pod-security.kubernetes.io/enforce": "privileged",
    "namespace-node-affinity": "enabled",
}
UPSTREAM, FORK = "upstream-1.10", "ckf-2.0-sidecar"


def created_labels(config_labels: Mapping[str, str] = CHARM_NAMESPACE_LABELS) -> dict[str, str]:
    """The labels of a profile namespace the controller creates."""
    return set_namespace_labels({"istio-injection": "enabled"}, config_labels)


def set_namespace_labels(labels: Mapping[str, str], config_labels: Mapping[str, str]) -> dict[str, str]:
    """setNamespaceLabels: add absent config keys, keep present ones, remove those configured empty."""
    new = dict(labels)
    for key, value in config_labels.items():
        if not value:
            new.pop(key, None)
        elif key not in new:
            new[key] = value
    return new


def reconciled_labels(labels: Mapping[str, str], variant: str,
                      config_labels: Mapping[str, str] = CHARM_NAMESPACE_LABELS) -> dict[str, str]:
    """What one reconcile of an existing, owned profile namespace leaves on it."""
    forced = {**labels, "istio-injection": "enabled"} if variant == FORK else labels
    return set_namespace_labels(forced, config_labels)


class ProfileController(threading.Thread):
    """Reconciles every namespace carrying the `owner` annotation whenever it changes (and every namespace again
    each time its watch restarts, as the controller's resync does), for the namespaces it owns: a full Update with
    field manager `manager` when the labels differ."""

    def __init__(self, kubeconfig: str, variant: str = UPSTREAM):
        super().__init__(daemon=True)
        self.core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        self.variant, self.updates, self._halt = variant, [], threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            for event in watch.Watch().stream(self.core.list_namespace, timeout_seconds=2):
                if self._halt.is_set():
                    return
                if event["type"] != "DELETED":
                    self.reconcile(event["object"])

    def reconcile(self, ns: client.V1Namespace) -> None:
        if OWNER_ANNOTATION not in (ns.metadata.annotations or {}):
            return
        labels = dict(ns.metadata.labels or {})
        wanted = reconciled_labels(labels, self.variant)
        if wanted != labels:
            ns.metadata.labels = wanted
            try:
                self.core.replace_namespace(ns.metadata.name, ns, field_manager=FIELD_MANAGER)
                self.updates.append((ns.metadata.name, wanted))
            except client.ApiException as err:
                if err.status != 409:  # a conflict: the next event reconciles again, as the controller requeues
                    raise

    def stop(self) -> None:
        """Stopped for certain (within the watch's 2 s), so that no later test meets this controller."""
        self._halt.set()
        self.join()
