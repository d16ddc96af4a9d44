"""The move proved on the live mesh: every sidecar and the gateway run a simulated istio-proxy agent (tools/go/istio/
proxysim: token, certificate by CSR, ADS over mTLS, from each pod's own spec), and the real istioctl's
`proxy-status` lists them under the istiod they are connected to -- before, after the migration, after the way back.
Along the way the new plane's xDS port is made unreachable: the in-use gate fails naming the proxies that cannot
reach it and keeps the old plane. The mesh's istiod was given a plugged-in CA (`cacerts`): the certificates both
planes issued chain to it and complete an mTLS handshake, each side trusting only the root its own istiod handed it
(with istiod's self-signed CA: tests/integration/test_migration.py)."""

from __future__ import annotations

import json
import ssl

import pytest

from demo import fixture
from devcluster import proxy_events
from live.verify import proxy_status
from migration.proxies import runs_a_proxy
from tests.faults.harness import cancel_dead_update, up_killed_at
from tests.certificates import (certificate_dirs, different_root_leaf, handshake, old_and_new_shake_hands,
                                plugged_ca_secret)
from tests.support import (LEGACY_ISTIOD, NEW_ISTIOD, fresh_workspace, poll, purged, revision_of, roll_back_and_check,
                           run)

SIZE = fixture.FixtureSize(profiles=2, deployments=2, kubeflow_shape=False, pod_stage_ms=150)
PROFILES = fixture.profile_namespaces(SIZE)


def proxies_with_sidecars(env) -> dict[tuple[str, str], str]:
    """(namespace, pod) -> the proxy image of every running pod that has an istio-proxy (the gateway included)."""
    pods = json.loads(run(["kubectl", "get", "pods", "-A", "-o", "json"], env).stdout)["items"]
    return {(p["metadata"]["namespace"], p["metadata"]["name"]):
            next(c["image"] for c in p["spec"]["containers"] if c["name"] == "istio-proxy")
            for p in pods if runs_a_proxy(p)}


