"""python -m bench.crd_state: what holding the Istio CRDs costs a stack, three ways.

On a fresh embedded cluster with the charm's Istio installed (demo.fixture, one profile), one stack per way of
holding the 15 CRDs (bench/crd_state_program: imported whole as the migration does, imported with `ignoreChanges:
[spec]`, or a CustomResourceDefinitionPatch): the preview and update times of a new stack, the state's size and the
bytes of each resource's inputs, live object and `__inputs` copy, as ratios to the whole import. Then checks that no
CRD changed (UID, generation). Prints a table; nothing is kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import yaml

from bench.runs import program_workspace, timed_previews
from demo import fixture
from devcluster.cluster import Cluster
from devcluster.toolchain import REPO, let_children_be_interrupted

VARIANTS = ("whole", "ignore-spec", "patch")
PROGRAM = REPO / "bench" / "crd_state_program"


def _istio_crds(env: dict[str, str]) -> dict:
    listing = json.loads(subprocess.run(["kubectl", "get", "crd", "-o", "json"], env=env, check=True,
                                        capture_output=True, text=True).stdout)
    return {**listing, "items": [c for c in listing["items"] if c["metadata"]["name"].endswith(".istio.io")]}


def _identities(listing: dict) -> dict[str, tuple[str, int]]:
    """CRD name -> (UID, generation): what changes if a CRD is recreated or its spec rewritten."""
    return {c["metadata"]["name"]: (c["metadata"]["uid"], c["metadata"]["generation"]) for c in listing["items"]}


def held_bytes(state_file) -> dict[str, int]:
    """Bytes (as JSON) of the CRD resources' inputs, live objects and __inputs copies in a stack's state."""
    held = {"inputs": 0, "live object": 0, "__inputs": 0}
    for res in json.loads(state_file.read_text())["checkpoint"]["latest"]["resources"]:
        if "CustomResourceDefinition" in res["type"]:
            outputs = dict(res.get("outputs") or {})
            held["__inputs"] += len(json.dumps(outputs.pop("__inputs", None)))
            held["live object"] += len(json.dumps(outputs))
            held["inputs"] += len(json.dumps(res.get("inputs")))
    return held


def measure(variant: str, cluster: Cluster, crds_file: str) -> dict:
    workspace = program_workspace(cluster, f"crd-{variant}", "crd-state", PROGRAM, variant,
                                  {"crd-state:variant": variant, "crd-state:crds": crds_file})
    (preview,), _ = timed_previews(workspace, variant, 1)
    started = time.monotonic()
    workspace.up(variant)
    update = time.monotonic() - started
    state = workspace.state_file(variant)
    return {"preview_s": round(preview, 1), "up_s": round(update, 1), "state_bytes": state.stat().st_size,
            **held_bytes(state)}


def main() -> int:
    let_children_be_interrupted()
    cluster = Cluster.fresh("bench-crd-state")
    try:
        fixture.build(cluster.env(), fixture.FixtureSize(profiles=1, deployments=1, kubeflow_shape=False))
        before = _istio_crds(cluster.env())
        crds_file = cluster.dir / "istio-crds.yaml"
        crds_file.write_text(yaml.safe_dump(before))
        results = {v: measure(v, cluster, str(crds_file)) for v in VARIANTS}
        after = _identities(_istio_crds(cluster.env()))
    finally:
        cluster.down(purge=True)
    changed = sorted(name for name, identity in _identities(before).items() if after.get(name) != identity)
    base = results["whole"]
    print(f"\n{len(before['items'])} Istio CRDs held by a new stack          " + "".join(f"{v:>14}" for v in VARIANTS))
    for key in ("preview_s", "up_s", "state_bytes", "inputs", "live object", "__inputs"):
        print(f"{key:<45}" + "".join(f"{results[v][key]:>14}" for v in VARIANTS))
    print(f"{'state, ratio to whole':<45}" + "".join(f"{results[v]['state_bytes'] / base['state_bytes']:>13.2f}x"
                                                    for v in VARIANTS))
    print(f"CRDs whose UID or generation changed: {changed or 'none'}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
