"""Maps that remember the old value of every key they change, so that a failed event is undone
in O(its changes) and a commit lists only the keys that changed (no deep copy of the job)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")
_ABSENT: Any = object()


class UndoLog:
    """The (map, key, old value) of every change since the last `forget`, oldest first."""

    def __init__(self) -> None:
        self.entries: list[tuple[TrackedDict[Any, Any], Any, Any]] = []

    def mark(self) -> int:
        """A position to `undo_to` later."""
        return len(self.entries)

    def undo_to(self, mark: int) -> None:
        """Put every map back as it was at `mark` (newest change first)."""
        while len(self.entries) > mark:
            target, key, old = self.entries.pop()
            target.put_back(key, old)

    def forget(self) -> None:
        """The changes so far are committed: they can no longer be undone."""
        self.entries.clear()

    def changed(self, target: TrackedDict[K, V]) -> Iterator[K]:
        """The keys of `target` changed since the last `forget` (each once)."""
        seen: set[Any] = set()
        for m, key, _ in self.entries:
            if m is target and key not in seen:
                seen.add(key)
                yield key


class TrackedDict(dict[K, V]):
    """A dict whose changes go to an UndoLog (set, delete, pop, setdefault, update)."""

    def __init__(self, undo: UndoLog, items: Iterable[tuple[K, V]] = ()) -> None:
        super().__init__(items)
        self.undo = undo

    def __setitem__(self, key: K, value: V) -> None:
        self.undo.entries.append((self, key, dict.get(self, key, _ABSENT)))
        super().__setitem__(key, value)

    def __delitem__(self, key: K) -> None:
        old = dict.__getitem__(self, key)
        self.undo.entries.append((self, key, old))
        super().__delitem__(key)

    def pop(self, key: K, *default: Any) -> Any:
        """dict.pop, undoable."""
        if key in self:
            value = dict.__getitem__(self, key)
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def setdefault(self, key: K, default: Any = None) -> Any:
        """dict.setdefault, undoable."""
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """dict.update, undoable."""
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        """dict.clear, undoable."""
        for key in list(self):
            del self[key]

    def popitem(self) -> tuple[K, V]:
        """dict.popitem, undoable."""
        key = next(reversed(self.keys()))
        return key, self.pop(key)

    def put_back(self, key: K, old: V) -> None:
        """Undo one change (not logged)."""
        if old is _ABSENT:
            super().pop(key, None)
        else:
            super().__setitem__(key, old)


class TrackedCounter(TrackedDict[str, int]):
    """A TrackedDict of counts where a missing key counts 0 (`c[k] += 1` works)."""

    def __missing__(self, key: str) -> int:
        return 0
