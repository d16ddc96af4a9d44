"""A shared Pulumi state store to try a team's setup on one machine: versitygw, an S3-compatible server (Apache-2.0,
built from tools/pins.env like every tool), serving a directory on a loopback port, with one bucket.

The server gets its root keys from its environment (never its command line, which `ps` shows) and keeps object
metadata in a sidecar directory rather than in the data files' `user.*` extended attributes, which tmpfs and some
overlay filesystems refuse. Its keys, port and process id are kept in STATE_ROOT/<name>/ (keys readable by the owner
only), so another process (a test, `make demo STATE=s3`) finds a running store by its name. A real team points the
same backend URL form at its own bucket (docs/fleet.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import secrets
import signal
import socket
import subprocess
import time
import urllib.parse

import boto3
import botocore.config
import botocore.exceptions

from devcluster import toolchain

STATE_ROOT = toolchain.REPO / ".state" / "statestores"
REGION = "us-east-1"
TOOLSET = "s3"


class StateStoreError(RuntimeError):
    pass


def backend_url(bucket: str, prefix: str, endpoint: str | None, region: str = REGION) -> str:
    """Pulumi's DIY backend URL for stacks under s3://bucket/prefix: on a server of our own (endpoint set), path-style
    addressing (the bucket in the path, not in a host name no resolver knows). Pure."""
    path = "/".join(part.strip("/") for part in (bucket, prefix) if part.strip("/"))
    query = {"region": region, **({"endpoint": endpoint, "s3ForcePathStyle": "true"} if endpoint else {})}
    return f"s3://{path}?{urllib.parse.urlencode(query)}"


@dataclasses.dataclass(frozen=True)
class StateStore:
    name: str
    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    pid: int

    @property
    def dir(self) -> pathlib.Path:
        return STATE_ROOT / self.name

    def backend_url(self, prefix: str = "") -> str:
        return backend_url(self.bucket, prefix, self.endpoint)

    def env(self, prefix: str = "") -> dict[str, str]:
        """What a pulumi command (or boto3) needs to use this store: the backend URL and the AWS variables."""
        return {"PULUMI_BACKEND_URL": self.backend_url(prefix), "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": REGION}

    def client(self):
        """A boto3 S3 client for this store (path-style; checksums only where S3 requires them, as a server other
        than AWS may not compute the newer ones)."""
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name=REGION,
                            config=botocore.config.Config(s3={"addressing_style": "path"},
                                                          request_checksum_calculation="when_required",
                                                          response_checksum_validation="when_required",
                                                          retries={"max_attempts": 2}))

    def keys(self, prefix: str = "") -> list[str]:
        """Every object key under prefix in the bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]

    def running(self) -> bool:
        try:
            cmdline = pathlib.Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return False
        return cmdline.split(b"\0")[0].endswith(b"versitygw")

    def stop(self) -> None:
        """SIGTERM by process id, SIGKILL after 10 s; the data directory stays (start again to reuse it)."""
        if self.running():
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.running():
                os.kill(self.pid, signal.SIGKILL)
        (self.dir / "store.json").unlink(missing_ok=True)


def find(name: str) -> StateStore | None:
    """The running store called name, or None."""
    record = STATE_ROOT / name / "store.json"
    if not record.is_file():
        return None
    store = StateStore(**json.loads(record.read_text()))
    return store if store.running() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(name: str = "team", bucket: str = "pulumi-state", timeout: float = 30) -> StateStore:
    """The running store called name, or a new one: versitygw on a free loopback port over STATE_ROOT/<name>/data,
    waited for until it answers, with bucket created. Raises StateStoreError naming the log if it does not answer."""
    if store := find(name):
        return store
    versitygw = toolchain.binary("versitygw", toolset=TOOLSET)
    root = STATE_ROOT / name
    for sub in ("data", "meta"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    keys_file = root / "keys.json"
    if not keys_file.is_file():  # kept across restarts: a stopped store's objects stay readable with its keys
        keys_file.touch(mode=0o600)
        keys_file.write_text(json.dumps({"access_key": secrets.token_hex(10), "secret_key": secrets.token_urlsafe(30)}))
    keys = json.loads(keys_file.read_text())
    port = _free_port()
    env = {**os.environ, "ROOT_ACCESS_KEY": keys["access_key"], "ROOT_SECRET_KEY": keys["secret_key"]}
    with open(root / "versitygw.log", "ab") as log:
        proc = subprocess.Popen([str(versitygw), "--port", f"127.0.0.1:{port}", "--access-log", str(root / "access.log"),
                                 "posix", "--sidecar", str(root / "meta"), str(root / "data")],
                                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    store = StateStore(name, f"http://127.0.0.1:{port}", keys["access_key"], keys["secret_key"], bucket, proc.pid)
    client, deadline = store.client(), time.monotonic() + timeout
    while True:
        try:
            client.list_buckets()
            break
        except (botocore.exceptions.EndpointConnectionError, botocore.exceptions.ConnectionClosedError):
            if proc.poll() is not None or time.monotonic() > deadline:
                store.stop()
                raise StateStoreError(f"versitygw did not answer on {store.endpoint} within {timeout:.0f}s "
                                      f"(exit {proc.poll()}); see {root / 'versitygw.log'}") from None
            time.sleep(0.2)
    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    record = root / "store.json"
    record.touch(mode=0o600)
    record.write_text(json.dumps(dataclasses.asdict(store)))
    return store
