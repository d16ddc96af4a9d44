"""The embedded cluster behaves like a cluster: Deployments become Available, namespaces delete, data survives."""

from __future__ import annotations

import json
import time

import pytest

from devcluster.cluster import Cluster, ClusterError
from tests.support import poll

DEPLOYMENT = """
apiVersion: v1
kind: Namespace
metadata: {name: smoke}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: smoke}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers: [{name: web, image: nginx}]
"""


def test_deployment_available_then_namespace_deleted(kubectl):
    kubectl("apply", "-f", "-", input=DEPLOYMENT)
    kubectl("-n", "smoke", "wait", "deployment/web", "--for=condition=Available", "--timeout=120s")
    pods = json.loads(kubectl("-n", "smoke", "get", "pods", "-o", "json").stdout)["items"]
    assert len(pods) == 3
    assert {p["status"]["phase"] for p in pods} == {"Running"}
    assert all(p["spec"]["nodeName"].startswith("kwok-node-") for p in pods), "the scheduler placed every pod"
    assert all(p["status"].get("podIP", "").startswith("198.19.") for p in pods), "kwok gave pod IPs from the CIDR"

    # A rollout makes a new ReplicaSet and the old one is scaled down: the controllers really run.
    kubectl("-n", "smoke", "rollout", "restart", "deployment/web")
    kubectl("-n", "smoke", "rollout", "status", "deployment/web", "--timeout=120s")
    rs = json.loads(kubectl("-n", "smoke", "get", "replicasets", "-o", "json").stdout)["items"]
    assert sorted(r["status"].get("replicas", 0) for r in rs) == [0, 3]

    kubectl("delete", "namespace", "smoke", "--wait=false")
    poll(lambda: kubectl("get", "namespace", "smoke", check=False).returncode != 0, 120,
             "namespace smoke to be deleted (namespace controller and garbage collection)")


STATEFULSET = """
apiVersion: v1
kind: Namespace
metadata: {name: smoke-sts}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: smoke-sts}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: db, image: db}]
"""


def test_a_deleted_statefulset_pod_is_replaced_once(kubectl):
    """A terminating pod is removed (devcluster.pod_reaper, in the kubelet's place) by UID: the StatefulSet's new
    pod of the same name is left alone, not deleted by a late delete meant for its predecessor (kwok's own stage
    deletes by name; under load that kept recreating pod 0 of every StatefulSet)."""
    kubectl("apply", "-f", "-", input=STATEFULSET)
    kubectl("-n", "smoke-sts", "rollout", "status", "statefulset/db", "--timeout=120s")
    uid = lambda: kubectl("-n", "smoke-sts", "get", "pod", "db-0", "-o", "jsonpath={.metadata.uid}",  # noqa: E731
                          check=False).stdout
    for _ in range(3):
        first = uid()
        kubectl("-n", "smoke-sts", "delete", "pod", "db-0", "--wait=false")
        poll(lambda: uid() not in ("", first), 60, "db-0 to be removed and created again")
        kubectl("-n", "smoke-sts", "wait", "pod/db-0", "--for=condition=Ready", "--timeout=60s")
        second = uid()
        time.sleep(3)  # several times the pod's delete delay (1 s)
        assert uid() == second, "the replacement was deleted too"
    kubectl("delete", "namespace", "smoke-sts", "--wait=false")


def test_the_rollout_watch_follows_restarts_and_deletes(cluster, kubectl):
    """live.watch on the real apiserver: a restart's new generation arrives and rolls out (kubectl's rules), a
    delete is seen, and one watch per kind covers two namespaces."""
    from kubernetes import config

    from live.rollout import restart
    from live.watch import WorkloadWatch
    from migration.rollout_status import rolled_out
    from migration.workloads import Workload

    for ns in ("watch-a", "watch-b"):
        kubectl("apply", "-f", "-", input=DEPLOYMENT.replace("smoke", ns))
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig), context=cluster.context)
    watched = WorkloadWatch(api, {"watch-a", "watch-b"}, {"Deployment"})
    assert {"watch-a/Deployment/web", "watch-b/Deployment/web"} <= set(watched.snapshot())
    before = watched.snapshot()["watch-a/Deployment/web"]["metadata"]["generation"]

    generation = restart(api, Workload("watch-a", "Deployment", "web"))
    assert generation == before + 1, "the restart's own answer says which generation to wait for"
    seen = 0
    deadline = time.monotonic() + 120
    while not ((obj := watched.snapshot()["watch-a/Deployment/web"])["metadata"]["generation"] >= generation
               and rolled_out(obj)):
        assert time.monotonic() < deadline, f"the restart never rolled out in the watch's view: {obj['status']}"
        seen = watched.changed(seen, 5)
    kubectl("-n", "watch-a", "rollout", "status", "deployment/web", "--timeout=5s")  # kubectl agrees

    kubectl("-n", "watch-b", "delete", "deployment", "web")
    poll(lambda: "watch-b/Deployment/web" not in watched.snapshot(), 30, "the watch to see the delete")
    kubectl("delete", "namespace", "watch-a", "watch-b", "--wait=false")


def test_restart_keeps_data(cluster, kubectl):
    kubectl("create", "configmap", "survivor", "--from-literal=k=v")
    uid = kubectl("get", "configmap", "survivor", "-o", "jsonpath={.metadata.uid}").stdout
    cluster.down()
    with pytest.raises(ClusterError, match="make cluster-up"):
        cluster.require_running()
    cluster.up()
    assert kubectl("get", "configmap", "survivor", "-o", "jsonpath={.metadata.uid}").stdout == uid


def test_stopped_cluster_names_the_fix():
    with pytest.raises(ClusterError, match=r"embedded cluster 'never-started' is not running: run `make cluster-up`"):
        Cluster("never-started").require_running()
