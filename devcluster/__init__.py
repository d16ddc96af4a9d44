"""The embedded local cluster: etcd, kube-apiserver, controller-manager, scheduler and kwok from the pinned toolchain.

Development and test tooling only; the migration program itself targets any cluster through a kubeconfig.
"""
