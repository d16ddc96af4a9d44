"""The version policy: a pure move by default, Istio's canary rule for an explicit targetVersion, development builds
only on request, the way back at the recorded version; and which istioctl renders a version."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from migration import istioctls
from migration.config import from_mapping
from migration.decide import decide
from migration.plan import PreflightRefused
from migration.marks import PROTECTED_LABEL
from migration.version_policy import (PlaneVersion, RetiringPlane, check_crds_not_downgraded, crd_versions,
                                      image_values, installed_images, newer, plan_versions)
from migration.versions import (PREVIOUS_ISTIOD_UID_ANNOTATION, PREVIOUS_REVISION_ANNOTATION,
                                PREVIOUS_VERSION_ANNOTATION, RECORD_ANNOTATION, RECORD_VALUES_ANNOTATION)
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.live_mesh import charm_install
from tests.unit.test_render import FAKE_ISTIOCTL


def istiod(namespace: str, image: str, name: str = "istiod", annotations: dict | None = None) -> dict:
    return {"metadata": {"namespace": namespace, "name": name, "annotations": annotations or {}},
            "spec": {"template": {"spec": {"containers": [{"name": "discovery", "image": image}]}}}}


def cfg(topology: str = "migrated", **raw):
    return from_mapping({"topology": topology, **raw})


def no_istioctl() -> str:
    raise AssertionError("the operator's istioctl is asked only when the cluster and the config say no version")


LIVE = [istiod("kubeflow", "docker.io/istio/pilot:1.24.3")]


def test_by_default_the_new_plane_runs_exactly_the_legacy_version_and_images():
    plan = plan_versions(cfg(), LIVE, no_istioctl)
    assert plan.migrated == plan.legacy == PlaneVersion("1.24.3", (("global.hub", "docker.io/istio"),
                                                                   ("global.tag", "1.24.3")))
    assert not plan.changes_version and plan.legacy_image == "docker.io/istio/pilot:1.24.3"
    assert plan_versions(cfg(targetVersion="1.24.3"), LIVE, no_istioctl) == plan


def test_the_charm_install_of_the_pinned_build_plans_the_recorded_same_version_move():
    live = charm_install()
    plan = plan_versions(cfg(allowDevelopmentBuilds="true"), live.istiod_deployments, no_istioctl,
                         recorded.charm_values(cfg()))
    assert plan == recorded.same_version(cfg())
    assert dict(plan.legacy.values)["global.proxy.image"] == "proxyv2", "the values the charm set, not only hub/tag"
    assert recorded.renders(cfg()).legacy == recorded._charm_render(cfg()), "the legacy render is the charm's own"


def test_install_values_that_do_not_render_the_running_image_are_not_trusted():
    installed = {"global": {"hub": "docker.io/istio", "tag": "1.24.2", "proxy": {"image": "proxyv2"}}}
    assert installed_images(installed, "docker.io/istio/pilot:1.24.2") == {
        "global.hub": "docker.io/istio", "global.tag": "1.24.2", "global.proxy.image": "proxyv2"}
    assert installed_images(installed, "docker.io/istio/pilot:1.24.3") is None, "the Deployment was edited"
    plan = plan_versions(cfg(), LIVE, no_istioctl, installed)
    assert dict(plan.legacy.values) == {"global.hub": "docker.io/istio", "global.tag": "1.24.3"}


def test_after_the_teardown_the_recorded_values_render_the_legacy_plane():
    values = {"global.hub": "docker.io/istio", "global.tag": "1.24.3", "global.proxy.image": "proxyv2"}
    record = {RECORD_ANNOTATION: "docker.io/istio/pilot:1.24.3", RECORD_VALUES_ANNOTATION: json.dumps(values)}
    moved = istiod("istio-system", "docker.io/istio/pilot:1.24.3", name="istiod-kf-1-30", annotations=record)
    assert dict(plan_versions(cfg(), [moved], no_istioctl).legacy.values) == values
    jumped = istiod("istio-system", "docker.io/istio/pilot:1.25.0", name="istiod-kf-1-30", annotations=record)
    assert dict(plan_versions(cfg(targetVersion="1.25.0"), [jumped], no_istioctl).migrated.values) == \
        {**values, "global.tag": "1.25.0"}


@pytest.mark.parametrize("running, target", [("1.24.3", "1.25.0"), ("1.25.0", None), ("1.25.0", "1.26.1")])
def test_the_moved_planes_version_is_not_changed_in_place(running, target):
    """Once the moved plane's istiod runs (the move under way or done), another version would replace it in place
    under the running sidecars: refused before anything is declared, naming the version it runs."""
    moved = istiod("istio-system", f"docker.io/istio/pilot:{running}", name="istiod-kf-1-30",
                   annotations={RECORD_ANNOTATION: "docker.io/istio/pilot:1.24.3"})
    with pytest.raises(PreflightRefused, match=f"already runs {running}: changing the version of a moved plane"):
        plan_versions(cfg(**({"targetVersion": target} if target else {})), [moved], no_istioctl)


@pytest.mark.parametrize("target", ["1.24.5", "1.25.0", "1.26.2", "1.26.0-rc.1"])
def test_a_jump_within_istios_canary_rule_renders_the_target_at_the_live_hub(target):
    plan = plan_versions(cfg(targetVersion=target), LIVE, no_istioctl)
    assert plan.legacy.version == "1.24.3" and plan.migrated.version == target and plan.changes_version
    assert dict(plan.migrated.values) == {"global.hub": "docker.io/istio", "global.tag": target}


@pytest.mark.parametrize("target, why", [
    ("1.27.0", "outside what a move from the live 1.24.3 may do: allowed 1.24 to 1.26"),
    ("1.23.6", "outside what a move from the live 1.24.3 may do"),
    ("2.0.0", "outside what a move from the live 1.24.3 may do"),
    ("1.24.2", "1.24.2 is older than the live 1.24.3"),
    ("1.24.3-rc.1", "is older than the live 1.24.3"),
    ("1.25-dev", "development build of Istio (target 1.25-dev)"),
])
def test_a_move_outside_the_rule_is_refused_naming_both_versions(target, why):
    with pytest.raises(PreflightRefused, match="targetVersion|development") as err:
        plan_versions(cfg(targetVersion=target), LIVE, no_istioctl)
    assert why in str(err.value)


def test_a_development_build_moves_only_on_request():
    live = [istiod("kubeflow", "gcr.io/istio-testing/pilot:1.30-dev")]
    with pytest.raises(PreflightRefused, match=r"development build of Istio \(legacy 1\.30-dev\).*"
                                               r"allowDevelopmentBuilds to true"):
        plan_versions(cfg(), live, no_istioctl)
    plan = plan_versions(cfg(allowDevelopmentBuilds="true", targetVersion="1.31-dev"), live, no_istioctl)
    assert plan.migrated == PlaneVersion("1.31-dev", (("global.hub", "gcr.io/istio-testing"),
                                                      ("global.tag", "1.31-dev")))


def test_an_image_whose_tag_names_no_version_is_refused():
    with pytest.raises(PreflightRefused, match=r"runs docker.io/istio/pilot:custom, whose tag names no Istio"):
        plan_versions(cfg(), [istiod("kubeflow", "docker.io/istio/pilot:custom")], no_istioctl)


def test_the_way_back_returns_to_the_recorded_version_and_removes_the_plane_as_it_runs():
    recorded_on = istiod("istio-system", "docker.io/istio/pilot:1.25.1-distroless", name="istiod-kf-1-30",
                         annotations={RECORD_ANNOTATION: "docker.io/istio/pilot:1.24.3"})
    plan = plan_versions(cfg("legacy", targetVersion="1.25.1"), [recorded_on], no_istioctl)
    assert plan.legacy == PlaneVersion("1.24.3", image_values("docker.io/istio/pilot:1.24.3"))
    assert plan.migrated == PlaneVersion("1.25.1", (("global.hub", "docker.io/istio"),
                                                    ("global.tag", "1.25.1-distroless")))
    assert plan_versions(cfg(targetVersion="1.25.1"), [recorded_on], no_istioctl).legacy == plan.legacy, \
        "the record outlives the teardown"


def test_a_fresh_cluster_renders_what_the_config_or_the_operators_istioctl_says():
    assert plan_versions(cfg("legacy", targetVersion="1.24.3"), [], no_istioctl).legacy == \
        PlaneVersion("1.24.3", (("global.tag", "1.24.3"),))
    plan = plan_versions(cfg("legacy"), [], lambda: "1.25.0")
    assert plan.legacy == plan.migrated == PlaneVersion("1.25.0", (("global.tag", "1.25.0"),))
    assert plan.legacy_image is None


@pytest.mark.parametrize("image, version, values", [
    ("my.registry:5000/mirror/pilot:1.24.3-distroless", "1.25.0",
     {"global.hub": "my.registry:5000/mirror", "global.tag": "1.25.0-distroless"}),
    ("docker.io/istio/pilot:1.24.3", None, {"global.hub": "docker.io/istio", "global.tag": "1.24.3"}),
    ("quay.io/acme/istio-pilot:1.24.3", None,
     {"global.hub": "quay.io/acme", "global.tag": "1.24.3", "pilot.image": "istio-pilot"}),
])
def test_image_values_reproduce_the_image(image, version, values):
    assert dict(image_values(image, version)) == values


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """istioctl-<version> on PATH for two versions, and one more outside PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, version in (("istioctl-1.24.3", "1.24.3"), ("istioctl", "1.25.0"), ("../other", "1.26.1")):
        path = bin_dir / name
        path.write_text(FAKE_ISTIOCTL.replace("$FAKE_VERSION", version))
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path


