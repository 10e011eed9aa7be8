"""burn: a real matmul stress on this machine's CPU, bounded by its budget."""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.checks import burn
from aegis.checks.burn import burn_seconds, check_burn
from aegis.checks.params import CheckParams
from aegis.checks.result import TROUBLESHOOT_CHECKS, CheckType


def test_burn_reports_gflops() -> None:
    r = check_burn(CheckParams(burn_seconds=0.2, burn_size=128))
    assert r.passed and r.applicable and r.check_type == "burn", r
    assert r.details["gflops"] > 0 and r.details["iters"] >= 1
    assert r.details["elapsed_s"] >= 0.2 and r.details["size"] == 128
    assert r.details["seconds"] == 0.2  # its default budget leaves room for the whole length
    assert "GFLOP/s" in r.result and "cut" not in r.result


def test_burn_is_cut_to_fit_its_budget() -> None:
    r = check_burn(CheckParams(burn_seconds=600, burn_size=64, budgets={"burn": 0.4}))
    assert r.passed and "cut from 600 s" in r.result
    assert r.details["seconds"] == pytest.approx(0.3)  # a quarter of the budget kept back
    assert r.details["elapsed_s"] >= 0.3


def test_the_stress_stops_at_the_first_check_past_its_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a clock that advances 0.1 s each time it is read: the burn reads it once to start and
    # once after each matmul, so 0.3 s of burn is exactly 3 matmuls, whatever the load
    ticks = itertools.count(1)
    clock = SimpleNamespace(perf_counter=lambda: next(ticks) * 0.1, monotonic=time.monotonic)
    monkeypatch.setattr(burn, "time", clock)
    r = check_burn(CheckParams(burn_seconds=0.3, burn_size=8))
    assert r.passed and r.details["iters"] == 3, r


@pytest.mark.parametrize("fault", ["gpu_lost", "runtime_error"])
def test_a_device_error_fails_the_burn(fault: str) -> None:
    r = check_burn(CheckParams(burn_seconds=0.2, simulate=(fault,)))
    assert r.failed and r.result.startswith("device error during burn on cpu")
    assert fault in r.result


@given(
    seconds=st.floats(0, 1e4, allow_nan=False),
    budget=st.none() | st.floats(0.01, 1e4, allow_nan=False),
)
def test_burn_length_never_exceeds_what_was_asked_or_the_budget(
    seconds: float, budget: float | None
) -> None:
    params = CheckParams(burn_seconds=seconds, budgets={} if budget is None else {"burn": budget})
    run = burn_seconds(params)
    assert 0 <= run <= seconds
    assert run < params.budget("burn")
    if budget is None:
        assert run == seconds  # the default budget is sized to the burn


def test_burn_is_operator_only() -> None:
    assert CheckType.BURN not in TROUBLESHOOT_CHECKS
