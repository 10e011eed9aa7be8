"""OrderVersions: which order a pod must hold by now, and when its order goes again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aegis.runtime.controller.order_versions import OrderVersions, order_grace

G = 2.0  # the grace in these tests


def test_a_version_is_required_only_once_the_grace_has_passed() -> None:
    v = OrderVersions(G)
    assert v.required(100.0) == -1  # nothing published
    v.published(10.0, 5)
    assert v.required(11.9) == -1
    assert v.required(12.0) == 5
    v.published(13.0, 9)
    assert v.required(14.0) == 5  # 9 is still within its grace
    assert v.required(15.0) == 9
    v.published(20.0, 9)  # the same state published again (a restart): no new requirement
    assert v.required(21.0) == 9


def test_a_pod_behind_is_sent_its_order_once_per_grace_until_it_catches_up() -> None:
    v = OrderVersions(G)
    v.published(0.0, 3)
    assert not v.missed("p", 3, 3, 5.0)  # holds it
    assert not v.missed("p", 4, 4, 5.0)  # newer (an ACK's reply): not behind
    assert v.missed("p", 2, 2, 5.0)
    assert not v.missed("p", 2, 2, 6.9)  # the order just sent may still be on its way
    assert v.missed("p", 2, 2, 7.0)  # that one was lost too
    assert not v.missed("p", 3, 3, 7.5)  # caught up
    v.published(8.0, 6)
    assert v.missed("p", 3, 3, 10.0)  # behind again: no wait left over from before
    assert not v.missed("p", None, None, 100.0)  # a heartbeat that does not say: never


def test_a_pod_behind_on_its_own_order_is_sent_it_though_it_has_the_broadcast() -> None:
    v = OrderVersions(G)
    v.published(0.0, 4, ("a",))  # a's own order and the broadcast of version 4
    assert v.missed("a", 4, 3, 2.0)  # it got the broadcast, not its own order
    assert not v.missed("b", 4, -1, 2.0)  # b had no order of its own
    assert not v.missed("a", 4, 4, 4.0)
    v.published(5.0, 7, ("a",))
    assert not v.missed("a", 7, 4, 6.0)  # within the grace of a's new order
    assert v.missed("a", 7, 4, 7.0)


publications = st.lists(
    st.tuples(st.floats(0.0, 5.0), st.integers(0, 3)), min_size=0, max_size=30
)  # (time since the one before, version step: 0 is the same state published again)


@given(publications, st.floats(0.0, 200.0))
def test_required_is_the_newest_version_published_a_grace_ago(
    steps: list[tuple[float, int]], at: float
) -> None:
    """Against a direct reading of the definition over the whole history (the class keeps
    only what it still needs); times asked in increasing order, as a controller does."""
    v = OrderVersions(G)
    history: list[tuple[float, int]] = []
    now, version = 0.0, 0
    for gap, step in steps:
        now, version = now + gap, version + step
        v.published(now, version)
        history.append((now, version))
        ask = now + at / 40  # some time after this publication
        expected = max((ver for t, ver in history if t <= ask - G), default=-1)
        assert v.required(ask) == expected
        now = ask


def test_the_grace_is_one_heartbeat_interval_within_bounds() -> None:
    assert order_grace(10.0) == 2.5  # aegis run's default timeout: its beat interval
    assert order_grace(2.0) == 1.0  # never under 1 s
    assert order_grace(60.0) == 5.0  # never over 5 s
    assert order_grace(0.0) == 5.0  # no timeout (no loss declared): the longest
