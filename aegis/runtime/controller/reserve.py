"""Room kept for the job's own state: a full disk costs the job no outcome it reached.

The controller holds a reserve file in its state directory (`RESERVE_FILE`, allocated with
posix_fallocate when it starts: a state directory without that much room is refused at once,
before anything runs, and costs no restart). When a write of the job's state (a WAL record,
the status file, the step log) fails with ENOSPC, the reserve is given back and the write
tried again: the job goes on, its outcome saved, while the disk stays full for everyone else;
the controller says so at once and again when the job ends. A disk still full after that
makes the saves fail; the service then stops the job after SAVE_GIVE_UP_S of failures
(ControllerExit.STORAGE: not restarted, the message says what ran).
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from aegis.errors import AegisError

RESERVE_FILE = ".aegis-reserve"
RESERVE_MIN_BYTES = 4 << 20
RESERVE_BYTES_PER_POD = 512  # a status snapshot takes ~200 bytes a pod, and a WAL record less
SAVE_GIVE_UP_S = 60.0  # saves failing this long in a row end the job (ControllerExit.STORAGE)


class StateDirFull(AegisError):
    """The state directory has no room for the job's reserve: nothing is started."""


def reserve_bytes(pods: int) -> int:
    """The reserve a job of `pods` pods keeps: its last snapshots and records fit in it."""
    return RESERVE_MIN_BYTES + RESERVE_BYTES_PER_POD * pods


class SpaceReserve:
    """A file of `size` bytes in `directory`, given back once when the disk is full."""

    def __init__(self, directory: Path, size: int) -> None:
        self.path = Path(directory) / RESERVE_FILE
        self.size = size
        self.released = False

    def hold(self) -> None:
        """Allocate the reserve (kept from an earlier controller of the job if there);
        StateDirFull when the disk has no room for it."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                os.posix_fallocate(fd, 0, self.size)
            finally:
                os.close(fd)
        except OSError as exc:
            self.path.unlink(missing_ok=True)
            if exc.errno == errno.ENOSPC:
                raise StateDirFull(
                    f"{self.path.parent}: no room for the job's {self.size >> 20} MiB reserve "
                    "(No space left on device): free space there, or use another --state-dir"
                ) from None
            raise StateDirFull(f"{self.path}: cannot allocate the reserve: {exc}") from None

    def on_full(self, exc: OSError) -> bool:
        """After a failed write: True when `exc` is ENOSPC and the reserve was just given
        back (try the write again), False otherwise."""
        if exc.errno != errno.ENOSPC or self.released:
            return False
        self.released = True
        self.path.unlink(missing_ok=True)
        message = (
            f"aegis: the state dir's filesystem is full ({self.path.parent}): its "
            f"{self.size >> 20} MiB reserve was given back to save the job's state; free "
            "space there"
        )
        print(message, file=sys.stderr, flush=True)
        return True

    def close(self) -> None:
        """The job ended: the reserve's room goes back to the disk."""
        self.path.unlink(missing_ok=True)
