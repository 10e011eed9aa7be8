"""A local job's state directory: one launcher holds it while the job runs, and what the
saved job in it says (whether it ended, whether any agent ever joined its controller)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from aegis.errors import AegisError
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog

LOCK_FILE = "launcher.lock"  # held by the launcher that runs the job (its pid inside)
STATUS_FILE = "status.json"
WAL_FILE = "wal.jsonl"  # the controller's write-ahead log beside it


class LaunchError(AegisError):
    """The job cannot be launched as asked (state directory in use, finished, not a dir)."""


@contextlib.contextmanager
def claim_state_dir(state_dir: Path) -> Iterator[None]:
    """Make `state_dir` and hold its lock while the job runs: one launcher per state dir (the
    kernel drops the lock with the process, so a killed launcher leaves none behind)."""
    if state_dir.exists() and not state_dir.is_dir():
        raise LaunchError(f"--state-dir {state_dir} exists and is not a directory")
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        lock = open(state_dir / LOCK_FILE, "a+")  # noqa: SIM115 - held for the whole job
    except OSError as exc:
        raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
    try:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise LaunchError(
                f"{state_dir} is in use by another aegis run (pid {holder}); one state "
                "directory holds one job"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield
    finally:
        lock.close()


def finished_phase(state_dir: Path) -> str | None:
    """The terminal phase of the job saved in `state_dir`, None if none ended there."""
    status = FileStatusStore(state_dir / STATUS_FILE).load()
    if status is None:
        return None
    if status.phase == "Succeed" or (status.phase == "Failed" and status.should_quit):
        return status.phase
    return None


def never_joined(state_dir: Path) -> bool:
    """Whether no agent ever joined the controller of `state_dir`: an agent that exits then
    has run its command alone. Every join is a WAL record before it is answered, and a
    snapshot (taken up to 0.5 s after a commit, docs/persistence.md) keeps the incarnations;
    so none joined while the log is empty and the snapshot, if any, is Pending with none."""
    try:
        status = FileStatusStore(state_dir / STATUS_FILE).load()
        logged = WriteAheadLog(state_dir / WAL_FILE).read()
    except AegisError:
        return False
    if logged:
        return False
    if status is None:
        return True
    joined = (status.runtime or {}).get("incarnations") or {}
    return status.phase == "Pending" and status.master_seq == 0 and not any(joined.values())
