"""The paths `aegis run` is given, checked before anything starts (issue 42): a typo in a
flag is a clear error now, not a job that fails (or writes nowhere) minutes later."""

from __future__ import annotations

import os
from pathlib import Path


def _writable_dir_or_creatable(flag: str, path: Path) -> str | None:
    """Why `path` (a directory the run makes or fills) cannot be used; None if it can."""
    if path.exists():
        if not path.is_dir():
            return f"{flag} {path}: exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{flag} {path}: not writable"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{flag} {path}: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{flag} {path}: cannot be made ({parent} is not writable)"
    return None


def _marker_file(flag: str, path: Path) -> str | None:
    """Why `path` (a file the training touches) cannot be used; None if it can."""
    if path.is_dir():
        return f"{flag} {path}: is a directory (name a file the training touches)"
    if not path.parent.is_dir():
        return f"{flag} {path}: its directory {path.parent} does not exist"
    return None


def path_problems(state_dir: Path | None, log_dir: str, checkpoint_file: str) -> list[str]:
    """Every problem with the paths `aegis run` was given (empty: all usable)."""
    found = []
    if state_dir is not None:
        found.append(_writable_dir_or_creatable("--state-dir", state_dir))
    if log_dir:
        found.append(_writable_dir_or_creatable("--log-dir", Path(log_dir)))
    if checkpoint_file:
        found.append(_marker_file("--checkpoint-file", Path(checkpoint_file)))
    return [problem for problem in found if problem]
