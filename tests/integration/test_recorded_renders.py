"""The unit tier's recorded istioctl output is what the pinned istioctl renders today (a pin or flag change without
`.venv/bin/python -m tests.fixtures.recorded` fails here, not silently in the unit tests), and what Istio's own
Helm charts render from it with the pinned Helm CLI."""

from __future__ import annotations

import os

import pytest
import yaml

from devcluster import toolchain
from migration import helm, render, versions
from tests.fixtures import recorded
from tests.support import helm as helm_cli
from tests.support import istio_charts


@pytest.mark.parametrize("cfg", recorded.CONFIGS, ids=lambda c: f"{c.topology}-handOver-{c.hand_over}")
def test_recordings_match_the_pinned_istioctl(cfg, tmp_path):
    istioctl = str(toolchain.binary("istioctl"))
    charm = render.render(render.legacy_input(cfg, recorded.CHARM), recorded.PINNED, cache_dir=tmp_path,
                          istioctl=istioctl)
    assert recorded.charm_image(cfg) == versions.istiod_image(next(o for o in charm if o["kind"] == "Deployment"))
    fresh = render.render_both(cfg, recorded.same_version(cfg), cache_dir=tmp_path, istioctl=istioctl)
    assert fresh == recorded.renders(cfg), f"stale recordings: run `{recorded.REFRESH}`"


def test_the_charts_render_the_plane_exactly_as_the_stack_hands_it_over(tmp_path):
    """`helm template` of Istio's base and istiod charts with the stack's values file gives, object for object and
    field for field, what handOver=helm declares for them, but the two annotations Helm writes when it installs:
    so the first `helm upgrade --install` over the handed-over plane changes nothing, and restarts nothing."""
    cfg = next(c for c in recorded.CONFIGS if c.hand_over == "helm")
    plane = [o for o in recorded.renders(cfg).migrated if helm.chart_of(o)]
    releases = helm.HelmReleases(base="istio-base", istiod="istiod", namespace=cfg.target_namespace)
    values = tmp_path / "istio-values.yaml"
    values.write_text(helm.values_yaml(plane, cfg.revision))
    rendered = {}
    for chart in helm.CHARTS:
        text = helm_cli(dict(os.environ), tmp_path / "helm", "template", releases.release_of(chart),
                        str(istio_charts() / chart), "--namespace", releases.namespace, "--values", str(values)).stdout
        rendered |= {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(text) if o}
    declared = {}
    for obj in plane:
        owned = helm.owned_by_release(obj, releases)
        annotations = {k: v for k, v in owned["metadata"]["annotations"].items()
                       if k not in (helm.RELEASE_NAME, helm.RELEASE_NAMESPACE)}
        owned["metadata"] = {k: v for k, v in {**owned["metadata"], "annotations": annotations}.items()
                             if v or k != "annotations"}
        declared[(obj["kind"], obj["metadata"]["name"])] = owned
    assert sorted(rendered) == sorted(declared)
    for key, obj in declared.items():
        assert rendered[key] == obj, key
