"""The unit tier's recorded istioctl output is what the pinned istioctl renders today (a pin or flag change without
`.venv/bin/python -m tests.fixtures.recorded` fails here, not silently in the unit tests)."""

from __future__ import annotations

import pytest

from devcluster import toolchain
from migration import render, versions
from tests.fixtures import recorded


@pytest.mark.parametrize("cfg", recorded.CONFIGS, ids=lambda c: c.topology)
def test_recordings_match_the_pinned_istioctl(cfg, tmp_path):
    istioctl = str(toolchain.binary("istioctl"))
    charm = render.render(render.legacy_input(cfg, recorded.CHARM), recorded.PINNED, cache_dir=tmp_path,
                          istioctl=istioctl)
    assert recorded.charm_image(cfg) == versions.istiod_image(next(o for o in charm if o["kind"] == "Deployment"))
    fresh = render.render_both(cfg, recorded.same_version(cfg), cache_dir=tmp_path, istioctl=istioctl)
    assert fresh == recorded.renders(cfg), f"stale recordings: run `{recorded.REFRESH}`"