def test_istioctl_is_found_by_version_and_checked(fake):
    assert istioctls.find("1.24.3") == str(fake / "bin" / "istioctl-1.24.3")
    assert istioctls.find("1.25.0") == str(fake / "bin" / "istioctl"), "plain istioctl when it is that version"
    assert istioctls.find("1.26.1", {"1.26.1": str(fake / "other")}) == str(fake / "other")
    assert istioctls.default_version() == "1.25.0"


@pytest.mark.parametrize("version, configured, message", [
    ("1.27.0", None, "no istioctl 1.27.0 found (this plane runs Istio 1.27.0): install istioctl 1.27.0 and set "
                     "kf-istio-migrate:istioctl"),
    ("1.24.3", "{other}", "kf-istio-migrate:istioctl {other} is istioctl 1.26.1, but this plane runs Istio 1.24.3"),
    ("1.24.3", {"1.24.3": "{other}"}, "is istioctl 1.26.1, but this plane runs Istio 1.24.3"),
    ("1.24.3", "{fake}/missing", "does not run as istioctl"),
])
def test_a_missing_or_mismatched_istioctl_is_refused_naming_what_to_install(fake, version, configured, message):
    fill = lambda text: text.format(other=fake / "other", fake=fake)  # noqa: E731
    configured = {k: fill(v) for k, v in configured.items()} if isinstance(configured, dict) else \
        configured and fill(configured)
    with pytest.raises(istioctls.RenderError) as err:
        istioctls.find(version, copy.deepcopy(configured))
    assert fill(message) in str(err.value)


