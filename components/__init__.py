"""ComponentResources that model the Istio topologies; each turns plain rendered objects into resources."""

PACKAGE = "kfistio"
