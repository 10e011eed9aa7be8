"""The controller process's garbage-collector thresholds, and a clock on its collections.

The controller allocates many short-lived containers per event (persistent-map nodes, tuples,
dataclasses), nearly all freed by reference counting, while it holds a large, long-lived heap
at scale (the spec state and status of every pod). CPython's default thresholds make the cyclic
collector walk that heap again and again and find nothing (every cycle the controller makes is
freed with the job), so CONTROLLER_THRESHOLDS raise them: far fewer collections, each pause
longer, and the rare cyclic garbage waits longer to be freed. The figures and what was tried:
docs/scale.md, "Decisions".

`CollectorClock` times every collection of the process once `tune_controller_process` started
it; the controller's metrics show it (aegis_gc_*, docs/operations.md).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

CONTROLLER_THRESHOLDS = (200_000, 20, 20)


@dataclass(eq=False)
class CollectorClock:
    """How many collections of each generation ran, their time and the longest pause (wall
    clock: the event loop stands still for the whole of it)."""

    runs: list[int] = field(default_factory=lambda: [0, 0, 0])
    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    longest: float = 0.0
    _started: float = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        """A `gc.callbacks` entry."""
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        generation = int(info.get("generation", 2))
        self.runs[generation] += 1
        self.seconds[generation] += took
        self.longest = max(self.longest, took)

    def start(self) -> None:
        """Time this process's collections from now on (once: a second call does nothing)."""
        if not any(cb is self for cb in gc.callbacks):
            gc.callbacks.append(self)

    def stop(self) -> None:
        """No longer time them (for tests)."""
        gc.callbacks[:] = [cb for cb in gc.callbacks if cb is not self]


COLLECTOR_CLOCK = CollectorClock()  # the process's, shown by the controller's metrics


def tune_controller_process() -> None:
    """Set the controller's thresholds for the rest of this process (its CLI entry calls it)
    and time its collections."""
    gc.set_threshold(*CONTROLLER_THRESHOLDS)
    COLLECTOR_CLOCK.start()


@contextmanager
def thresholds(values: tuple[int, int, int]) -> Iterator[None]:
    """The collector's thresholds set to `values` inside the block (for benchmarks and tests)."""
    before = gc.get_threshold()
    gc.set_threshold(*values)
    try:
        yield
    finally:
        gc.set_threshold(*before)
