"""An asyncio lock whose urgent waiters take it before the others.

The controller handles every event under one lock, and a burst of reports (a thousand pods
finishing at once) queues a thousand handlers on it. With a FIFO lock, a crashed pod's
replacement joining, or the launcher saying a pod is lost, would wait behind all of them
(docs/scale.md, "Decisions": joins first). Here an urgent waiter goes before every normal one; each
class is served in arrival order. The lock passes straight from its holder to the next
waiter (it stays locked in between), so an acquirer that was not waiting cannot slip in.

Normal waiters wait only while urgent ones keep coming; urgent acquirers are the faults and
joins of a job's pods and an operator's requests, so there are at most a few per pod.
"""

from __future__ import annotations

import asyncio
import collections
from types import TracebackType


class PriorityLock:
    """`async with lock` takes it as a normal waiter, `async with lock.urgent()` as an urgent
    one (see the module's docstring)."""

    def __init__(self) -> None:
        self._locked = False
        self._urgent: collections.deque[asyncio.Future[None]] = collections.deque()
        self._normal: collections.deque[asyncio.Future[None]] = collections.deque()

    def locked(self) -> bool:
        """Whether some task holds the lock."""
        return self._locked

    @property
    def waiting(self) -> tuple[int, int]:
        """(urgent, normal) tasks waiting for the lock (a cancelled one may still count)."""
        return len(self._urgent), len(self._normal)

    async def acquire(self, *, urgent: bool = False) -> None:
        """Take the lock, waiting behind the urgent waiters (and, unless `urgent`, the normal
        ones) that came before."""
        if not self._locked:
            self._locked = True
            return
        queue = self._urgent if urgent else self._normal
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # it was handed the lock as it was cancelled: pass it on
            elif fut in queue:  # not yet skipped by a release
                queue.remove(fut)
            raise

    def release(self) -> None:
        """Hand the lock to the first urgent waiter, else the first normal one, else free it."""
        if not self._locked:
            raise RuntimeError("release of a PriorityLock that is not held")
        for queue in (self._urgent, self._normal):
            while queue:
                fut = queue.popleft()
                if not fut.done():  # a waiter cancelled meanwhile is skipped
                    fut.set_result(None)
                    return
        self._locked = False

    def urgent(self) -> UrgentHold:
        """`async with lock.urgent()`: take the lock before the normal waiters."""
        return UrgentHold(self)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class UrgentHold:
    """The async context manager of `PriorityLock.urgent()`."""

    def __init__(self, lock: PriorityLock) -> None:
        self.lock = lock

    async def __aenter__(self) -> None:
        await self.lock.acquire(urgent=True)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.lock.release()
