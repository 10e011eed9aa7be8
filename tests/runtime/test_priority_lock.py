"""PriorityLock: urgent waiters first, each class in arrival order, the lock handed straight
to the next waiter, and a waiter cancelled before or after it was handed the lock loses
nothing."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.runtime.controller.priority_lock import PriorityLock


async def _queue(
    lock: PriorityLock, urgent: list[bool], served: list[int]
) -> list[asyncio.Task[None]]:
    """One task per flag, started in order, each waiting for the lock (held by the caller)
    and noting its index once it has it."""

    async def waiter(i: int, is_urgent: bool) -> None:
        if is_urgent:
            async with lock.urgent():
                served.append(i)
        else:
            async with lock:
                served.append(i)

    tasks = [asyncio.create_task(waiter(i, u)) for i, u in enumerate(urgent)]
    for _ in range(100):  # each task runs up to its wait within a loop turn or two
        if sum(lock.waiting) == len(urgent):
            return tasks
        await asyncio.sleep(0)
    raise AssertionError(f"waiting {lock.waiting}, expected {len(urgent)} in all")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=12))
def test_urgent_waiters_go_first_each_class_in_arrival_order(urgent: list[bool]) -> None:
    async def run() -> list[int]:
        lock, served = PriorityLock(), list[int]()
        await lock.acquire()
        tasks = await _queue(lock, urgent, served)
        lock.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert not lock.locked()
        return served

    served = asyncio.run(run())
    first = [i for i, u in enumerate(urgent) if u]
    assert served == first + [i for i, u in enumerate(urgent) if not u]


async def test_an_acquirer_that_was_not_waiting_cannot_slip_in() -> None:
    lock, served = PriorityLock(), list[int]()
    await lock.acquire()
    tasks = await _queue(lock, [False], served)
    lock.release()  # handed to the waiter: still locked
    assert lock.locked()
    late = asyncio.create_task(lock.acquire(urgent=True))
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    await asyncio.wait_for(late, 5)  # took it only once the waiter was done
    assert served == [0] and lock.locked()
    lock.release()
    assert not lock.locked()


async def test_a_waiter_cancelled_before_its_turn_is_skipped() -> None:
    lock, served = PriorityLock(), list[int]()
    await lock.acquire()
    tasks = await _queue(lock, [True, False, False], served)
    tasks[0].cancel()
    tasks[1].cancel()
    await asyncio.wait([tasks[0], tasks[1]])
    assert lock.waiting == (0, 1)  # the cancelled ones left the queues
    lock.release()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    assert served == [2] and not lock.locked()
    assert lock.waiting == (0, 0)


async def test_a_waiter_cancelled_as_it_is_handed_the_lock_passes_it_on() -> None:
    lock, served = PriorityLock(), list[int]()
    await lock.acquire()
    tasks = await _queue(lock, [False, False], served)
    lock.release()  # handed to the first waiter, which has not run yet
    tasks[0].cancel()  # and is cancelled before it does
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    assert tasks[0].cancelled() and served == [1]
    assert not lock.locked()


async def test_releasing_a_free_lock_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not held"):
        PriorityLock().release()
