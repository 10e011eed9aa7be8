"""Warnings about what others send, rate-limited per sender: a flood cannot fill a disk.

The first warning of each key (a pod and what it did wrong) is logged at once; later ones of
that key at most once per `period` seconds, each saying how many were left out since. Keys
are kept up to `max_keys` (the oldest forgotten first), so the bookkeeping is bounded too.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

DEFAULT_PERIOD_S = 60.0
DEFAULT_MAX_KEYS = 10_000


class LimitedLog:
    """`warning(key, fmt, *args)`: logged the first time for `key`, then once per period."""

    def __init__(
        self,
        logger: logging.Logger,
        period: float = DEFAULT_PERIOD_S,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.period = period
        self.max_keys = max_keys
        self.clock = clock
        self._seen: OrderedDict[Hashable, tuple[float, int]] = OrderedDict()  # last, left out
        self.left_out = 0  # lines not written, in all

    def warning(self, key: Hashable, fmt: str, *args: object) -> bool:
        """Log one warning of `key` unless one was logged less than a period ago (then only
        counted); True when it was logged."""
        return self.log(logging.WARNING, key, fmt, *args)

    def log(
        self, level: int, key: Hashable, fmt: str, *args: object, exc_info: bool = False
    ) -> bool:
        """`warning` at another level (`exc_info`: with the exception being handled)."""
        now = self.clock()
        last = self._seen.get(key)
        if last is not None and now - last[0] < self.period:
            self._seen[key] = (last[0], last[1] + 1)
            self.left_out += 1
            return False
        skipped = 0 if last is None else last[1]
        if skipped:
            fmt += " (%d more like it in the last %.0f s not logged)"
            args = (*args, skipped, now - last[0])  # type: ignore[index]
        self.logger.log(level, fmt, *args, exc_info=exc_info)
        self._seen[key] = (now, 0)
        self._seen.move_to_end(key)
        while len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)
        return True
