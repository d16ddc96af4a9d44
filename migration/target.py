"""The one cluster a stack acts on, as plain data. live.target resolves it (once per run) from stack config or the
environment; the kubernetes provider, preflight, verification and every kubectl Command use exactly this."""

from __future__ import annotations

import dataclasses
import shlex


@dataclasses.dataclass(frozen=True)
class KubeTarget:
    kubeconfig: str
    """Absolute path of a kubeconfig holding only this context (minified and flattened from the user's)."""
    context: str
    """The context name, passed explicitly to every client (`--context`, the provider's `context`)."""
    server: str
    """The API server URL of that context's cluster (shown in outputs and messages)."""

    def kubectl(self) -> str:
        """The kubectl prefix for shell scripts: the kubeconfig comes from the Command's environment."""
        return f"kubectl --context={shlex.quote(self.context)}"

    def environment(self) -> dict[str, str]:
        """Environment for Commands: the resolved kubeconfig and nothing from the shell that started pulumi."""
        return {"KUBECONFIG": self.kubeconfig}

