"""Runs a real pilot-discovery for every running istiod pod of the embedded cluster.

kwok only simulates pods, so an istiod Deployment would have nobody answering its webhooks. This runner (started
with the cluster, inside its network namespace) keeps one `pilot-discovery` process per running pod labelled
`app=istiod`, in any namespace and revision:
  - the pilot-discovery of the pod's image's Istio version (the pinned build, or the toolchain's second one);
  - configured from the pod's own container args and env (fieldRefs resolved the way the kubelet would), with the
    kubeconfig of the cluster instead of in-cluster credentials, and a `cacerts` Secret in the pod's namespace
    written where istiod reads plugged-in CA files (./etc/cacerts);
  - listening on the pod's IP (put on the namespace's lo), so the apiserver, which calls webhooks at endpoint
    addresses (--enable-aggregator-routing), reaches it through the normal Service -> EndpointSlice path;
  - stopped when the pod goes away (Deployment deleted or scaled to zero), restarted if it dies;
  - the pod's Ready condition follows istiod's own readiness endpoint (what its readinessProbe checks), so the
    Deployment is Available only once istiod really serves -- kwok alone would mark it Ready at once;
  - a kwok PortForward for the pod (owned by it) sends `kubectl port-forward` to its listeners, which is how
    `istioctl proxy-status` reaches each istiod through the apiserver.
Each process logs to logs/istiod-<namespace>-<pod>.log in the cluster's state directory.
"""

from __future__ import annotations

import argparse
import base64
import logging
import pathlib
import shutil
import signal
import subprocess
import time
import urllib.request

from kubernetes import client, config

from devcluster import toolchain
from devcluster.cluster import Cluster, add_address
from migration.versions import build_of

LISTENERS = {"httpsAddr": 15017, "grpcAddr": 15010, "secureGRPCAddr": 15012, "httpAddr": 8080,
             "monitoringAddr": 15014}
log = logging.getLogger("istiod-runner")


def resolve_env(pod: client.V1Pod, container: client.V1Container, core: client.CoreV1Api) -> dict[str, str]:
    """The container's environment as the kubelet would give it (fieldRef, resourceFieldRef, secret/configMap)."""
    fields = {"metadata.name": pod.metadata.name, "metadata.namespace": pod.metadata.namespace,
              "spec.serviceAccountName": pod.spec.service_account_name or "default",
              "spec.nodeName": pod.spec.node_name or "", "status.podIP": pod.status.pod_ip or "",
              "status.hostIP": pod.status.host_ip or ""}
    env: dict[str, str] = {}
    for var in container.env or []:
        source = var.value_from
        if source is None:
            env[var.name] = var.value or ""
        elif source.field_ref is not None:
            env[var.name] = fields.get(source.field_ref.field_path, "")
        elif source.resource_field_ref is not None:
            env[var.name] = "2"  # GOMAXPROCS and friends: the machine has two cores
        elif source.secret_key_ref is not None:
            secret = core.read_namespaced_secret(source.secret_key_ref.name, pod.metadata.namespace)
            env[var.name] = base64.b64decode((secret.data or {}).get(source.secret_key_ref.key, "")).decode()
        elif source.config_map_key_ref is not None:
            cm = core.read_namespaced_config_map(source.config_map_key_ref.name, pod.metadata.namespace)
            env[var.name] = (cm.data or {}).get(source.config_map_key_ref.key, "")
    return env


def discovery_args(container: client.V1Container, pod_ip: str, kubeconfig: pathlib.Path) -> list[str]:
    """The pod's own pilot-discovery args, then ours: the cluster's kubeconfig and every listener on pod_ip."""
    args = list(container.args or [])
    args += [f"--kubeconfig={kubeconfig}", f"--ctrlz_address={pod_ip}"]
    args += [f"--{flag}={pod_ip}:{port}" for flag, port in LISTENERS.items()]
    return args


def binary_for(image: str) -> pathlib.Path:
    """The pilot-discovery of the image's Istio build, as the cluster would pull it: the pinned build for its version
    (or an untagged development image), `pilot-discovery-<version>` of the toolchain's second minor (built on first
    use); no other."""
    build, pins = build_of(image), toolchain.pins()
    if build.minor is None or build.version == pins["ISTIO_VERSION"]:
        return toolchain.binary("pilot-discovery")
    if build.version == pins["ISTIO_NEXT_VERSION"]:
        return toolchain.binary(f"pilot-discovery-{build.version}", toolset="istio-next")
    raise toolchain.ToolchainMissing(f"no pilot-discovery of Istio {build.version} in the toolchain (it builds "
                                     f"{pins['ISTIO_VERSION']} and {pins['ISTIO_NEXT_VERSION']}): {image}")


