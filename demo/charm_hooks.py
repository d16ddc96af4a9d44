"""What the Charmed Kubeflow charms' hooks do to the cluster, emulated from their code (Juju cannot run here).

The templates in demo/charms are the charms' own (SOURCES.md names repository, branch and commit); each function
below renders them with the values the hook passes and talks to the API server the way the hook's code does:

- istio-gateway `start` (its start, config-changed and istio-pilot relation-changed hooks; charm.py `start`): with no
  istio-pilot relation it only sets Blocked. Otherwise it renders manifest.yaml with the relation's
  `service-name`/`service-port` (istio-pilot sends `istiod.<model>.svc` and `15012`) and `lightkube` applies each
  object: server-side apply, field manager `lightkube`, no force. lightkube's models keep only the fields they know,
  so the PodDisruptionBudget's `$patch: delete` key is dropped and the PDB is applied like every other object.
- istio-gateway `remove`: deletes each object of the manifest.
- istio-pilot's reconcile (charm.py `_reconcile_gateway`, `_reconcile_ingress`, `_reconcile_ingress_auth`), run by
  almost every hook: KubernetesResourceHandler (force-applies with field manager `lightkube`, labels
  `app.kubernetes.io/instance: istio-pilot-<model>`, `kubernetes-resource-handler-scope: gateway|ingress`, and
  deletes the objects with those labels it no longer renders): the Gateway, one VirtualService per `ingress` route;
  the `ingress-auth` EnvoyFilter is applied unlabelled, or deleted by name when the relation has no data.
- istio-pilot `remove`: the reconcile with its relations gone (so every VirtualService and the EnvoyFilter are
  deleted), then istioctl's remove: `istioctl uninstall --purge -y` (tracks 1.17+; 1.17-1.21 spell it
  `istioctl x uninstall`), or on tracks up to 1.16 `istioctl manifest generate` with the charm's flags, every
  object deleted.
- istio-pilot install/upgrade (`istioctl install`/`upgrade` with its flags): demo.fixture.CHARM_INSTALL.

Every hook acts as its application's ServiceAccount, as a Juju sidecar charm does (as_application).
- The successor charm, istio-k8s (canonical/istio-k8s-operator at 8c1703f, `src/charm.py`, `src/istioctl.py`), as
  Charmed Kubeflow's ambient migration deploys it into the `kubeflow` model: its reconcile renders with `istioctl
  manifest generate --set profile=empty --set values.global.istioNamespace=<model>` and its settings, the `base`
  component (CRDs; the trailing ServiceAccount dropped) applied server-side without force and `pilot`, `cni`,
  `ztunnel` applied with force, field manager = the application's name, every object labelled
  `app.kubernetes.io/instance: <app>-<model>` and `kubernetes-resource-handler-scope: istio-crds|control-plane`.
  Its `remove` deletes every object of each scope (KubernetesResourceManager.delete): the Istio CRDs included.
"""

from __future__ import annotations

import dataclasses
import pathlib
import subprocess
from typing import Any

import jinja2
import yaml

from devcluster.toolchain import pins

TEMPLATES = pathlib.Path(__file__).parent / "charms"
MODEL = "kubeflow"
PILOT_APP = "istio-pilot"
GATEWAY_APP = "istio-ingressgateway"
"""The application name Charmed Kubeflow's bundle gives the istio-gateway charm (kind: ingress)."""
FIELD_MANAGER = "lightkube"
GATEWAY_NAME = "kubeflow-gateway"
"""istio-pilot's `default-gateway` as Charmed Kubeflow's bundle sets it."""
AUTH_FILTER = f"{PILOT_APP}-authn-filter"
GATEWAY_PORTS = [8080, 8443]


@dataclasses.dataclass(frozen=True)
class Route:
    """One `ingress` relation's data (service, port, namespace, prefix, rewrite)."""

    service: str
    port: int
    prefix: str
    rewrite: str = "/"
    namespace: str = MODEL


KUBEFLOW_ROUTES = (Route("jupyter-ui", 5000, "/jupyter/"), Route("kfp-ui", 3000, "/pipeline"),
                   Route("kubeflow-dashboard", 8082, "/", "/"), Route("katib-ui", 8080, "/katib/"))
"""Routes the Kubeflow charms of a CKF bundle send over `ingress`."""
AUTH = {"service": "oidc-gatekeeper", "port": 8080, "allowed-request-headers": ["cookie", "X-Auth-Token"],
        "allowed-response-headers": ["kubeflow-userid"]}
"""What oidc-gatekeeper sends over `ingress-auth`."""


def _render(template: str, **context: Any) -> list[dict[str, Any]]:
    text = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES)).get_template(template).render(**context)
    return [{k: v for k, v in doc.items() if k != "$patch"} for doc in yaml.safe_load_all(text) if doc]


