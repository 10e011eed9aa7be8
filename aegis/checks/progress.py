"""Progress signals without code changes: `progress(step)` / `checkpoint_done(step)` in the
training script write a small JSON file named by AEGIS_PROGRESS_FILE; the agent reads it.

Both calls are no-ops when the variable is unset, never raise, and write atomically
(temporary file + rename), so a reader never sees a torn record. `progress` writes at most
once per AEGIS_PROGRESS_INTERVAL_S seconds (default 0.1: the agent's hang timer can then start
at most 0.1 s before the true last step); `checkpoint_done` always writes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

PROGRESS_FILE_ENV = "AEGIS_PROGRESS_FILE"
PROGRESS_INTERVAL_ENV = "AEGIS_PROGRESS_INTERVAL_S"
DEFAULT_PROGRESS_INTERVAL_S = 0.1


@dataclass(frozen=True)
class ProgressRecord:
    """The last progress signal of one training process."""

    step: int | None = None
    time: float | None = None  # wall clock (time.time()) of the last `progress` call
    checkpoint_step: int | None = None
    checkpoint_time: float | None = None
    pid: int | None = None

    def last_signal(self) -> float | None:
        """Wall-clock time of the newest signal of either kind."""
        times = [t for t in (self.time, self.checkpoint_time) if t is not None]
        return max(times) if times else None

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the newest signal, or None when there is none."""
        last = self.last_signal()
        return None if last is None else (time.time() if now is None else now) - last


_state: dict[str, ProgressRecord] = {}
_last_write: dict[str, float] = {}


def progress(step: int) -> None:
    """Record that training reached `step` (cheap; safe to call every step)."""
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return
    now = time.time()
    rec = _current(path)
    rec = ProgressRecord(int(step), now, rec.checkpoint_step, rec.checkpoint_time, os.getpid())
    _state[path] = rec
    if now - _last_write.get(path, 0.0) >= _interval():
        _write(path, rec, now)


def checkpoint_done(step: int) -> None:
    """Record that the checkpoint of `step` is safely on storage (a safe point for eviction)."""
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return
    now = time.time()
    rec = _current(path)
    rec = ProgressRecord(rec.step, rec.time, int(step), now, os.getpid())
    _state[path] = rec
    _write(path, rec, now)


def read_progress(path: str | os.PathLike[str]) -> ProgressRecord | None:
    """The record in `path`, or None when the file is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
        return ProgressRecord(**{k: obj.get(k) for k in ProgressRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def _current(path: str) -> ProgressRecord:
    if path not in _state:
        _state[path] = read_progress(path) or ProgressRecord()
    return _state[path]


def _interval() -> float:
    try:
        return float(os.environ.get(PROGRESS_INTERVAL_ENV, str(DEFAULT_PROGRESS_INTERVAL_S)))
    except ValueError:
        return DEFAULT_PROGRESS_INTERVAL_S


def _write(path: str, rec: ProgressRecord, now: float) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(asdict(rec), f)
        os.replace(tmp, path)
        _last_write[path] = now
    except OSError:
        pass  # progress signals must never break training
