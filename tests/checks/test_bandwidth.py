"""Bus-bandwidth arithmetic and the slow-rank verdict."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.checks.bandwidth import (
    allreduce_bus_factor,
    bus_bandwidth_gbps,
    judge,
    rank_figures,
    slow_in_every,
)


def test_bus_factor_matches_nccl_tests() -> None:
    assert allreduce_bus_factor(1) == 1.0
    assert allreduce_bus_factor(2) == 1.0
    assert allreduce_bus_factor(8) == pytest.approx(1.75)
    assert bus_bandwidth_gbps(10**9, 2.0, 8, iters=4) == pytest.approx(3.5)


@pytest.mark.parametrize(
    ("figures", "slow"),
    [
        ([10.0, 10.0], []),
        ([10.0, 4.0], [1]),
        ([10.0, 9.0, 11.0, 3.0], [3]),
        ([10.0, 6.0, 11.0, 9.0], []),
        ([5.0], []),
    ],
)
def test_slow_is_below_half_the_peers_median(figures: list[float], slow: list[int]) -> None:
    for rank in range(len(figures)):
        v = judge(figures, rank, 0.5)
        assert list(v.slow_ranks) == slow
        assert v.slow == (rank in slow)
    assert judge([5.0], 0, 0.5).peers_median_gbps is None


def test_rank_figures_charge_barrier_skew_to_nobody() -> None:
    # rank 0 left the barrier early and waited 9 ms inside the all_reduce for rank 1
    skewed = [[(0.001, 0.010)] * 3, [(0.001, 0.001)] * 3]
    figures, group = rank_figures(skewed, 10**6)
    assert figures[0] == pytest.approx(figures[1])
    assert group == pytest.approx(1.0)  # 1 MB in the 1 ms the collective really took
    # rank 1 stages slowly in every iteration but one: the median keeps it slow
    slow = [[(0.001, 0.001)] * 3, [(0.020, 0.001), (0.020, 0.001), (0.001, 0.001)]]
    figures, _ = rank_figures(slow, 10**6)
    assert judge(figures, 0, 0.5).slow_ranks == (1,)


def test_a_rank_is_slow_only_when_every_measurement_says_so() -> None:
    stall = [10.0, 3.0, 10.0]  # rank 1 stalled once
    assert slow_in_every([stall], 0.5) == (1,)
    assert slow_in_every([stall, [10.0, 9.0, 10.0]], 0.5) == ()
    assert slow_in_every([stall, [10.0, 2.0, 11.0]], 0.5) == (1,)
    assert slow_in_every([], 0.5) == ()


figure_lists = st.integers(1, 6).flatmap(
    lambda n: st.lists(st.lists(st.floats(0.01, 100), min_size=n, max_size=n), max_size=4)
)


@given(figure_lists, st.floats(0.05, 1.0))
def test_slow_in_every_is_the_intersection_of_the_verdicts(
    measurements: list[list[float]], ratio: float
) -> None:
    slow = set(slow_in_every(measurements, ratio))
    for figures in measurements:
        assert slow <= set(judge(figures, 0, ratio).slow_ranks)
    if measurements:
        common = set.intersection(*(set(judge(f, 0, ratio).slow_ranks) for f in measurements))
        assert slow == common