def gateway_manifest(generation: str, proxy_image: str, pilot_host: str = f"istiod.{MODEL}.svc",
                     pilot_port: str = "15012", service_type: str = "LoadBalancer") -> list[dict[str, Any]]:
    """The istio-gateway charm's objects (generation: "1.24" or "1.21", the tracks in demo/charms) as its `start`
    renders them with kind=ingress in the kubeflow model."""
    return _render(f"istio-gateway-{generation}.yaml.j2", kind="ingress", namespace=MODEL, proxy_image=proxy_image,
                   pilot_host=pilot_host, pilot_port=pilot_port, gateway_service_type=service_type, replicas=1,
                   annotations=None)


def as_application(env: dict[str, str], app: str) -> dict[str, str]:
    """The environment a hook of app runs in: a Juju sidecar charm's clients (lightkube, istioctl) use the pod's
    in-cluster credentials, the ServiceAccount Juju names after the application in the model's namespace; `juju
    trust <app> --scope=cluster` binds it to a ClusterRole `<model>-<app>` of full access (juju's
    caas/kubernetes/provider/application). The same account and binding are made here, and a kubeconfig with a
    token of that account (TokenRequest, as the kubelet mounts one) stands for the in-cluster config."""
    labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/managed-by": "juju"}
    role = f"{MODEL}-{app}"
    identity = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": app, "namespace": MODEL, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": role, "labels": labels}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": role, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": app, "namespace": MODEL}]}]
    _kubectl(env, ["apply"], identity, check=True)
    token = subprocess.run(["kubectl", "-n", MODEL, "create", "token", app, "--duration=2h"], env=env, check=True,
                           capture_output=True, text=True).stdout.strip()
    config = yaml.safe_load(pathlib.Path(env["KUBECONFIG"]).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = pathlib.Path(f"{env['KUBECONFIG']}.{app}")
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return {**env, "KUBECONFIG": str(path)}


def _kubectl(env: dict[str, str], args: list[str], objects: list[dict], check: bool) -> subprocess.CompletedProcess:
    return subprocess.run(["kubectl", *args, "-f", "-"], input=yaml.safe_dump_all(objects), env=env, check=check,
                          capture_output=True, text=True, timeout=300)


def lightkube_apply(env: dict[str, str], objects: list[dict], force: bool = False,
                    check: bool = True) -> subprocess.CompletedProcess:
    """Server-side apply as lightkube does it (field manager `lightkube`)."""
    return _kubectl(env, ["apply", "--server-side", f"--field-manager={FIELD_MANAGER}",
                          *(["--force-conflicts"] if force else [])], objects, check)


def gateway_start(env: dict[str, str], generation: str, proxy_image: str, related: bool = True,
                  check: bool = True) -> subprocess.CompletedProcess | None:
    """The istio-gateway charm's `start` handler; None when it stops at "Please add required relation"."""
    if not related:
        return None
    return lightkube_apply(as_application(env, GATEWAY_APP), gateway_manifest(generation, proxy_image), check=check)


def gateway_remove(env: dict[str, str], generation: str, proxy_image: str) -> subprocess.CompletedProcess:
    """The istio-gateway charm's `remove` handler: deletes every object of its manifest."""
    return _kubectl(as_application(env, GATEWAY_APP), ["delete", "--ignore-not-found"],
                    gateway_manifest(generation, proxy_image), check=False)


def _krh_labels(scope: str) -> dict[str, str]:
    return {"app.kubernetes.io/instance": f"{PILOT_APP}-{MODEL}", "kubernetes-resource-handler-scope": scope}


def _labelled(objects: list[dict], labels: dict[str, str]) -> list[dict]:
    return [{**o, "metadata": {**o["metadata"], "labels": {**(o["metadata"].get("labels") or {}), **labels}}}
            for o in objects]


def pilot_objects(routes: tuple[Route, ...] = KUBEFLOW_ROUTES, auth: dict | None = AUTH) -> dict[str, list[dict]]:
    """scope -> the objects istio-pilot's reconcile renders (scope "auth": the EnvoyFilter, unlabelled)."""
    gateway = _render("istio-pilot-gateway.yaml.j2", gateway_name=GATEWAY_NAME, namespace=MODEL, port=8080,
                      secure=False, tls_crt=None, tls_key=None)
    services = _render("istio-pilot-virtual_service.yaml.j2", charm_namespace=MODEL, gateway_name=GATEWAY_NAME,
                       gateway_namespace=MODEL, routes=[dataclasses.asdict(r) for r in routes])
    auth_filter = _render("istio-pilot-auth_filter.yaml.j2", auth_service_name=auth["service"],
                          auth_service_namespace=MODEL, app_name=PILOT_APP, envoyfilter_name=AUTH_FILTER,
                          envoyfilter_namespace=MODEL, gateway_ports=GATEWAY_PORTS, port=auth["port"],
                          request_headers=auth["allowed-request-headers"],
                          response_headers=auth["allowed-response-headers"]) if auth else []
    return {"gateway": _labelled(gateway, _krh_labels("gateway")),
            "ingress": _labelled(services, _krh_labels("ingress")), "auth": auth_filter}


_SCOPE_KINDS = {"gateway": "gateways.networking.istio.io", "ingress": "virtualservices.networking.istio.io"}


def pilot_reconcile(env: dict[str, str], routes: tuple[Route, ...] = KUBEFLOW_ROUTES,
                    auth: dict | None = AUTH) -> None:
    """istio-pilot's reconcile of its Gateway, `ingress` VirtualServices and `ingress-auth` EnvoyFilter."""
    env = as_application(env, PILOT_APP)
    objects = pilot_objects(routes, auth)
    for scope, kind in _SCOPE_KINDS.items():
        wanted = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects[scope]}
        selector = ",".join(f"{k}={v}" for k, v in _krh_labels(scope).items())
        listed = subprocess.run(["kubectl", "get", kind, "-A", "-l", selector, "-o", "json"], env=env, check=True,
                                capture_output=True, text=True).stdout
        for obj in yaml.safe_load(listed)["items"]:
            if (obj["metadata"]["namespace"], obj["metadata"]["name"]) not in wanted:
                subprocess.run(["kubectl", "-n", obj["metadata"]["namespace"], "delete", kind,
                                obj["metadata"]["name"], "--ignore-not-found"], env=env, check=True,
                               capture_output=True, text=True)
        if objects[scope]:
            lightkube_apply(env, objects[scope], force=True)
    if objects["auth"]:
        lightkube_apply(env, objects["auth"], force=True)
    else:
        subprocess.run(["kubectl", "-n", MODEL, "delete", "envoyfilters.networking.istio.io", AUTH_FILTER,
                        "--ignore-not-found"], env=env, check=True, capture_output=True, text=True)


