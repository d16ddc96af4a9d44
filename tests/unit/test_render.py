"""Rendering with the pinned istioctl: the flags the charm uses, and the names and addresses Istio emits."""

from __future__ import annotations

import dataclasses
import datetime
import gzip

import pytest
import yaml

from migration import render
from migration.config import from_mapping
from tests.fixtures import recorded

CFG = from_mapping({"topology": "migrated"})


def by_kind(objects, kind):
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects if o["kind"] == kind}


@pytest.fixture(scope="module")
def legacy():
    return recorded.renders(CFG).legacy


@pytest.fixture(scope="module")
def migrated():
    return recorded.renders(CFG).migrated


def test_charm_flags():
    assert render.istioctl_args(render.legacy_input(CFG)) == [
        "manifest", "generate", "--set", "profile=minimal", "--set", "values.global.istioNamespace=kubeflow",
        "--set", "meshConfig.accessLogFile=/dev/stdout"]
    assert render.istioctl_args(render.migrated_input(CFG)) == [
        "manifest", "generate", "--set", "profile=minimal", "--set", "values.global.istioNamespace=istio-system",
        "--set", "revision=kf-1-30", "--set", "values.pilot.env.DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES=istio-system",
        "--set", "meshConfig.accessLogFile=/dev/stdout", "--set", "meshConfig.rootNamespace=kubeflow"]


