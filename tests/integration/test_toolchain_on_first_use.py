"""A tool set that only some tests use is built the first time one of them needs it, into the same pin-hash cache,
without building the demo's set along with it; a failed build names the command (never a skip).

Runs the real build script against an empty cache of its own (KFISTIO_CACHE): the Go module and build caches are
the machine's, as for any first use, so the build compiles little and mostly links.
"""

from __future__ import annotations

import subprocess

import pytest

from devcluster import toolchain

NEXT_MINOR = toolchain.pins()["ISTIO_NEXT_VERSION"]


def test_the_second_istio_minor_is_built_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("KFISTIO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(toolchain.ToolchainMissing, match="make demo"):
        toolchain.bin_dir()  # an empty cache: nothing is built

    istioctl = toolchain.binary(f"istioctl-{NEXT_MINOR}", toolset="istio-next")

    version = subprocess.run([str(istioctl), "version", "--remote=false"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"client version: {NEXT_MINOR}"
    assert (istioctl.parent / f"pilot-discovery-{NEXT_MINOR}").is_file()
    with pytest.raises(toolchain.ToolchainMissing, match="make demo"):
        toolchain.bin_dir()  # the demo's tools were not built with it
    steps = (istioctl.parent.parent / "logs" / "times-istio-next.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in steps] == ["istio-next", "total"]


def test_a_failed_first_use_build_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("KFISTIO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Go: the build cannot start
    with pytest.raises(toolchain.ToolchainMissing, match=r"run `tools/build-toolchain.sh istio-next`"):
        toolchain.ensure("istio-next")
