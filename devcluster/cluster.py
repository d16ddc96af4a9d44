"""Start, check and stop one embedded cluster.

Every component runs inside a network namespace of its own (`kfistio-<name>-<clone hash>`), so the cluster can use fixed ports
and give webhook servers real, non-loopback addresses (bound on that namespace's `lo`) without touching the host's
network. Host clients reach the apiserver through devcluster.forward on 127.0.0.1:<port>, written to the kubeconfig.
State (etcd data, certificates, logs, pids) lives in .state/clusters/<name>/, so `up` after `down` restarts on the
same data.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request

import yaml

from devcluster import pki, toolchain

APISERVER_IP = "198.19.255.254"  # on the namespace's lo: the apiserver's advertised, non-loopback address
POD_CIDR = "198.19.0.0/17"  # RFC 2544 benchmarking range: never routed anywhere, only inside the namespace
SERVICE_CIDR = "198.18.0.0/16"
KUBERNETES_SERVICE_IP = "198.18.0.1"
NODES = 3
STATE_ROOT = toolchain.REPO / ".state" / "clusters"
COMPONENTS = ("etcd", "kube-apiserver", "forward", "kube-controller-manager", "kube-scheduler", "kwok",
              "pod-reaper", "istiod-runner", "proxysim")
KWOK_PORT = 10247  # kwok's kubelet server (logs, exec, port-forward), on the apiserver's address
# Components that are this package's Python modules; the others are toolchain binaries of the same name.
PYTHON_COMPONENTS = {"forward": "devcluster.forward", "istiod-runner": "devcluster.istiod_runner",
                     "pod-reaper": "devcluster.pod_reaper"}


class ClusterError(RuntimeError):
    pass


class Cluster:
    def __init__(self, name: str = "dev"):
        self.name = name
        # Unique per clone: two checkouts on one machine (a work tree and CI, say) never share a namespace.
        self.netns = f"kfistio-{name}-{hashlib.sha256(str(STATE_ROOT).encode()).hexdigest()[:6]}"
        self.dir = STATE_ROOT / name
        self.pki = self.dir / "pki"
        self.logs = self.dir / "logs"
        self.pids = self.dir / "pids"
        self.kubeconfig = self.dir / "kubeconfig"  # for host clients, through the forwarder
        self.inner_kubeconfig = self.dir / "kubeconfig.inner"  # for processes inside the namespace
        self.proxy_events = self.logs / "proxies.jsonl"  # the proxy simulator's event log
        self.context = f"kfistio-{name}"
        """The context (and cluster) name in both kubeconfigs."""

    # ---- public API -----------------------------------------------------------------------------------------
    def up(self, timeout: float = 120) -> None:
        """Start every component not already running, then wait until nodes are Ready and pods can be created."""
        for name in [*(n for n in COMPONENTS if n not in PYTHON_COMPONENTS), "pilot-discovery"]:
            toolchain.binary(name)  # fails first, naming the command, when the demo's tools are not built
        self._prepare()
        starters = {
            "etcd": self._start_etcd, "kube-apiserver": self._start_apiserver, "forward": self._start_forward,
            "kube-controller-manager": self._start_controller_manager, "kube-scheduler": self._start_scheduler,
            "kwok": self._start_kwok, "pod-reaper": self._start_pod_reaper,
            "istiod-runner": self._start_istiod_runner, "proxysim": self._start_proxysim,
        }
        for name in COMPONENTS:
            if not self.running(name):
                starters[name]()
            if name == "forward":
                self._wait(self._apiserver_ready, timeout, "the apiserver to become ready")
                # kwok reads per-pod port-forward rules (the istiod runner writes one per istiod pod) from its CRD.
                self._kubectl("apply", "--server-side", "-f", str(toolchain.share_file("kwok-portforward-crd.yaml")))
        self._apply_nodes()
        self._wait(self._nodes_ready, timeout, f"{NODES} kwok nodes to become Ready")
        self._wait(lambda: self._kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
                   timeout, "the default ServiceAccount (controller-manager)")

    def down(self, purge: bool = False) -> None:
        """Stop every component (SIGTERM, then SIGKILL after 15s); with purge, also delete state and namespace."""
        for name in reversed(COMPONENTS + tuple(self._extra_components())):
            self.stop(name)
        if purge:
            namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
            if self.netns in namespaces:
                subprocess.run(["ip", "netns", "delete", self.netns], check=True)
            subprocess.run(["rm", "-rf", str(self.dir)], check=True)

    def status(self) -> dict[str, bool]:
        return {name: self.running(name) for name in COMPONENTS}

    def require_running(self) -> None:
        """Fail with the command that fixes it when this cluster is not up."""
        if not self.kubeconfig.is_file() or not all(self.status().values()) or not self._apiserver_ready():
            raise ClusterError(f"embedded cluster '{self.name}' is not running: run `make cluster-up` "
                               f"(or `python -m devcluster up --name {self.name}`)")

    @classmethod
    def fresh(cls, name: str) -> "Cluster":
        """A new, empty cluster called name (whatever ran under that name before is stopped and purged)."""
        cluster = cls(name)
        cluster.down(purge=True)
        cluster.up()
        return cluster

    def env(self) -> dict[str, str]:
        """Environment for host clients of this cluster: toolchain PATH, kubeconfig, and for Pulumi this cluster's own
        backend, PULUMI_HOME (the CLI's ~40 MB debug log per command goes there and is purged with the cluster) and
        a generated passphrase, so the CA key a migration copies is encrypted in the state."""
        env = toolchain.tool_env()
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PULUMI_BACKEND_URL"] = f"file://{self.dir / 'pulumi'}"
        env["PULUMI_HOME"] = str(self.dir / "pulumi-home")
        env["PULUMI_CONFIG_PASSPHRASE_FILE"] = str(self._passphrase_file())
        env.pop("PULUMI_CONFIG_PASSPHRASE", None)
        return env

    def _passphrase_file(self) -> pathlib.Path:
        path = self.dir / "passphrase"
        if not path.is_file():
            self.dir.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24))
        return path

    def netns_exec(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def start_process(self, name: str, argv: list[str], *, pass_fds=(), env=None, cwd=None) -> int:
        """Start one supervised process inside the namespace, logging to logs/<name>.log."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pids.mkdir(parents=True, exist_ok=True)
        with open(self.logs / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(self.netns_exec(argv), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds,
                                    env=env, cwd=cwd)
        (self.pids / f"{name}.pid").write_text(json.dumps({"pid": proc.pid, "exe": pathlib.Path(argv[0]).name}))
        return proc.pid

    def running(self, name: str) -> bool:
        record = self._pid_record(name)
        if record is None:
            return False
        try:
            cmdline = pathlib.Path(f"/proc/{record['pid']}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        state = pathlib.Path(f"/proc/{record['pid']}/stat").read_text().split()[2]
        return state != "Z" and any(pathlib.Path(a.decode()).name == record["exe"] for a in cmdline if a)

    def stop(self, name: str, grace: float = 15) -> None:
        record = self._pid_record(name)
        if record is None:
            return
        if self.running(name):
            os.killpg(record["pid"], signal.SIGTERM)
            deadline = time.monotonic() + grace
            while self.running(name) and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.running(name):
                os.killpg(record["pid"], signal.SIGKILL)
        (self.pids / f"{name}.pid").unlink(missing_ok=True)

    # ---- preparation ----------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        for d in (self.dir, self.logs, self.pids):
            d.mkdir(parents=True, exist_ok=True)
        namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        if self.netns not in namespaces.split():
            subprocess.run(["ip", "netns", "add", self.netns], check=True)
        subprocess.run(self.netns_exec(["ip", "link", "set", "lo", "up"]), check=True)
        add_address(self, APISERVER_IP)
        pki.ensure(self.pki, ["127.0.0.1", APISERVER_IP, KUBERNETES_SERVICE_IP])
        token_file = self.dir / "admin.token"
        if not token_file.is_file():
            token_file.write_text(secrets.token_hex(24))
            token_file.chmod(0o600)
        token = token_file.read_text()
        (self.dir / "tokens.csv").write_text(f'{token},kfistio-admin,kfistio-admin,"system:masters"\n')
        self.inner_kubeconfig.write_text(self._kubeconfig_yaml("https://127.0.0.1:6443", token))

    def _kubeconfig_yaml(self, server: str, token: str) -> str:
        import base64
        ca = base64.b64encode((self.pki / "ca.crt").read_bytes()).decode()
        user = f"{self.context}-admin"
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": self.context,
            "clusters": [{"name": self.context, "cluster": {"server": server, "certificate-authority-data": ca}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": self.context, "context": {"cluster": self.context, "user": user}}],
        })

    # ---- components -----------------------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        self.start_process("etcd", [str(toolchain.binary("etcd")), "--name=kfistio",
                                    f"--data-dir={self.dir / 'etcd'}",
                                    "--listen-client-urls=http://127.0.0.1:2379",
                                    "--advertise-client-urls=http://127.0.0.1:2379",
                                    "--listen-peer-urls=http://127.0.0.1:2380",
                                    "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                                    "--initial-cluster=kfistio=http://127.0.0.1:2380",
                                    "--quota-backend-bytes=4294967296", "--log-level=warn"])

    def _start_apiserver(self) -> None:
        p = self.pki
        self.start_process("kube-apiserver", [
            str(toolchain.binary("kube-apiserver")), "--etcd-servers=http://127.0.0.1:2379",
            "--bind-address=0.0.0.0", "--secure-port=6443", f"--advertise-address={APISERVER_IP}",
            f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}", f"--token-auth-file={self.dir / 'tokens.csv'}",
            "--authorization-mode=RBAC", f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p / 'sa.pub'}", f"--service-account-signing-key-file={p / 'sa.key'}",
            "--api-audiences=https://kubernetes.default.svc.cluster.local,istio-ca",
            # Webhooks are called at an endpoint address (where the webhook server really listens), not at the
            # Service's ClusterIP, which no kube-proxy translates here.
            "--enable-aggregator-routing=true", "--allow-privileged=true", "--profiling=false",
            # Logs, exec and port-forward go to the node's kubelet (kwok) at its InternalIP; the Hostname does not
            # resolve here.
            "--kubelet-preferred-address-types=InternalIP",
        ])

    def _start_forward(self) -> None:
        port_file = self.dir / "host-port"
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("127.0.0.1", int(port_file.read_text()) if port_file.is_file() else 0))
        except OSError:
            listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        port = listener.getsockname()[1]
        port_file.write_text(str(port))
        self.start_process("forward", [sys.executable, "-m", PYTHON_COMPONENTS["forward"], f"--fd={listener.fileno()}",
                                       "--to=127.0.0.1:6443"], pass_fds=(listener.fileno(),),
                           cwd=toolchain.REPO)
        listener.close()
        token = (self.dir / "admin.token").read_text()
        self.kubeconfig.write_text(self._kubeconfig_yaml(f"https://127.0.0.1:{port}", token))

    def _start_controller_manager(self) -> None:
        p = self.pki
        self.start_process("kube-controller-manager", [
            str(toolchain.binary("kube-controller-manager")), f"--kubeconfig={self.inner_kubeconfig}",
            f"--authentication-kubeconfig={self.inner_kubeconfig}",
            f"--authorization-kubeconfig={self.inner_kubeconfig}",
            f"--service-account-private-key-file={p / 'sa.key'}", f"--root-ca-file={p / 'ca.crt'}",
            f"--cluster-signing-cert-file={p / 'ca.crt'}", f"--cluster-signing-key-file={p / 'ca.key'}",
            "--allocate-node-cidrs=true", f"--cluster-cidr={POD_CIDR}", "--node-cidr-mask-size=24",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--leader-elect=false",
            "--use-service-account-credentials=false", "--bind-address=127.0.0.1", "--secure-port=10257",
            "--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
            "--kube-api-qps=200", "--kube-api-burst=400",
        ])

    def _start_scheduler(self) -> None:
        self.start_process("kube-scheduler", [
            str(toolchain.binary("kube-scheduler")), f"--kubeconfig={self.inner_kubeconfig}",
            f"--authentication-kubeconfig={self.inner_kubeconfig}",
            f"--authorization-kubeconfig={self.inner_kubeconfig}",
            "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=10259",
        ])

    def _start_kwok(self) -> None:
        self.start_process("kwok", [
            str(toolchain.binary("kwok")), f"--kubeconfig={self.inner_kubeconfig}",
            f"--config={self._kwok_stages()}",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--server-address={APISERVER_IP}:{KWOK_PORT}", f"--node-ip={APISERVER_IP}", f"--node-port={KWOK_PORT}",
            "--enable-crds=PortForward",
            # Renew node Leases (the heartbeat-with-lease stage only refreshes node status every few minutes).
            "--node-lease-duration-seconds=40",
        ], env={**os.environ, "HOME": str(self.dir)})

    def _kwok_stages(self) -> pathlib.Path:
        """kwok's own stage set (built with the toolchain) without `pod-delete`: devcluster.pod_reaper does that."""
        stages = [s for s in yaml.safe_load_all(toolchain.share_file("kwok-stages.yaml").read_text())
                  if s and s["metadata"]["name"] != "pod-delete"]
        path = self.dir / "kwok-stages.yaml"
        path.write_text(yaml.safe_dump_all(stages))
        return path

    def _start_pod_reaper(self) -> None:
        self.start_process("pod-reaper", [sys.executable, "-m", PYTHON_COMPONENTS["pod-reaper"],
                                          f"--kubeconfig={self.inner_kubeconfig}"], cwd=toolchain.REPO)

    def _start_istiod_runner(self) -> None:
        self.start_process("istiod-runner", [sys.executable, "-m", PYTHON_COMPONENTS["istiod-runner"],
                                             f"--cluster={self.name}"], cwd=toolchain.REPO)

    def _start_proxysim(self) -> None:
        """The proxy simulator (tools/go/istio/proxysim): an istio-proxy agent for every running pod that has one."""
        self.start_process("proxysim", [str(toolchain.binary("proxysim")), f"--kubeconfig={self.inner_kubeconfig}",
                                        f"--events={self.proxy_events}", f"--state={self.dir / 'proxies'}"])

    def _extra_components(self) -> list[str]:
        """Processes started by others into this cluster (the istiod runner and its istiods)."""
        known = set(COMPONENTS)
        return sorted(p.stem for p in self.pids.glob("*.pid") if p.stem not in known) if self.pids.is_dir() else []

    # ---- checks ---------------------------------------------------------------------------------------------
    def _pid_record(self, name: str):
        try:
            return json.loads((self.pids / f"{name}.pid").read_text())
        except (OSError, ValueError):
            return None

    def _apiserver_ready(self) -> bool:
        try:
            port = int((self.dir / "host-port").read_text())
            ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            req = urllib.request.Request(f"https://127.0.0.1:{port}/readyz",
                                         headers={"Authorization": f"Bearer {(self.dir / 'admin.token').read_text()}"})
            with urllib.request.urlopen(req, context=ctx, timeout=3) as resp:
                return resp.status == 200
        except (OSError, ValueError):
            return False

    def _nodes_ready(self) -> bool:
        out = self._kubectl("get", "nodes", "-l", "type=kwok", "-o",
                            "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{' '}{end}",
                            check=False).stdout.split()
        return len(out) == NODES and all(s == "True" for s in out)

    def _apply_nodes(self) -> None:
        nodes = [{
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"kwok-node-{i}", "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": f"kwok-node-{i}",
                                    "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "1000"},
                       "capacity": {"cpu": "64", "memory": "512Gi", "pods": "1000"}},
        } for i in range(NODES)]
        self._kubectl("apply", "-f", "-", input=yaml.safe_dump_all(nodes))

    def _kubectl(self, *args: str, check: bool = True, input: str | None = None):
        proc = subprocess.run([str(toolchain.binary("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
                              input=input, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _wait(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                dead = [n for n in COMPONENTS if not self.running(n)]
                raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}; components not running: "
                                   f"{dead or 'none'}; logs in {self.logs}")
            time.sleep(0.5)


def add_address(cluster: Cluster, ip: str) -> None:
    """Put ip on the namespace's lo (idempotent), so a process there can listen on it and the apiserver reach it."""
    proc = subprocess.run(cluster.netns_exec(["ip", "addr", "add", f"{ip}/32", "dev", "lo"]),
                          capture_output=True, text=True)
    if proc.returncode != 0 and not ("File exists" in proc.stderr or "already assigned" in proc.stderr):
        raise ClusterError(f"could not add {ip} to lo in {cluster.netns}: {proc.stderr.strip()}")