def test_the_new_istiod_serves_its_debug_view_to_its_own_namespace_only_when_the_root_stays_behind(migrated):
    """istiod authorizes `istioctl proxy-status` callers from its root namespace; with the root kept in kubeflow,
    the plane's own namespace (where istioctl authenticates) is allowed explicitly; with the root moved it is the
    root already."""
    istiod = next(o for o in migrated if o["kind"] == "Deployment")
    env = {e["name"]: e.get("value") for e in istiod["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES"] == "istio-system"
    moved = dataclasses.replace(CFG, root_namespace_policy="move")
    assert not any("DEBUG_ENDPOINT" in a for a in render.istioctl_args(render.migrated_input(moved)))


def test_legacy_names(legacy):
    assert by_kind(legacy, "MutatingWebhookConfiguration") == {("", "istio-sidecar-injector-kubeflow")}
    assert by_kind(legacy, "ValidatingWebhookConfiguration") == {("", "istio-validator-kubeflow")}
    assert by_kind(legacy, "Deployment") == {("kubeflow", "istiod")}
    assert by_kind(legacy, "ConfigMap") == {("kubeflow", "istio"), ("kubeflow", "istio-sidecar-injector"),
                                            ("kubeflow", "values")}
    crds = {name for _, name in by_kind(legacy, "CustomResourceDefinition")}
    assert {"virtualservices.networking.istio.io", "authorizationpolicies.security.istio.io",
            "telemetries.telemetry.istio.io", "wasmplugins.extensions.istio.io"} <= crds
    assert all(n.endswith(".istio.io") for n in crds) and len(crds) == 15


def test_migrated_names(migrated):
    assert by_kind(migrated, "MutatingWebhookConfiguration") == {("", "istio-sidecar-injector-kf-1-30")}
    assert by_kind(migrated, "ValidatingWebhookConfiguration") == {("", "istio-validator-kf-1-30-istio-system")}
    assert by_kind(migrated, "Deployment") == {("istio-system", "istiod-kf-1-30")}
    assert by_kind(migrated, "Service") == {("istio-system", "istiod-kf-1-30")}
    assert all(o["metadata"].get("namespace", "istio-system") == "istio-system" for o in migrated)


def test_discovery_address_and_root_namespace(legacy, migrated):
    mesh = lambda objs, name: yaml.safe_load(next(  # noqa: E731
        o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name)["data"]["mesh"])
    assert mesh(legacy, "istio")["defaultConfig"]["discoveryAddress"] == "istiod.kubeflow.svc:15012"
    new = mesh(migrated, "istio-kf-1-30")
    assert new["defaultConfig"]["discoveryAddress"] == "istiod-kf-1-30.istio-system.svc:15012"
    assert new["rootNamespace"] == "kubeflow", "rootNamespacePolicy=keep keeps mesh-wide config where it is"
    assert render.topology(migrated, "istio-system", "kf-1-30").istiod_address == \
        "istiod-kf-1-30.istio-system.svc:15012"
    pilot = next(o for o in legacy if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert render.topology(legacy, "kubeflow", "default").proxy_image == pilot["image"].replace("/pilot:", "/proxyv2:")


def test_injector_webhooks_target_their_own_istiod(legacy, migrated):
    for objects, service in ((legacy, ("kubeflow", "istiod")), (migrated, ("istio-system", "istiod-kf-1-30"))):
        hooks = [h for o in objects if o["kind"].endswith("WebhookConfiguration") for h in o["webhooks"]]
        assert hooks and {(h["clientConfig"]["service"]["namespace"], h["clientConfig"]["service"]["name"])
                          for h in hooks} == {service}


FAKE_ISTIOCTL = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
if [ "$1" = version ]; then echo "client version: $FAKE_VERSION"; else printf 'kind: ConfigMap\\nmetadata: {name: x}\\n'; fi
"""


@pytest.fixture
def fake_istioctl(tmp_path, monkeypatch):
    """An istioctl that records its calls and renders one ConfigMap (the cache logic, without the toolchain)."""
    path = tmp_path / "istioctl"
    path.write_text(FAKE_ISTIOCTL)
    path.chmod(0o755)
    monkeypatch.setenv("FAKE_VERSION", "1.30-dev")
    return path


def calls(fake_istioctl):
    calls_file = fake_istioctl.parent / "calls"
    return calls_file.read_text().splitlines() if calls_file.exists() else []


def test_a_cache_hit_runs_no_istioctl(tmp_path, fake_istioctl):
    inp = render.legacy_input(CFG)
    first = render.render(inp, "1.30-dev", cache_dir=tmp_path / "cache", istioctl=str(fake_istioctl))
    assert first == [{"kind": "ConfigMap", "metadata": {"name": "x"}}]
    assert [c.split()[0] for c in calls(fake_istioctl)] == ["version", "manifest"]
    assert render.render(inp, "1.30-dev", cache_dir=tmp_path / "cache", istioctl=str(fake_istioctl)) == first
    assert len(calls(fake_istioctl)) == 2, "the second render came from the cache without running istioctl"


def test_a_cached_render_is_read_back_parsed_without_parsing_its_yaml_again(tmp_path, fake_istioctl, monkeypatch):
    inp = render.legacy_input(CFG)
    first = render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=str(fake_istioctl))
    assert [p.suffix for p in sorted(tmp_path.glob(f"{render.cache_key('1.30-dev', render.istioctl_args(inp))}.*"))] \
        == [".json", ".yaml"]
    monkeypatch.setattr(render, "parse", lambda text: pytest.fail("the YAML was parsed again"))
    assert render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=str(fake_istioctl)) == first


def test_no_parsed_copy_where_json_would_not_give_back_the_same_objects(tmp_path, fake_istioctl):
    inp = render.legacy_input(CFG)
    key = render.cache_key("1.30-dev", render.istioctl_args(inp))
    (tmp_path / f"{key}.yaml").write_text("kind: ConfigMap\nmetadata: {name: x, creationTimestamp: 2026-12-07}\n")
    objects = render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=str(fake_istioctl))
    assert objects[0]["metadata"]["creationTimestamp"] == datetime.date(2026, 12, 7)
    assert not list(tmp_path.glob("*.json")), "a timestamp would come back from JSON as a string"


def test_the_recorded_renders_get_no_parsed_copy(tmp_path):
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    inp = render.legacy_input(CFG)
    key = render.cache_key("1.30-dev", render.istioctl_args(inp))
    (recorded / f"{key}.yaml.gz").write_bytes(gzip.compress(b"kind: ConfigMap\nmetadata: {name: x}\n"))
    assert render.render(inp, "1.30-dev", cache_dir=recorded, run_istioctl=False)[0]["kind"] == "ConfigMap"
    assert [p.name for p in recorded.iterdir()] == [f"{key}.yaml.gz"], "the recorded directory is left as it is"


def test_an_istioctl_of_another_version_is_refused(tmp_path, fake_istioctl, monkeypatch):
    monkeypatch.setenv("FAKE_VERSION", "1.29.1")
    with pytest.raises(render.RenderError, match=r"is istioctl 1\.29\.1, but this plane runs Istio 1\.30-dev: install"):
        render.render(render.legacy_input(CFG), "1.30-dev", cache_dir=tmp_path, istioctl=str(fake_istioctl))
    assert not list(tmp_path.glob("*.yaml")), "nothing cached from a refused istioctl"


def test_an_istioctl_the_operator_named_is_checked_even_when_the_cache_answers(tmp_path, fake_istioctl, monkeypatch):
    inp = render.legacy_input(CFG)
    render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=str(fake_istioctl))
    other = tmp_path / "other" / "istioctl"
    other.parent.mkdir()
    other.write_text(FAKE_ISTIOCTL.replace("$FAKE_VERSION", "1.31-dev"))
    other.chmod(0o755)
    with pytest.raises(render.RenderError, match=r"other/istioctl is istioctl 1\.31-dev, but this plane runs Istio"):
        render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=str(other))
    assert render.render(inp, "1.30-dev", cache_dir=tmp_path, istioctl=None), "unnamed: the cache answers"
