"""The controller process's garbage-collector thresholds.

The controller allocates many short-lived containers per event (persistent-map nodes, tuples,
dataclasses), nearly all freed by reference counting, while it holds a large, long-lived heap
at scale (the spec state and status of 12,500 pods: ~160 MB). With CPython's default
thresholds (700, 10, 10) the cyclic collector then ran 27 full collections of that heap in one
12,500-pod job of `bench/scale_core.py`'s controller part: 3.3-3.5 s of a ~36 s job, pauses
up to ~0.2 s. With CONTROLLER_THRESHOLDS it spent 0.5-0.7 s (docs/scale.md, "Fifth pass").
Cyclic garbage (rare here) waits longer to be freed; the process's peak RSS did not change.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

CONTROLLER_THRESHOLDS = (50_000, 20, 20)


def tune_controller_process() -> None:
    """Set the controller's thresholds for the rest of this process (its CLI entry calls it)."""
    gc.set_threshold(*CONTROLLER_THRESHOLDS)


@contextmanager
def thresholds(values: tuple[int, int, int]) -> Iterator[None]:
    """The collector's thresholds set to `values` inside the block (for benchmarks and tests)."""
    before = gc.get_threshold()
    gc.set_threshold(*values)
    try:
        yield
    finally:
        gc.set_threshold(*before)
