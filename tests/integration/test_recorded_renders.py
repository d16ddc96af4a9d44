"""The unit tier's recorded istioctl output is what the pinned istioctl renders today (a pin or flag change without
`.venv/bin/python -m tests.fixtures.recorded` fails here, not silently in the unit tests)."""

from __future__ import annotations

import pytest

from devcluster import toolchain
from migration import render
from tests.fixtures import recorded


@pytest.mark.parametrize("cfg", recorded.CONFIGS, ids=lambda c: c.topology)
def test_recordings_match_the_pinned_istioctl(cfg, tmp_path):
    istioctl = str(toolchain.binary("istioctl"))
    fresh = render.Renders(**{plane: render.render(inp, cfg.istio_version, cache_dir=tmp_path, istioctl=istioctl)
                              for plane, inp in (("legacy", render.legacy_input(cfg)),
                                                 ("migrated", render.migrated_input(cfg)))})
    assert fresh == recorded.renders(cfg), f"stale recordings: run `{recorded.REFRESH}`"
