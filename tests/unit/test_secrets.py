"""A stack holding the CA key must not encrypt it with an empty passphrase."""

from __future__ import annotations

import pytest

from migration.secrets import weak_secrets

PASSPHRASE_STACK = {"encryptionsalt": "v1:abc", "config": {}}


@pytest.mark.parametrize("settings,environ,weak", [
    (PASSPHRASE_STACK, {"PULUMI_CONFIG_PASSPHRASE": ""}, True),
    (PASSPHRASE_STACK, {}, True),
    ({"secretsprovider": "passphrase"}, {}, True),
    (PASSPHRASE_STACK, {"PULUMI_CONFIG_PASSPHRASE": "s3cret"}, False),
    ({"secretsprovider": "awskms://alias/ckf", "encryptedkey": "x"}, {}, False),
    ({"config": {}}, {}, False),  # no salt, no provider: the service backend keeps the key
])
def test_weak_secrets(settings, environ, weak):
    assert (weak_secrets(settings, environ) is not None) == weak


def test_a_passphrase_file_counts_only_when_it_holds_one(tmp_path):
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.write_text("\n")
    full.write_text("s3cret\n")
    assert weak_secrets(PASSPHRASE_STACK, {"PULUMI_CONFIG_PASSPHRASE_FILE": str(empty)})
    assert weak_secrets(PASSPHRASE_STACK, {"PULUMI_CONFIG_PASSPHRASE_FILE": str(full)}) is None
