"""GroupCommit's order of effects: durable, then published, then the waiters released, and only
then the (O(pods)) snapshot, which a fault's order must not wait for."""

from __future__ import annotations

import asyncio

import pytest

from aegis.runtime.group_commit import GroupCommit


class FakeCore:
    """Records what the group commit asks of the controller core, in order."""

    def __init__(self, log: list[str], *, fail: bool = False) -> None:
        self.log = log
        self.fail = fail
        self._dirty = False
        self.published = True

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def needs_publish(self) -> bool:
        return not self.published

    def handle(self) -> None:
        self._dirty, self.published = True, False
        self.log.append("event")

    def commit(self, *, compact: bool = True) -> None:
        if self.fail:
            self._dirty = False
            raise OSError("disk full")
        self.log.append(f"commit(compact={compact})")
        self._dirty = False

    def compact(self) -> None:
        self.log.append("compact")


async def test_the_snapshot_comes_after_the_order_and_the_replies() -> None:
    log: list[str] = []
    core = FakeCore(log)
    lock = asyncio.Lock()

    async def publish() -> None:
        log.append("publish")
        core.published = True

    commits = GroupCommit(core, lock, publish)

    async def event(name: str) -> None:
        async with lock:
            core.handle()
        await commits.durable()
        log.append(f"reply {name}")

    await asyncio.gather(event("a"), event("b"))
    await commits.settled()  # the snapshot, taken in a task of its own
    assert log == [
        "event",
        "event",
        "commit(compact=False)",  # one commit for the batch
        "publish",
        "reply a",
        "reply b",
        "compact",
    ]


async def test_a_failed_commit_publishes_nothing_and_takes_no_snapshot() -> None:
    log: list[str] = []
    core = FakeCore(log, fail=True)
    lock = asyncio.Lock()

    async def publish() -> None:
        log.append("publish")

    commits = GroupCommit(core, lock, publish)
    async with lock:
        core.handle()
    with pytest.raises(OSError, match="disk full"):
        await commits.durable()
    await commits.settled()
    assert log == ["event"]
