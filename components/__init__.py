"""ComponentResources that model the Istio topologies; each turns plain rendered objects into resources."""

import pathlib

PACKAGE = "kfistio"
REPO = pathlib.Path(__file__).resolve().parent.parent
"""Where `python -m live.<module>` steps run."""