def listed(env, address: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(namespace, pod) -> (istiod, version) as `istioctl proxy-status` lists the plane at address."""
    ns = address.split(".")[1]
    return {(p.namespace, p.pod): (p.istiod, p.version)
            for p in proxy_status("istioctl", ns, revision_of(address), env["KUBECONFIG"], None)}


def all_listed_on(env, address: str, timeout: float = 60) -> dict[tuple[str, str], tuple[str, str]]:
    """Waits until proxy-status lists every running proxy on the plane at address; returns the listing."""
    return poll(lambda: (seen := listed(env, address)) and set(seen) == set(proxies_with_sidecars(env)) and seen,
                timeout, f"every proxy listed on {address}")


def remove_xds_port(env) -> dict:
    """The new istiod Service without port 15012 (the gateway and sidecars' discovery and CA port): its pods keep
    serving webhooks, but no proxy can reach the plane. Returns the removed port, to put it back."""
    svc = json.loads(run(["kubectl", "-n", "istio-system", "get", "svc", "istiod-kf-1-30", "-o", "json"], env).stdout)
    index = next(i for i, p in enumerate(svc["spec"]["ports"]) if p["port"] == 15012)
    run(["kubectl", "-n", "istio-system", "patch", "svc", "istiod-kf-1-30", "--type=json",
         "-p", json.dumps([{"op": "remove", "path": f"/spec/ports/{index}"}])], env)
    return svc["spec"]["ports"][index]


@pytest.fixture(scope="module")
def moved():
    """Legacy mesh, its istiod given a plugged-in CA (`cacerts` in kubeflow before the install); `pulumi up` killed
    right after the webhook switch; the xDS port removed; the resumed update (must fail); the port back and the update
    finished; then the way back. Observations at each point."""
    with purged(fresh_workspace("lp")) as workspace:
        env = workspace.env
        run(["kubectl", "create", "namespace", "kubeflow"], env)
        run(["kubectl", "apply", "-f", "-"], env, input=json.dumps(plugged_ca_secret(workspace.cluster.dir / "ca")))
        fixture.build(env, SIZE)
        seen = {"before": all_listed_on(env, LEGACY_ISTIOD), "images_before": proxies_with_sidecars(env)}
        workspace.init("migrated")
        workspace.set_config("migrated", "kf-istio-migrate:rolloutTimeoutSeconds", "30")
        up_killed_at(workspace, "injector-switched")
        cancel_dead_update(workspace)
        port = remove_xds_port(env)
        seen["unreachable"] = workspace.up("migrated", check=False)
        seen["old_istiod_after_failure"] = run(["kubectl", "-n", "kubeflow", "get", "deploy", "istiod", "-o", "name"],
                                               env, check=False).stdout.strip()
        run(["kubectl", "-n", "istio-system", "patch", "svc", "istiod-kf-1-30", "--type=json",
             "-p", json.dumps([{"op": "add", "path": "/spec/ports/-", "value": port}])], env)
        seen["finished"] = workspace.up("migrated").stdout
        seen["after"] = all_listed_on(env, NEW_ISTIOD)
        seen["images_after"] = proxies_with_sidecars(env)
        seen["events_after"] = proxy_events.read(workspace.cluster.proxy_events)
        seen["certs"] = workspace.cluster.dir / "proxies"
        seen["plugged_root"] = (workspace.cluster.dir / "ca" / "root-cert.pem").read_text().strip()
        roll_back_and_check(workspace, PROFILES)
        seen["back"] = all_listed_on(env, LEGACY_ISTIOD)
        seen["new_plane_back"] = run(["kubectl", "-n", "istio-system", "get", "deploy", "-l", "app=istiod", "-o",
                                      "name"], env).stdout.strip()
        yield seen


def _tag(image: str) -> str:
    return image.rsplit(":", 1)[-1]


def test_before_every_proxy_is_listed_on_the_kubeflow_istiod(moved):
    before, images = moved["before"], moved["images_before"]
    assert set(before) == set(images) and any(ns == "kubeflow" for ns, _ in before)  # the gateway too
    assert {istiod for istiod, _ in before.values()} == {next(iter(before.values()))[0]}
    assert next(iter(before.values()))[0].startswith("istiod-") and "kf-1-30" not in next(iter(before.values()))[0]
    assert all(version == _tag(images[pod]) for pod, (_, version) in before.items())


def test_a_proxy_that_cannot_reach_the_new_plane_fails_the_gate_by_name_and_keeps_the_old_plane(moved):
    failed = moved["unreachable"]
    assert failed.returncode != 0
    named = [line for line in failed.stdout.splitlines() if "no istiod of istio-system serves it" in line]
    assert any("/istio-ingressgateway-workload-" in line for line in named), failed.stdout[-3000:]
    assert {line.split(": ")[1].split("/")[0] for line in named} >= set(PROFILES), failed.stdout[-3000:]
    assert "teardown-legacy-control-plane" not in failed.stdout
    assert moved["old_istiod_after_failure"] == "deployment.apps/istiod"


def test_after_the_migration_every_proxy_is_on_the_new_istiod_and_none_on_the_old(moved):
    after, images = moved["after"], moved["images_after"]
    assert set(after) == set(images)
    assert {istiod for istiod, _ in after.values()} and all(i.startswith("istiod-kf-1-30-") for i, _ in after.values())
    assert all(version == _tag(images[pod]) for pod, (_, version) in after.items())
    # The in-use gate asked both planes while the old one still ran (its teardown comes after the gate).
    assert (f"live (istioctl proxy-status): {len(after)} proxies connected to the istiods of istio-system, "
            "0 to those of kubeflow") in moved["finished"], moved["finished"][-3000:]


def test_no_proxy_lost_its_control_plane_while_its_pod_ran(moved):
    assert proxy_events.lost_control_plane(moved["events_after"]) == []
    roots = proxy_events.issuers(moved["events_after"])
    assert any(i.startswith("kubeflow/") for i in roots) and any(i.startswith("istio-system/") for i in roots)
    assert len(set().union(*roots.values())) == 1, roots


def test_after_the_way_back_every_proxy_is_on_the_kubeflow_istiod_again(moved):
    assert moved["back"] and all(not i.startswith("istiod-kf-1-30") for i, _ in moved["back"].values())
    assert moved["new_plane_back"] == ""


def test_old_and_new_certificates_chain_to_the_plugged_in_ca_and_handshake(moved):
    old, new = old_and_new_shake_hands(moved["events_after"], moved["certs"])
    assert {(d / "ca-root.pem").read_text().strip() for d in old + new} == {moved["plugged_root"]}


def test_a_certificate_under_another_root_is_refused(moved, tmp_path):
    events, certs = moved["events_after"], moved["certs"]
    stranger = different_root_leaf(tmp_path, "spiffe://cluster.local/ns/kubeflow-user-000/sa/default")
    with pytest.raises(ssl.SSLError):
        handshake(certificate_dirs(events, certs, "kubeflow")[0], stranger)