def test_the_way_back_from_an_untagged_migrated_plane_removes_it_as_the_legacy_version_renders_it():
    live = [*LIVE, istiod("istio-system", "registry.example/pilot:latest", name="istiod-kf-1-30")]
    plan = plan_versions(cfg("legacy"), live, no_istioctl)
    assert plan.migrated == plan.legacy and not plan.changes_version


def labelled(*versions: str) -> dict[str, dict]:
    return {f"crd{i}.istio.io": {"labels": {"app.kubernetes.io/version": v}} for i, v in enumerate(versions)}


def test_crds_labelled_newer_than_the_new_plane_are_not_rewritten_at_the_older_version():
    plan = plan_versions(cfg(), LIVE, no_istioctl)  # 1.24.3, a pure move
    check_crds_not_downgraded(plan, labelled("1.24.3", "1.0.0"))
    check_crds_not_downgraded(plan, {"x.istio.io": {"labels": {}}})
    with pytest.raises(PreflightRefused, match=r"labelled app.kubernetes.io/version=1\.25\.1, newer than 1\.24\.3 "
                                               r"that the new plane would render them at: set kf-istio-migrate:"
                                               r"targetVersion to 1\.25\.1"):
        check_crds_not_downgraded(plan, labelled("1.24.3", "1.25.1"))
    with pytest.raises(PreflightRefused, match=r"targetVersion to 1\.25\.10 "):
        check_crds_not_downgraded(plan, labelled("1.25.9", "1.25.10"))
    jump = plan_versions(cfg(targetVersion="1.25.1"), LIVE, no_istioctl)
    check_crds_not_downgraded(jump, labelled("1.25.1"))
    assert crd_versions(labelled("1.25.1", "1.0.0", "1.24.3")) == ["1.24.3", "1.25.1"]


def test_a_refused_crd_downgrade_stops_decide_before_anything_is_declared():
    live = charm_install()
    for crd in live.crds.values():
        crd["labels"]["app.kubernetes.io/version"] = "99.0.0"
    released = recorded.same_version(cfg())
    plan = dataclasses.replace(released, migrated=dataclasses.replace(released.migrated, version="1.30.0"))
    renders = dataclasses.replace(recorded.renders(cfg()), versions=plan)
    with pytest.raises(PreflightRefused, match="newer than 1.30.0"):
        decide(cfg(), renders, live, TARGET)


def own(revision: str, version: str, previous: tuple[str, str] | None = None) -> dict:
    """An istiod the migrated stack made in istio-system for revision (guarded, recording the legacy plane, and the
    revision and version it replaced when an upgrade made it)."""
    annotations = {RECORD_ANNOTATION: "docker.io/istio/pilot:1.24.3"}
    if previous:
        annotations |= {PREVIOUS_REVISION_ANNOTATION: previous[0], PREVIOUS_VERSION_ANNOTATION: previous[1],
                        PREVIOUS_ISTIOD_UID_ANNOTATION: f"uid-{previous[0]}"}
    made = istiod("istio-system", f"docker.io/istio/pilot:{version}", f"istiod-{revision}", annotations)
    made["metadata"] |= {"uid": f"uid-{revision}",
                         "labels": {"istio.io/rev": revision, PROTECTED_LABEL: "true", "app": "istiod"}}
    return made


