"""A Pulumi project directory that runs this repository's program for one cluster: Pulumi.yaml names the program
(`main`) and its virtualenv, and each stack file is the repository's with the cluster's kubeconfig and context bound
and its overrides set. One directory per cluster keeps each cluster's stack files (and their encryption salt) apart;
the demo, the tests and the fleet all write theirs here."""

from __future__ import annotations

import os
import pathlib
from typing import Mapping

import yaml

from components import REPO
from migration.config import PROJECT

STACKS = ("legacy", "migrated")


def write(directory: pathlib.Path, kubeconfig: str | None, context: str | None,
          config: Mapping[str, str]) -> pathlib.Path:
    """Write (or update) directory's Pulumi.yaml and one file per stack; config holds kf-istio-migrate:* values
    (bare keys) for every stack. Settings a stack file already has (its encryption salt) are kept."""
    directory.mkdir(parents=True, exist_ok=True)
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    project["main"] = os.path.relpath(REPO, directory)
    project["runtime"]["options"]["virtualenv"] = str(REPO / ".venv")
    (directory / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    for stack in STACKS:
        path = directory / f"Pulumi.{stack}.yaml"
        settings = yaml.safe_load(path.read_text()) if path.is_file() else {}
        settings = settings or {}
        settings["config"] = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
        if kubeconfig:
            settings["config"]["kubernetes:kubeconfig"] = kubeconfig
        if context:
            settings["config"]["kubernetes:context"] = context
        settings["config"].update({f"{PROJECT}:{k}": str(v) for k, v in config.items()})
        path.write_text(yaml.safe_dump(settings, sort_keys=False))
    return directory
