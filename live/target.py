"""Resolve the one cluster a stack acts on, once per run: from stack config (`kubernetes:kubeconfig`,
`kubernetes:context`) or, when absent, from the environment (KUBECONFIG, else ~/.kube/config, and its current
context). The result is a minified, flattened kubeconfig holding only that context, in a private file, so the
provider, preflight, verification and every kubectl Command read the same cluster whatever the shell says later."""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import tempfile
from typing import Mapping

import yaml

from live import cli
from migration.target import KubeTarget


class TargetError(ValueError):
    """The stack names no usable cluster; the message names the key or variable and the fix."""


def _kubeconfig_source(configured: str | None, environ: Mapping[str, str], root: pathlib.Path) -> tuple[str, str]:
    """(KUBECONFIG value for kubectl, where it came from): a path list, or a file written from inline content."""
    if configured:
        if "\n" in configured or configured.lstrip().startswith(("apiVersion", "{")):
            return _private_file("inline", configured), "kubernetes:kubeconfig (inline)"
        path = pathlib.Path(configured).expanduser()
        path = path if path.is_absolute() else root / path
        if not path.is_file():
            raise TargetError(f"kubernetes:kubeconfig = {configured!r}: no such file ({path}); set it to the "
                              f"kubeconfig of the cluster to migrate (`pulumi config set kubernetes:kubeconfig PATH`)")
        return str(path), "kubernetes:kubeconfig"
    if environ.get("KUBECONFIG"):
        return environ["KUBECONFIG"], "KUBECONFIG"
    default = pathlib.Path(environ.get("HOME", "~")).expanduser() / ".kube" / "config"
    if not default.is_file():
        raise TargetError("no cluster named: set kubernetes:kubeconfig (and kubernetes:context) in the stack's "
                          "config, or KUBECONFIG in the environment")
    return str(default), str(default)


def _private_file(label: str, content: str) -> str:
    """content in a file only this user can read, at a path stable for the same content."""
    directory = pathlib.Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"kf-istio-migrate-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    path = directory / f"{label}-{hashlib.sha256(content.encode()).hexdigest()[:16]}.kubeconfig"
    if not path.is_file() or path.read_text() != content:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.touch(mode=0o600)
        tmp.write_text(content)
        tmp.replace(path)
    return str(path)


def _kubectl_config(kubeconfig: str, *args: str) -> str:
    proc = subprocess.run(["kubectl", "config", *args], env={**os.environ, "KUBECONFIG": kubeconfig},
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise TargetError(f"kubectl config {' '.join(args)} failed for KUBECONFIG={kubeconfig}: {proc.stderr.strip()}")
    return proc.stdout


def resolve(configured_kubeconfig: str | None, configured_context: str | None, environ: Mapping[str, str],
            root: pathlib.Path) -> KubeTarget:
    """The KubeTarget for this run; raises TargetError naming what is missing."""
    kubeconfig, source = _kubeconfig_source(configured_kubeconfig, environ, root)
    contexts = _kubectl_config(kubeconfig, "get-contexts", "-o", "name").split()
    context = configured_context or _kubectl_config(kubeconfig, "current-context").strip()
    if context not in contexts:
        key = "kubernetes:context" if configured_context else f"the current context of {source}"
        raise TargetError(f"{key} = {context!r} is not a context in {source} (contexts: {', '.join(contexts) or 'none'}); "
                          f"set kubernetes:context to one of them")
    minified = _kubectl_config(kubeconfig, "view", "--minify", "--flatten", "--raw", f"--context={context}")
    minified_config = yaml.safe_load(minified)
    minified_config["current-context"] = context
    content = yaml.safe_dump(minified_config, sort_keys=True)
    server = minified_config["clusters"][0]["cluster"]["server"]
    return KubeTarget(kubeconfig=_private_file("target", content), context=context, server=server)


def api_client(target: KubeTarget | cli.Command):
    """A kubernetes client ApiClient for exactly target's cluster (a live command run by hand may name neither
    kubeconfig nor context: KUBECONFIG, else ~/.kube/config, and its current context)."""
    from kubernetes import config
    return config.new_client_from_config(config_file=target.kubeconfig, context=target.context)