def test_a_new_revision_on_a_moved_plane_upgrades_it_within_istios_rule_from_the_running_revision():
    plan = plan_versions(cfg(revision="kf-1-25", targetVersion="1.25.1"), [own("kf-1-24", "1.24.3")], no_istioctl)
    assert plan.retiring == plan.previous == RetiringPlane("kf-1-24", PlaneVersion(
        "1.24.3", image_values("docker.io/istio/pilot:1.24.3")), "uid-kf-1-24")
    assert plan.migrated.version == "1.25.1" and plan.legacy.version == "1.24.3", "the charm's record is kept"
    done = plan_versions(cfg(revision="kf-1-25", targetVersion="1.25.1"),
                         [own("kf-1-25", "1.25.1", ("kf-1-24", "1.24.3"))], no_istioctl)
    assert done.retiring is None and done.previous == RetiringPlane("kf-1-24", PlaneVersion("1.24.3"), "uid-kf-1-24"), \
        "once done, later runs name the revision it replaced as recorded"
    for target in ("1.27.0", "1.23.0", "2.25.0"):
        with pytest.raises(PreflightRefused, match=rf"targetVersion {target} is outside what an upgrade from "
                                                   rf"istiod-kf-1-24 \(1\.24\.3\) may do: allowed 1\.24 to 1\.26"):
            plan_versions(cfg(revision="kf-1-x", targetVersion=target), [own("kf-1-24", "1.24.3")], no_istioctl)


def test_going_back_from_an_upgrade_is_allowed_to_the_version_it_replaced_only():
    upgraded = [own("kf-1-25", "1.25.1", ("kf-1-24", "1.24.3"))]
    back = plan_versions(cfg(revision="kf-1-24", targetVersion="1.24.3"), upgraded, no_istioctl)
    assert back.retiring.revision == "kf-1-25" and back.migrated.version == "1.24.3"
    with pytest.raises(PreflightRefused, match=r"or back to 1\.24\.3 \(the version it replaced\)"):
        plan_versions(cfg(revision="kf-1-23", targetVersion="1.23.0"), upgraded, no_istioctl)


@pytest.mark.parametrize("raw, live, refusal", [
    ({"revision": "kf-1-25"}, [istiod("kubeflow", "docker.io/istio/pilot:1.24.3"), own("kf-1-24", "1.24.3")],
     r"istiod still runs in kubeflow: finish the move \(or roll it back\) under its revision first"),
    ({"revision": "kf-1-26"}, [own("kf-1-24", "1.24.3"), own("kf-1-25", "1.25.1")],
     r"runs istiod-kf-1-24 \(1\.24\.3\), istiod-kf-1-25 \(1\.25\.1\), not revision kf-1-26; an upgrade retires one "
     r"revision at a time"),
    ({"revision": "kf-1-25", "handOver": "release"}, [own("kf-1-24", "1.24.3")],
     r"handOver release has let go of the mesh: its next owner upgrades it"),
    ({"revision": "kf-1-25", "canaryNamespaces": ["user1"], "canaryOnly": True}, [own("kf-1-24", "1.24.3")],
     r"kf-istio-migrate:canaryOnly: .* the stack's upgrade runs its canary and the rest in one `pulumi up`"),
])
def test_an_upgrade_the_stack_cannot_retire_safely_is_refused_naming_the_key_and_the_fix(raw, live, refusal):
    with pytest.raises(PreflightRefused, match=refusal):
        plan_versions(cfg(targetVersion="1.25.1", **raw), live, no_istioctl)


def test_the_legacy_stack_refuses_a_way_back_that_names_another_revision_than_the_running_plane():
    with pytest.raises(PreflightRefused, match=r"kf-istio-migrate:revision kf-1-30: the migrated plane in "
                                               r"istio-system runs revision kf-1-31 \(upgraded by the migrated "
                                               r"stack\)"):
        plan_versions(cfg("legacy"), [own("kf-1-31", "1.25.1", ("kf-1-30", "1.24.3"))], no_istioctl)
    assert plan_versions(cfg("legacy", revision="kf-1-31"), [own("kf-1-31", "1.25.1")], no_istioctl).legacy.version \
        == "1.24.3"


def test_newer_orders_minors_and_releases_not_development_builds_of_one_minor():
    assert newer("1.31-dev", "1.30-dev") and newer("1.25.1", "1.25.0") and newer("1.25.0", "1.25.0-rc.1")
    assert not newer("1.30-dev", "1.31-dev") and not newer("1.30-dev", "1.30.1") and not newer("1.25.0", "1.25.0")
