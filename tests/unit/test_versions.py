"""Istio versions read off istiod images, and recorded through the migration."""

from __future__ import annotations

import dataclasses
import json

import pytest

from migration import decide as decide_module
from migration.config import from_mapping
from migration.versions import RECORD_ANNOTATION, RECORD_VALUES_ANNOTATION, build_of
from tests.fixtures import recorded
from tests.unit.harness import TARGET
from tests.unit.live_mesh import charm_install


@pytest.mark.parametrize("image, version, minor, development, variant", [
    ("docker.io/istio/pilot:1.22.1", "1.22.1", (1, 22), False, ""),
    ("docker.io/istio/pilot:1.24.3-distroless", "1.24.3", (1, 24), False, "distroless"),
    ("my.registry:5000/mirror/istio/pilot:1.28.0-debug", "1.28.0", (1, 28), False, "debug"),
    ("gcr.io/istio-release/pilot:1.25.0-rc.1", "1.25.0-rc.1", (1, 25), False, ""),
    ("registry.istio.io/testing/pilot:latest", "dev (latest)", None, True, ""),
    ("gcr.io/istio-testing/pilot:1.30-dev", "1.30-dev", (1, 30), True, ""),
    ("gcr.io/istio-testing/pilot:1.31-alpha.0123456789abcdef0123456789abcdef01234567", "1.31-dev", (1, 31), True, ""),
    ("docker.io/istio/pilot@sha256:" + "a" * 64, "unknown (no tag)", None, False, ""),
    ("docker.io/istio/pilot:custom", "unknown (custom)", None, False, ""),
])
def test_versions_from_images(image, version, minor, development, variant):
    build = build_of(image)
    assert (build.version, build.minor, build.development, build.variant) == (version, minor, development, variant)


def _outputs(live):
    cfg = from_mapping({"topology": "migrated"})
    decisions = decide_module.decide(cfg, recorded.renders(cfg), live, TARGET)
    return decisions, decisions.outputs


def test_the_legacy_image_is_recorded_on_the_new_istiod_and_read_back_after_the_teardown():
    live = charm_install()
    decisions, outputs = _outputs(live)
    legacy_image = live.istiod_deployments[0]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert outputs["legacyIstiod"]["image"] == legacy_image and outputs["migratedIstiod"]["version"]
    new = next(o for o in decisions.control_plane.objects if o["kind"] == "Deployment")
    assert new["metadata"]["annotations"][RECORD_ANNOTATION] == legacy_image
    assert json.loads(new["metadata"]["annotations"][RECORD_VALUES_ANNOTATION]) == \
        dict(recorded.same_version(from_mapping({"topology": "migrated"})).legacy.values)
    after = dataclasses.replace(live, istiod_deployments=[new])  # the legacy istiod torn down
    assert _outputs(after)[1]["legacyIstiod"] == outputs["legacyIstiod"], "the same after the teardown"