IMAGE_CONFIGURATION = {"pilot.image": "pilot", "global.tag": pins()["ISTIO_VERSION"], "global.proxy.image": "proxyv2",
                       "global.proxy_init.image": "proxyv2"}
"""istio-pilot's `image-configuration` (its config.yaml default) as values.*, tagged with the Istio the embedded
cluster runs; its `global-hub` is left out, so the images keep istioctl's default hub (this repository names none)."""
CHARM_FLAGS = ["--set", "profile=minimal", "--set", f"values.global.istioNamespace={MODEL}",
               *(arg for key, value in IMAGE_CONFIGURATION.items() for arg in ("--set", f"values.{key}={value}"))]


def pilot_istioctl(env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess:
    """istio-pilot's install or upgrade: its istioctl command line (demo.fixture.CHARM_INSTALL; `istioctl upgrade`
    with CHARM_FLAGS on upgrade-charm) run as the application."""
    return subprocess.run(argv, env=as_application(env, PILOT_APP), capture_output=True, text=True, timeout=300)


def pilot_remove(env: dict[str, str], form: str = "uninstall") -> subprocess.CompletedProcess:
    """istio-pilot's `remove` handler: the reconcile with its relations gone (every VirtualService it made and the
    auth EnvoyFilter deleted), then pilot_uninstall."""
    pilot_reconcile(env, routes=(), auth=None)
    return pilot_uninstall(env, form)


def pilot_uninstall(env: dict[str, str], form: str = "uninstall") -> subprocess.CompletedProcess:
    """The istioctl part of istio-pilot's `remove`, in the form of the charm's track ("uninstall": `istioctl
    uninstall --purge -y`; "manifest": tracks up to 1.16, the charm's `istioctl manifest generate` output deleted
    object by object; here one `kubectl delete` tries every object, where lightkube's delete_many stops at the
    first refusal, so this attempt is the larger one)."""
    env = as_application(env, PILOT_APP)
    if form == "uninstall":
        return subprocess.run(["istioctl", "uninstall", "--purge", "-y"], env=env, capture_output=True, text=True,
                              timeout=300)
    manifest = subprocess.run(["istioctl", "manifest", "generate", *CHARM_FLAGS], env=env, check=True,
                              capture_output=True, text=True).stdout
    return _kubectl(env, ["delete", "--ignore-not-found"], [d for d in yaml.safe_load_all(manifest) if d], check=False)


@dataclasses.dataclass
class JujuModel:
    """The kubeflow model's two Istio charms, for running the runbook's `juju` commands as their hooks would act:
    each command maps to the hooks Juju fires and their emulated effect on the cluster."""

    env: dict[str, str]
    gateway_generation: str
    proxy_image: str
    related: bool = True
    """The istio-pilot <-> istio-gateway relation exists."""

    def run(self, command: str) -> subprocess.CompletedProcess | None:
        words = command.split()
        if words[:2] == ["juju", "remove-relation"] and set(words[2:4]) == {PILOT_APP, GATEWAY_APP}:
            # relation-departed/broken: neither charm observes them on this relation. The gateway's next hook
            # (config-changed, update) runs `start`, which now stops at "Please add required relation".
            self.related = False
            return gateway_start(self.env, self.gateway_generation, self.proxy_image, related=False)
        if words[:2] in (["juju", "integrate"], ["juju", "relate"]) and set(words[2:4]) == {PILOT_APP, GATEWAY_APP}:
            # relation-changed: istio-pilot sends its istiod Service; istio-gateway's `start` applies its manifest.
            self.related = True
            return gateway_start(self.env, self.gateway_generation, self.proxy_image, check=False)
        if words[:2] in (["juju", "config"], ["juju", "refresh"]) and words[2:3] == [GATEWAY_APP]:
            return gateway_start(self.env, self.gateway_generation, self.proxy_image, related=self.related,
                                 check=False)
        if words[:2] == ["juju", "config"] and words[2:3] == [PILOT_APP]:
            pilot_reconcile(self.env)  # config-changed: the reconcile, with the relations as they are
            return None
        if words[:2] == ["juju", "refresh"] and words[2:3] == [PILOT_APP]:  # upgrade-charm: istioctl upgrade
            return pilot_istioctl(self.env, ["istioctl", "upgrade", "-y", *CHARM_FLAGS])
        if words[:2] == ["juju", "remove-application"] and words[2:3] == [PILOT_APP]:
            return pilot_remove(self.env)
        if words[:2] == ["juju", "remove-application"] and words[2:3] == [GATEWAY_APP]:
            return gateway_remove(self.env, self.gateway_generation, self.proxy_image)
        raise ValueError(f"no emulation of {command!r}: add what its hooks do to demo.charm_hooks.JujuModel")


SUCCESSOR_APP = "istio-k8s"
SUCCESSOR_FLAGS = ["--set", "profile=empty", "--set", f"values.global.istioNamespace={MODEL}",
                   "--set", "meshConfig.accessLogFile=/dev/stdout",
                   "--set", r"values.sidecarInjectorWebhook.injectedAnnotations.traffic\.sidecar\.istio\.io/"
                            r"excludeOutboundIPRanges=0.0.0.0/0",
                   "--set", "values.profile=ambient", "--set", "values.cni.ambient.reconcileIptablesOnStartup=true"]
"""istio-k8s `_get_istioctl` with its default config (no tracing, no external authorizers, no platform)."""


def successor_objects(env: dict[str, str]) -> dict[str, list[dict]]:
    """scope -> the objects istio-k8s reconciles in that scope, rendered by the pinned istioctl with its flags."""
    def generate(*components: str) -> list[dict]:
        enabled = [arg for c in components for arg in ("--set", f"components.{c}.enabled=true")]
        text = subprocess.run(["istioctl", "manifest", "generate", *SUCCESSOR_FLAGS, *enabled], env=env, check=True,
                              capture_output=True, text=True).stdout
        return [d for d in yaml.safe_load_all(text) if d]

    crds = [o for o in generate("base") if o["kind"] != "ServiceAccount"]
    labels = lambda scope: {"app.kubernetes.io/instance": f"{SUCCESSOR_APP}-{MODEL}",  # noqa: E731
                            "kubernetes-resource-handler-scope": scope}
    return {"istio-crds": _labelled(crds, labels("istio-crds")),
            "control-plane": _labelled(generate("pilot", "cni", "ztunnel"), labels("control-plane"))}


def successor_install(env: dict[str, str]) -> subprocess.CompletedProcess:
    """istio-k8s's reconcile: its CRDs (no force), then its control plane (forced); the output of both."""
    objects = successor_objects(env)
    env = as_application(env, SUCCESSOR_APP)
    crds = _kubectl(env, ["apply", "--server-side", f"--field-manager={SUCCESSOR_APP}"], objects["istio-crds"],
                    check=False)
    plane = _kubectl(env, ["apply", "--server-side", f"--field-manager={SUCCESSOR_APP}", "--force-conflicts"],
                     objects["control-plane"], check=False)
    return subprocess.CompletedProcess(plane.args, crds.returncode or plane.returncode, crds.stdout + plane.stdout,
                                       crds.stderr + plane.stderr)


def successor_remove(env: dict[str, str]) -> subprocess.CompletedProcess:
    """istio-k8s's `remove`: every object of each scope deleted, as if its reconcile had labelled them all."""
    objects = successor_objects(env)
    return _kubectl(as_application(env, SUCCESSOR_APP), ["delete", "--ignore-not-found"],
                    objects["control-plane"] + objects["istio-crds"],
                    check=False)
