"""The persisted copy: where the agents put complete steps under `--checkpoint-dir` (no torch).

    DIR/step-000000120/rank-00000/__0_0.distcp     rank 0's data file (torch.save records)
    DIR/step-000000120/rank-00000/.metadata        its DCP metadata (aegis.checkpoint.save)
    DIR/step-000000120/rank-00000/aegis-index.json the index that rebuilds its state dict
    DIR/step-000000120/.metadata                   a sharded save's global DCP metadata

Each `rank-R` directory of `aegis.checkpoint.save` is a whole torch.distributed.checkpoint
checkpoint of that rank's state: `dcp.load(sd, checkpoint_id=DIR/step-S/rank-R)` reads it
without Aegis. A sharded save (`AegisStorageWriter`) is one DCP checkpoint at `DIR/step-S`
whose metadata names the ranks' data files. A rank's directory is written under a temporary
name, synced and renamed, so it exists whole or not at all; a step is complete on disk once
every rank of the job has its directory (and, for a sharded save, the global metadata is
there). The agents keep the newest KEEP complete steps and remove what is older.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

DATA_FILE = "__0_0.distcp"
METADATA_FILE = ".metadata"
INDEX_FILE = "aegis-index.json"
KEEP = 2  # complete steps kept on disk
_STEP = "step-"
_RANK = "rank-"
TMP = ".tmp-"


def step_dir(root: str | os.PathLike[str], step: int) -> Path:
    """The directory of step `step`."""
    return Path(root) / f"{_STEP}{step:09d}"


def rank_dir(root: str | os.PathLike[str], step: int, rank: int) -> Path:
    """Rank `rank`'s directory of step `step`."""
    return step_dir(root, step) / f"{_RANK}{rank:05d}"


def rank_data_path(rank: int) -> str:
    """Rank `rank`'s data file, relative to its step's directory (a sharded save's metadata)."""
    return f"{_RANK}{rank:05d}/{DATA_FILE}"


def _steps(root: Path) -> list[int]:
    out = []
    try:
        names = os.listdir(root)
    except OSError:
        return []
    for name in names:
        if name.startswith(_STEP) and name[len(_STEP) :].isdigit():
            out.append(int(name[len(_STEP) :]))
    return sorted(out)


def ranks_present(root: str | os.PathLike[str], step: int) -> set[int]:
    """The ranks whose directory of `step` is there (whole: renamed into place)."""
    try:
        names = os.listdir(step_dir(root, step))
    except OSError:
        return set()
    return {
        int(n[len(_RANK) :]) for n in names if n.startswith(_RANK) and n[len(_RANK) :].isdigit()
    }


def is_complete(root: str | os.PathLike[str], step: int, world: int) -> bool:
    """Whether every rank of a `world`-rank job has step `step` on disk."""
    if not ranks_present(root, step) >= set(range(world)):
        return False
    here = step_dir(root, step)
    # a whole-state save has per-rank metadata; a sharded one needs the global metadata
    return (here / METADATA_FILE).exists() or (rank_dir(root, step, 0) / METADATA_FILE).exists()


def complete_steps(root: str | os.PathLike[str], world: int) -> list[int]:
    """The steps complete on disk, oldest first."""
    return [s for s in _steps(Path(root)) if is_complete(root, s, world)]


def newest_complete(root: str | os.PathLike[str], world: int) -> int | None:
    """The newest step complete on disk, None if there is none (or no directory)."""
    for step in reversed(_steps(Path(root))):
        if is_complete(root, step, world):
            return step
    return None


def prune(root: str | os.PathLike[str], ranks: Iterable[int], world: int) -> list[int]:
    """Remove these ranks' directories of every step older than the newest complete one that
    is not among the KEEP newest complete ones (steps newer than it may still be written);
    the steps touched. A step's directory goes once it is empty (the last agent to prune it
    removes it)."""
    complete = complete_steps(root, world)
    if not complete:
        return []
    kept = set(complete[-KEEP:])
    newest = complete[-1]
    mine = sorted(set(ranks))
    touched = []
    for step in _steps(Path(root)):
        if step in kept or step >= newest:
            continue
        here = step_dir(root, step)
        for rank in mine:
            shutil.rmtree(rank_dir(root, step, rank), ignore_errors=True)
            for leftover in here.glob(f"{_RANK}{rank:05d}{TMP}*"):
                shutil.rmtree(leftover, ignore_errors=True)
        if 0 in mine:
            with contextlib.suppress(OSError):
                (here / METADATA_FILE).unlink()
        with contextlib.suppress(OSError):  # not empty: another agent's ranks are still there
            here.rmdir()
        touched.append(step)
    return touched


def publish_rank_dir(
    root: str | os.PathLike[str], step: int, rank: int, fill: Callable[[Path], None]
) -> Path:
    """Write rank `rank`'s directory of `step` whole or not at all: `fill(tmp)` writes its
    files into a temporary directory, which is synced and renamed into place (an earlier copy
    of the same step and rank is replaced). OSError when the directory cannot be written."""
    final = rank_dir(root, step, rank)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f"{final.name}{TMP}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        fill(tmp)
        for name in os.listdir(tmp):
            _fsync_path(tmp / name)
        _fsync_path(tmp)
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        _fsync_path(final.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
