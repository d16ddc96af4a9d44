"""A counting semaphore shared by the rollout commands of one migration, across processes: `limit` lock files, one
held (flock) per workload being moved. The kernel drops a lock when its process ends, so a command killed mid-move
never keeps a slot from the resumed update."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path


def directory(wave: str) -> Path:
    """Where the slots of the wave named wave live (the same for every command of one migration on one machine)."""
    key = hashlib.sha256(wave.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "kf-istio-migrate-slots" / key


class Slots:
    def __init__(self, wave: str, limit: int):
        self.path, self.limit = directory(wave), limit
        self.path.mkdir(parents=True, exist_ok=True)

    def try_take(self) -> int | None:
        """A held slot (an open, locked file descriptor), or None while all limit slots are held."""
        for index in range(self.limit):
            fd = os.open(self.path / f"slot-{index}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
        return None

    @staticmethod
    def give_back(fd: int) -> None:
        os.close(fd)  # closing the only descriptor of the open file releases its flock
