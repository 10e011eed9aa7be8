"""GroupCommit's order of effects: durable, then published, then the waiters released, and only
then the (O(pods)) snapshot, which a fault's order must not wait for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from aegis.runtime.controller.group_commit import GroupCommit


class FakeCore:
    """Records what the group commit asks of the controller core, in order."""

    def __init__(self, log: list[str], *, fail: bool = False, due: bool = True) -> None:
        self.log = log
        self.fail = fail
        self._dirty = False
        self.published = True
        self.due = due  # a snapshot falls due after each commit

    @property
    def snapshot_due(self) -> bool:
        return self.due and not self._dirty and self.log[-1:] != ["compact"]

    @property
    def dirty(self) -> bool:
        return self._dirty

    @property
    def needs_publish(self) -> bool:
        return not self.published

    def handle(self) -> None:
        self._dirty, self.published = True, False
        self.log.append("event")

    async def commit_async(self, run: Callable[[Callable[[], None]], Awaitable[None]]) -> None:
        if self.fail:
            self._dirty = False
            raise OSError("disk full")
        await run(lambda: self.log.append("commit"))
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
        "commit",  # one commit for the batch
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


def _service(core: FakeCore, log: list[str], **delays: float) -> tuple[asyncio.Lock, GroupCommit]:
    lock = asyncio.Lock()

    async def publish() -> None:
        log.append("publish")
        core.published = True

    return lock, GroupCommit(core, lock, publish, **delays)


async def _event(core: FakeCore, lock: asyncio.Lock, commits: GroupCommit) -> None:
    async with lock:
        core.handle()
    await commits.durable()


async def test_a_due_snapshot_waits_for_the_events_right_behind_it() -> None:
    # a fault's commit makes a snapshot due; the replacement's join comes next: it is
    # committed and published first, the snapshot only once the commits pause
    log: list[str] = []
    core = FakeCore(log)
    lock, commits = _service(core, log, quiet_s=2.0, max_delay_s=30.0)
    await _event(core, lock, commits)  # the loss
    await _event(core, lock, commits)  # the join, well within the quiet time
    assert "compact" not in log
    await commits.settled()
    assert log == ["event", "commit", "publish"] * 2 + ["compact"]


async def test_commits_that_never_pause_delay_the_snapshot_no_longer_than_the_bound() -> None:
    log: list[str] = []
    core = FakeCore(log)
    lock, commits = _service(core, log, quiet_s=30.0, max_delay_s=0.1)
    for _ in range(30):  # 0.3 s or more of commits 10 ms apart: past the bound
        await _event(core, lock, commits)
        await asyncio.sleep(0.01)
    await commits.settled()
    assert log.count("compact") >= 1
    assert log.index("compact") < len(log) - 3  # taken while the commits went on


async def test_no_snapshot_task_when_none_is_due() -> None:
    log: list[str] = []
    core = FakeCore(log, due=False)
    lock, commits = _service(core, log)
    await _event(core, lock, commits)
    assert not commits._flushes  # nothing waits to snapshot
    await commits.finish()
    assert "compact" not in log


async def test_finish_takes_a_waiting_snapshot_at_once() -> None:
    log: list[str] = []
    core = FakeCore(log)
    lock, commits = _service(core, log, quiet_s=60.0, max_delay_s=60.0)
    await _event(core, lock, commits)
    started = asyncio.get_running_loop().time()
    await commits.finish()  # the job ended: status.json must show it before the exit
    assert log[-1] == "compact" and log.count("compact") == 1
    assert asyncio.get_running_loop().time() - started < 30  # not the minute it would wait


async def test_finish_commits_an_event_the_exit_cut_short_before_its_snapshot() -> None:
    """An event handled as the job ended (a launcher's second quit, say) whose task the exit
    cancelled before it committed: finish makes it durable, then takes the snapshot. Before,
    the core was left dirty, no snapshot was due, and status.json kept an older phase."""
    log: list[str] = []
    core = FakeCore(log)
    _, commits = _service(core, log, quiet_s=60.0, max_delay_s=60.0)
    core.handle()  # handled, never committed: its flush was never started
    await commits.finish()
    assert log == ["event", "commit", "publish", "compact"]
    assert not core.dirty
