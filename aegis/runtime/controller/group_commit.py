"""Group commit: the events handled in one loop iteration are made durable together (one WAL
append and fsync), then the order they lead to is published, then their replies go out.

An event handler runs under the service's lock and changes only memory; it then awaits
`durable()` outside the lock, so that the events delivered meanwhile are handled and join
the same batch. The flush takes the lock, commits everything handled so far, publishes
(nothing can change the state in between), and wakes the batch. A caller that already holds
the lock (an operator's request, a launcher event, the heartbeat scan) commits at once with
`commit_locked()`, and so does an event whose handling leads to a new order
(OrderBook.order_due): the flush takes the lock only after every event queued for it, and a
restart order would wait behind a burst of reports.
The commit's write and fsync run in a worker thread of its own while the lock is held:
nothing changes memory meanwhile, but the loop goes on reading the bus (nats-server drops a
client that stops reading) and decoding the next events. A snapshot due after a commit is
taken later, under the lock, once the order is out and the batch's replies have had their
turn, and once the commits have paused for `quiet_s`, but no later than `max_delay_s` after
it fell due: an O(pods) snapshot then does not hold up the events right behind a fault. It
is not needed for durability (the WAL holds every commit). A failed commit rolls back every
event of the batch (Journal.commit_async) and each waiter gets the PersistenceError: none
of them is answered, nothing is published.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from aegis.runtime.controller.priority_lock import PriorityLock

log = logging.getLogger(__name__)
WAKE_HOPS = 3  # loop iterations a snapshot waits so the batch's replies go first
# a due snapshot waits for the commits to pause for SNAPSHOT_QUIET_S, but no longer than
# SNAPSHOT_MAX_DELAY_S after it fell due: at 1,000 pods the restart order then came ~60 ms
# sooner (docs/scale.md). The history misses no phase that ended meanwhile: the controller
# keeps an entry per commit that changed the phase (StatusJournal._note_history).
SNAPSHOT_QUIET_S = 0.05
SNAPSHOT_MAX_DELAY_S = 0.5


class Committable(Protocol):
    """What a group commit needs of the controller's journal."""

    @property
    def dirty(self) -> bool:
        """Whether there are handled events not yet durable."""
        ...

    @property
    def snapshot_due(self) -> bool:
        """Whether a snapshot is due (`compact()` would take one)."""
        ...

    async def commit_async(self, run: Callable[[Callable[[], None]], Awaitable[None]]) -> None:
        """Make the handled events durable, the disk's part through `run` (PersistenceError:
        they were rolled back)."""
        ...

    def compact(self) -> None:
        """Take a snapshot if one is due (not needed for durability)."""
        ...


class GroupCommit:
    """Batches the commits of one controller (see the module's docstring)."""

    def __init__(
        self,
        journal: Committable,
        lock: asyncio.Lock | PriorityLock,
        publish: Callable[[], Awaitable[None]],  # the committed state's order, if one is due
        *,
        quiet_s: float = SNAPSHOT_QUIET_S,
        max_delay_s: float = SNAPSHOT_MAX_DELAY_S,
    ) -> None:
        self.journal = journal
        self.lock = lock
        self.publish = publish
        self.quiet_s = quiet_s
        self.max_delay_s = max_delay_s
        self._batch: asyncio.Future[None] | None = None  # the waiters of the next commit
        self._flushes: set[asyncio.Task[None]] = set()
        self._last_commit = float("-inf")  # loop time of the last commit that wrote something
        self._compacting = False  # a snapshot task is waiting or running
        self._hurry = asyncio.Event()  # set by `finish()`: a waiting snapshot goes at once
        self.commits = 0  # commits that wrote something (for tests and the bench)
        # the commits' writes and fsyncs, off the event loop (its thread ends at `close()`)
        self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aegis-wal")

    async def durable(self) -> None:
        """Return once every event handled so far is durable and its order published (call
        without the lock); PersistenceError if their commit failed (they were rolled back)."""
        if self._batch is None:
            if not self.journal.dirty:
                return
            self._batch = asyncio.get_running_loop().create_future()
            self._spawn(self._flush())
        await asyncio.shield(self._batch)

    async def settled(self) -> None:
        """Return once no flush or snapshot of this group commit is pending."""
        while self._flushes:
            await asyncio.gather(*list(self._flushes), return_exceptions=True)

    async def finish(self) -> None:
        """At the end of the job: take a waiting snapshot now and wait for it (status.json
        then shows the final phase)."""
        self._hurry.set()
        await self.settled()
        async with self.lock:
            if self.journal.dirty:  # an event handled as the job ended (a launcher event cut
                # short by the exit): durable first, or no snapshot is due and status.json
                # keeps an older phase
                await self._commit_and_publish(raise_failure=False)
            if self.journal.snapshot_due:
                self.journal.compact()

    async def close(self) -> None:
        """Once nothing can commit any more (the bus is closed): wait for the pending flushes
        and snapshot, then end the worker thread. The WAL's file may be closed after this,
        not before (an append may be running in that thread)."""
        await self.settled()
        self._disk.shutdown(wait=True)  # idle by now: returns at once

    async def commit_locked(self) -> None:
        """Commit now and publish (the caller holds the lock); PersistenceError if it failed."""
        await self._commit_and_publish(raise_failure=True)

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # the events delivered in this loop iteration join the batch
        async with self.lock:
            await self._commit_and_publish(raise_failure=False)

    async def _commit_and_publish(self, *, raise_failure: bool) -> None:
        batch, self._batch = self._batch, None
        dirty = self.journal.dirty
        try:
            await self.journal.commit_async(self._on_disk)
        except Exception as exc:
            if batch is not None:
                batch.set_exception(exc)
                batch.exception()  # retrieved: the waiters re-raise it (there may be none)
            if raise_failure:
                raise
            return
        self.commits += dirty
        if dirty:
            self._last_commit = asyncio.get_running_loop().time()
        try:
            await self.publish()  # the committed state's order, if one is due
        except Exception:
            # durable all the same: the order goes out with the next publish
            log.exception("publishing the committed order failed")
        finally:
            if batch is not None:
                batch.set_result(None)
        if dirty and not self._compacting and self.journal.snapshot_due:
            self._compacting = True  # the snapshot, once the replies have gone out
            self._spawn(self._compact())

    async def _compact(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time()
        try:
            # the batch's waiters wake two callbacks after its future is set (the shield,
            # then the task): let them hand their replies to the bus first
            for _ in range(WAKE_HOPS):
                await asyncio.sleep(0)
            while (now := loop.time()) - due < self.max_delay_s:
                quiet = now - self._last_commit
                if quiet >= self.quiet_s:
                    break
                pause = min(self.quiet_s - quiet, self.max_delay_s - (now - due))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._hurry.wait(), pause)
                if self._hurry.is_set():
                    break
            async with self.lock:
                self.journal.compact()
        finally:
            self._compacting = False

    async def _on_disk(self, write: Callable[[], None]) -> None:
        """Run a commit's write in this group commit's own worker thread (one: the appends
        go in order, and one thread's memory, not the default executor's up to 32)."""
        await asyncio.get_running_loop().run_in_executor(self._disk, write)

    def _spawn(self, work: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(work)
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)
