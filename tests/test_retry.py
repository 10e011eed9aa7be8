"""aegis.retry: one primitive, its schedules named settings (each kept at the numbers it had
where it was written by hand)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis import retry
from aegis.retry import Backoff, RetryPolicy


def test_each_policy_keeps_its_numbers() -> None:
    assert list(retry.STATUS_SAVE.pauses()) == [0.05, 0.1, 0.2, 0.4]  # < 1 s in all
    assert list(retry.NATS_RESTART.pauses()) == [0.5, 1.0, 2.0, 4.0]  # 5 tries
    assert list(retry.CR_CONFLICT.pauses()) == [0.0] * 4  # 5 patches, at once
    process = Backoff(retry.CREDENTIAL_PROCESS)
    assert [process.next() for _ in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    kube = Backoff(retry.KUBE_CONTROLLER)
    assert 0.25 <= kube.next() <= 0.5 and max(kube.next() for _ in range(20)) <= 30.0
    assert (retry.CREDENTIALS.tries, retry.AGENT_CREDENTIALS.tries) == (5, 1000)


@given(
    st.floats(0.001, 10),
    st.floats(1, 100),
    st.floats(1, 4),
    st.integers(1, 200),
)
def test_a_jittered_pause_is_between_half_and_all_of_its_capped_delay(
    first: float, cap: float, factor: float, failures: int
) -> None:
    policy = RetryPolicy("p", first, cap, factor=factor, jitter=True)
    delay = min(cap, first * factor ** min(failures - 1, 60))
    assert delay / 2 <= policy.pause(failures) <= delay


def test_a_backoff_starts_over_after_a_success() -> None:
    backoff = Backoff(RetryPolicy("p", 0.5, 4.0, jitter=True))
    delays = [backoff.next() for _ in range(50)]
    assert delays[0] <= 0.5 and max(delays) <= 4.0 and min(delays[5:]) >= 2.0
    backoff.reset()
    assert backoff.next() <= 0.5 and not backoff.exhausted


def test_call_tries_as_often_as_its_policy_says_then_raises_the_last_failure() -> None:
    slept: list[float] = []
    seen: list[int] = []
    tries = iter(range(10))

    def flaky() -> str:
        if next(tries) < 4:
            raise OSError("not yet")
        return "done"

    policy = retry.STATUS_SAVE
    assert retry.call(flaky, policy, OSError, lambda n, e: seen.append(n), slept.append) == "done"
    assert (slept, seen) == ([0.05, 0.1, 0.2, 0.4], [1, 2, 3, 4])

    def broken() -> str:
        raise OSError("never")

    with pytest.raises(OSError, match="never"):
        retry.call(broken, policy, OSError, sleep=slept.append)
    assert len(slept) == 4 + 4  # no pause after the last try


def test_an_error_it_does_not_retry_goes_through_at_once() -> None:
    calls: list[int] = []

    def wrong() -> None:
        calls.append(1)
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        retry.call(wrong, retry.STATUS_SAVE, OSError, sleep=lambda s: None)
    assert calls == [1]


async def test_call_async_awaits_its_pauses_and_stops_when_told() -> None:
    calls: list[int] = []

    async def down() -> None:
        calls.append(1)
        raise OSError("down")

    def give_up(failures: int, exc: BaseException) -> None:
        if failures == 2:
            raise RuntimeError("gave up")  # e.g. a rollback and PersistenceError

    quick = RetryPolicy("quick", 0.001, 0.001, tries=5)
    with pytest.raises(RuntimeError, match="gave up"):
        await retry.call_async(down, quick, OSError, give_up)
    assert calls == [1, 1]
