"""Resolving the one cluster a stack acts on (kubectl from the project virtualenv; no cluster needed)."""

from __future__ import annotations

import os
import stat

import pytest
import yaml

from devcluster.toolchain import VENV_BIN
from live.target import TargetError, resolve


def kubeconfig(*clusters: str, current: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": c, "cluster": {"server": f"https://{c}.example:6443"}} for c in clusters],
        "users": [{"name": f"{c}-admin", "user": {"token": f"token-{c}"}} for c in clusters],
        "contexts": [{"name": c, "context": {"cluster": c, "user": f"{c}-admin"}} for c in clusters]})


@pytest.fixture(autouse=True)
def kubectl_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()


def test_stack_config_wins_over_the_environment(tmp_path):
    (tmp_path / "both.yaml").write_text(kubeconfig("a", "b", current="b"))
    (tmp_path / "shell.yaml").write_text(kubeconfig("b", current="b"))
    target = resolve("both.yaml", "a", {"KUBECONFIG": str(tmp_path / "shell.yaml")}, tmp_path)
    assert (target.context, target.server) == ("a", "https://a.example:6443")
    minified = yaml.safe_load(open(target.kubeconfig))
    assert [c["name"] for c in minified["contexts"]] == ["a"] and minified["current-context"] == "a"
    assert [u["user"]["token"] for u in minified["users"]] == ["token-a"], "credentials kept (flattened)"
    assert stat.S_IMODE(os.stat(target.kubeconfig).st_mode) == 0o600


def test_without_stack_config_the_environment_and_its_current_context(tmp_path):
    (tmp_path / "shell.yaml").write_text(kubeconfig("a", "b", current="b"))
    target = resolve(None, None, {"KUBECONFIG": str(tmp_path / "shell.yaml")}, tmp_path)
    assert (target.context, target.server) == ("b", "https://b.example:6443")


def test_inline_kubeconfig_and_a_stable_path_for_the_same_cluster(tmp_path):
    inline = kubeconfig("a", current="a")
    first = resolve(inline, None, {}, tmp_path)
    (tmp_path / "a.yaml").write_text(inline)
    assert resolve(str(tmp_path / "a.yaml"), "a", {}, tmp_path).kubeconfig == first.kubeconfig


def test_a_missing_context_is_refused_naming_the_contexts(tmp_path):
    (tmp_path / "both.yaml").write_text(kubeconfig("a", "b", current="a"))
    with pytest.raises(TargetError, match=r"kubernetes:context = 'c' is not a context in kubernetes:kubeconfig "
                                          r"\(contexts: a, b\)"):
        resolve("both.yaml", "c", {}, tmp_path)


def test_a_missing_kubeconfig_is_refused_naming_the_key(tmp_path):
    with pytest.raises(TargetError, match=r"kubernetes:kubeconfig = 'nope.yaml': no such file"):
        resolve("nope.yaml", None, {}, tmp_path)
    with pytest.raises(TargetError, match="no cluster named"):
        resolve(None, None, {"HOME": str(tmp_path)}, tmp_path)
