"""A local job's state directory: who holds it, what it holds, and the name of its job.

One launcher at a time holds a state dir (`claim_state_dir`: a lock the kernel drops with the
process). What the launcher reads there before it starts anything: whether the job already
ended (`finished_phase`), whether any agent ever joined (`never_joined`), how far the job has
come (`progress_mark`: the controller's restarts are counted in a row, between marks), and the
job's name (`saved_job_name`; a new job gets a name no other job has, `unique_job_name`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from aegis.errors import AegisError
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.launcher.control_plane import CONTROLLER_CREDS_FILE, CTL_FILE, LaunchError

STATE_DIR_PREFIX = "aegis-run-"  # the state dir of a job run without --state-dir
CREDENTIAL_FILES = (CTL_FILE, CONTROLLER_CREDS_FILE)  # removed when the job ends
JOB_FILE = "job.json"  # namespace, job, pods, MaxRetry: what `aegis ctl` reads after the end
LOCK_FILE = "launcher.lock"  # held by the launcher that runs the job (its pid inside)
STATUS_FILE = "status.json"
WAL_FILE = "wal.jsonl"  # the controller's write-ahead log beside it


def unique_job_name() -> str:
    """A default job name no other job on this machine has (`local-` and 6 random hex
    digits): jobs of one user apart by name too, their ctl, subjects and progress files."""
    return f"local-{secrets.token_hex(3)}"


def saved_job_name(state_dir: Path | None) -> str:
    """The name of the job `state_dir` holds (its job.json, else its ctl.json), '' if none:
    `aegis run` started again on it resumes that job under its own name."""
    if state_dir is None:
        return ""
    for file in (JOB_FILE, CTL_FILE):
        try:
            name = json.loads((state_dir / file).read_text()).get("job", "")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str) and name:
            return name
    return ""


@contextlib.contextmanager
def claim_state_dir(state_dir: Path) -> Iterator[None]:
    """Make `state_dir` and hold its lock while the job runs: one launcher per state dir (the
    kernel drops the lock with the process, so a killed launcher leaves none behind)."""
    if state_dir.exists() and not state_dir.is_dir():
        raise LaunchError(f"--state-dir {state_dir} exists and is not a directory")
    try:
        made = not state_dir.exists()
        state_dir.mkdir(parents=True, exist_ok=True)
        if made:  # the job's credentials go in it: nobody else's to list
            state_dir.chmod(0o700)
        lock = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(lock, 64, 0).decode(errors="replace").strip() or "another process"
            raise LaunchError(
                f"{state_dir} is in use by another aegis run (pid {holder}); one state "
                "directory holds one job"
            ) from None
        try:
            os.ftruncate(lock, 0)
            os.pwrite(lock, str(os.getpid()).encode(), 0)
        except OSError as exc:  # a full disk: said now, before anything starts
            raise LaunchError(f"cannot use --state-dir {state_dir}: {exc}") from None
        yield
    finally:
        os.close(lock)


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


def progress_mark(state_dir: Path) -> int:
    """How far the job saved in `state_dir` has come: the number of the last spec step on
    disk (its snapshot's, or its WAL's last record's); -1 when none can be read."""
    try:
        status = FileStatusStore(state_dir / STATUS_FILE).load()
        logged = WriteAheadLog(state_dir / WAL_FILE).read()
    except AegisError:
        return -1
    steps = [int((status.runtime or {}).get("stepNo", 0))] if status is not None else [-1]
    steps += [int(r.body.get("extras", {}).get("stepNo", -1)) for r in logged[-1:]]
    return max(steps)
