"""A local rank's version files in the agent's shared memory, and what each holds (the
checkpoint store's bookkeeping; docs/checkpoints.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

_ids = itertools.count(1)


@dataclass(eq=False)
class VersionFile:
    """One version file of a rank: the step it holds once committed."""

    path: Path
    size: int = 0
    step: int | None = None
    writing: bool = False
    reserved: bool = False  # the rank's next save writes it; it holds `step` until then
    lent: bool = False
    pins: int = 0
    id: int = field(default_factory=lambda: next(_ids))


@dataclass(eq=False)
class RankVersions:
    """One local rank's versions (at most two files) and what it saved."""

    local_rank: int
    rank: int
    files: list[VersionFile] = field(default_factory=list)
    saved: int | None = None  # the newest step it saved (memory or storage)
    persisted: set[int] = field(default_factory=set)  # steps on disk (or being written)

    def held(self) -> set[int]:
        """The steps of its committed versions."""
        return {f.step for f in self.files if f.step is not None and not f.writing}

    def holding(self, step: int) -> VersionFile | None:
        """Its committed version of `step`."""
        for f in self.files:
            if f.step == step and not f.writing:
                return f
        return None

    def readable(self, step: int) -> VersionFile | None:
        """Its committed version of `step` that nothing may write while it is read: not the
        one reserved for the rank's next save (the rank writes it before the store hears)."""
        vf = self.holding(step)
        return None if vf is None or vf.reserved else vf

    def end_reservation(self) -> None:
        """Nothing of its process can write any more: a reserved file is a version again."""
        for f in self.files:
            f.reserved = False

    def end_writes(self) -> None:
        """Its process is gone: an unfinished write is no version, a reservation ends."""
        for f in self.files:
            if f.writing:
                f.writing, f.step = False, None
        self.end_reservation()