def istiod_ready(pod_ip: str) -> bool:
    """istiod's readiness endpoint (httpAddr /ready), as its readinessProbe checks it."""
    try:
        with urllib.request.urlopen(f"http://{pod_ip}:{LISTENERS['httpAddr']}/ready", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


class Runner:
    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        config.load_kube_config(str(cluster.inner_kubeconfig))
        self.core = client.CoreV1Api()
        self.custom = client.CustomObjectsApi()
        self.processes: dict[str, subprocess.Popen] = {}  # pod uid -> process
        self.restarts: dict[str, float] = {}  # pod uid -> earliest next start

    def reconcile(self) -> None:
        pods = self.core.list_pod_for_all_namespaces(label_selector="app=istiod").items
        wanted = {p.metadata.uid: p for p in pods if p.status.phase in ("Pending", "Running") and p.status.pod_ip
                  and p.metadata.deletion_timestamp is None}
        for uid in list(self.processes):
            if uid not in wanted:
                self._stop(uid)
        for uid, pod in wanted.items():
            proc = self.processes.get(uid)
            if proc is not None and proc.poll() is None:
                continue
            if proc is not None:
                log.warning("istiod for pod %s/%s exited %s; restarting", pod.metadata.namespace,
                            pod.metadata.name, proc.returncode)
                self.restarts[uid] = time.monotonic() + 2
                del self.processes[uid]
            if time.monotonic() >= self.restarts.get(uid, 0):
                self._start(pod)
        for uid, pod in wanted.items():
            proc = self.processes.get(uid)
            self._set_ready(pod, proc is not None and proc.poll() is None and istiod_ready(pod.status.pod_ip))

    def _set_ready(self, pod: client.V1Pod, ready: bool) -> None:
        """Make the pod's Ready and ContainersReady conditions say whether its istiod serves (once kwok ran it)."""
        if pod.status.phase != "Running":
            return
        current = {c.type: c.status for c in pod.status.conditions or []}
        want = "True" if ready else "False"
        if current.get("Ready") == want and current.get("ContainersReady") == want:
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [{"type": t, "status": want, "lastTransitionTime": now} for t in ("Ready", "ContainersReady")]
        self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace,
                                              {"status": {"conditions": conditions}})

    def _start(self, pod: client.V1Pod) -> None:
        ns, name, ip = pod.metadata.namespace, pod.metadata.name, pod.status.pod_ip
        container = next(c for c in pod.spec.containers if c.name == "discovery")
        binary = binary_for(container.image)  # ToolchainMissing: no such build, the pod stays unready (logged)
        workdir = self.cluster.dir / "istiod" / f"{ns}-{name}"
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        self._write_plugged_ca(ns, workdir / "etc" / "cacerts")
        add_address(self.cluster, ip)
        self._forward_ports(pod)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), **resolve_env(pod, container, self.core)}
        logfile = open(self.cluster.logs / f"istiod-{ns}-{name}.log", "ab")
        self.processes[pod.metadata.uid] = subprocess.Popen(
            [str(binary), *discovery_args(container, ip, self.cluster.inner_kubeconfig)], cwd=workdir, env=env,
            stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.info("started istiod for pod %s/%s on %s (pid %d)", ns, name, ip, self.processes[pod.metadata.uid].pid)

    def _forward_ports(self, pod: client.V1Pod) -> None:
        """kwok's port-forward rule for this pod: each istiod listener port to the same port on the pod's IP."""
        ports = sorted(set(LISTENERS.values()))
        body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
                "metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                                                  "uid": pod.metadata.uid}]},
                "spec": {"forwards": [{"ports": [port], "target": {"port": port, "address": pod.status.pod_ip}}
                                      for port in ports]}}
        try:
            self.custom.create_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", pod.metadata.namespace,
                                                        "portforwards", body)
        except client.ApiException as err:
            if err.status != 409:
                raise

    def _write_plugged_ca(self, namespace: str, directory: pathlib.Path) -> None:
        try:
            secret = self.core.read_namespaced_secret("cacerts", namespace)
        except client.ApiException as err:
            if err.status == 404:
                return
            raise
        directory.mkdir(parents=True)
        for key, value in (secret.data or {}).items():
            (directory / key).write_bytes(base64.b64decode(value))

    def _stop(self, uid: str) -> None:
        proc = self.processes.pop(uid)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.info("stopped istiod pid %d", proc.pid)

    def stop_all(self) -> None:
        for uid in list(self.processes):
            self._stop(uid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cluster", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    runner = Runner(Cluster(args.cluster))
    signal.signal(signal.SIGTERM, lambda *_: (runner.stop_all(), exit(0)))
    while True:
        try:
            runner.reconcile()
        except Exception:  # noqa: BLE001 -- keep running through apiserver restarts; the error is logged
            log.exception("reconcile failed")
        time.sleep(0.5)


if __name__ == "__main__":
    main()
