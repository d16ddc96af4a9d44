"""Whether a stack's secrets are really secret (pure): a stack that stores istiod's CA private key must not use the
passphrase secrets provider with an empty passphrase, which encrypts with a key anyone can derive."""

from __future__ import annotations

import pathlib
from typing import Any, Mapping


def weak_secrets(stack_settings: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """Why this stack's secrets would be readable by anyone with its state, or None.

    stack_settings is the stack's Pulumi.<stack>.yaml. A passphrase stack has an `encryptionsalt` (or names the
    passphrase provider); others (a cloud KMS, Vault, Pulumi Cloud) keep their key elsewhere."""
    provider = str(stack_settings.get("secretsprovider") or "")
    if "encryptionsalt" not in stack_settings and not provider.startswith("passphrase"):
        return None
    if environ.get("PULUMI_CONFIG_PASSPHRASE"):
        return None
    file = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if file and pathlib.Path(file).is_file() and pathlib.Path(file).read_text().strip():
        return None
    return ("this stack stores istiod's CA private key (the copied CA Secret) and encrypts secrets with an empty "
            "passphrase, so anyone with its state could read the key: set PULUMI_CONFIG_PASSPHRASE (or "
            "PULUMI_CONFIG_PASSPHRASE_FILE), or create the stack with `--secrets-provider` of a KMS or Vault")
