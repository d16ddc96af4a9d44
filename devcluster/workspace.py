"""One Pulumi driver for the demo, the bench and the tests: a project directory beside an embedded cluster.

Its Pulumi.yaml runs this repository's program (`main`), and its stack files are copies of the repository's with the
cluster's kubeconfig named in stack config, so stacks, salts and state of one cluster never touch the repository's
files or another cluster's. Operators run the same program from the repository itself (docs/runbook.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from devcluster.cluster import Cluster
from fleet import project


class PulumiFailed(RuntimeError):
    """A pulumi command exited non-zero; the message holds the command and the end of its output."""


class Workspace:
    def __init__(self, cluster: Cluster, name: str = "project"):
        self.cluster = cluster
        self.dir = cluster.dir / name
        self.env = cluster.env()

    def create(self, bind_kubeconfig: bool = True, **config: Any) -> "Workspace":
        """Write Pulumi.yaml and the stack files; bind_kubeconfig names the cluster's kubeconfig in each stack's
        config (kubernetes:kubeconfig), else the program falls back to KUBECONFIG from the environment. config
        holds kf-istio-migrate:* overrides for every stack. The embedded cluster runs the toolchain's development
        builds of Istio (tools/pins.env), so allowDevelopmentBuilds is true unless config says otherwise."""
        config = {"allowDevelopmentBuilds": "true", **config}
        (self.cluster.dir / "pulumi").mkdir(parents=True, exist_ok=True)
        project.write(self.dir, str(self.cluster.kubeconfig) if bind_kubeconfig else None, None, config)
        return self

    def without_debug_log(self) -> "Workspace":
        """Put a file where the CLI's automatic debug log directory ($PULUMI_HOME/logs) goes: the stock CLI then cannot
        create its log, says 'automatic logging unavailable' in its own (off) log and runs on without it, and without
        formatting every provider call's properties for it (pkg/cmd/pulumi/pulumi.go, pkg/logging/encrypted.go at
        v3.259.0). The tests run so (nothing reads that log, and writing it is CPU every run), and the bench measures
        its cost so, without shipping a patched CLI."""
        logs = Path(self.env["PULUMI_HOME"]) / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.parent.mkdir(parents=True, exist_ok=True)
        logs.write_text("not a directory: this workspace runs the CLI without its debug log\n")
        return self

    def set_config(self, stack: str, key: str, value: str) -> None:
        """Set one config key (fully qualified, e.g. kubernetes:context) in stack's file."""
        path = self.dir / f"Pulumi.{stack}.yaml"
        settings = yaml.safe_load(path.read_text()) or {}
        settings.setdefault("config", {})[key] = value
        path.write_text(yaml.safe_dump(settings, sort_keys=False))

    def pulumi(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
               timeout: float = 1800) -> subprocess.CompletedProcess:
        """Run `pulumi ARGS --non-interactive` in this workspace; raises PulumiFailed when check and it fails."""
        proc = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=self.dir, env=env or self.env,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise PulumiFailed(f"pulumi {' '.join(args)} failed (exit {proc.returncode}):\n"
                               f"{proc.stdout[-8000:]}\n{proc.stderr[-4000:]}")
        return proc

    def init(self, stack: str, env: dict[str, str] | None = None) -> None:
        """`pulumi stack init` unless the stack exists."""
        if self.pulumi("stack", "select", stack, check=False, env=env).returncode != 0:
            self.pulumi("stack", "init", stack, env=env)

    def up(self, stack: str, *extra: str, check: bool = True,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        self.init(stack, env=env)
        return self.pulumi("up", "--stack", stack, "--yes", "--skip-preview", *extra, check=check, env=env)

    def outputs(self, stack: str) -> dict[str, Any]:
        return yaml.safe_load(self.pulumi("stack", "output", "--stack", stack, "--json").stdout)

    def state_file(self, stack: str):
        """The stack's checkpoint in this cluster's file backend."""
        project = yaml.safe_load((self.dir / "Pulumi.yaml").read_text())["name"]
        return self.cluster.dir / "pulumi" / ".pulumi" / "stacks" / project / f"{stack}.json"
