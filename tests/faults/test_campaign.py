"""tests/faults/campaign.py: schedules run J at once, each exactly once; flags are checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import campaign
from .schedules import Result

OPTS = (False, None, 150.0, False, None)


def fake_runner(seed: int, opts: tuple[object, ...]) -> tuple[Result, str]:
    """Stands in for a real job: says which worker process ran the seed."""
    assert opts == OPTS
    return Result(seed, f"pid {os.getpid()}", "ok", phase="Succeed"), "recovered"


@settings(max_examples=5, deadline=None)
@given(n=st.integers(0, 12), jobs=st.integers(1, 3))
def test_every_seed_runs_once_in_worker_processes(n: int, jobs: int) -> None:
    out = list(campaign.run_all(range(100, 100 + n), OPTS, jobs, None, runner=fake_runner))
    assert sorted(r.seed for r, _ in out) == list(range(100, 100 + n))
    assert {cat for _, cat in out} <= {"recovered"}
    # a schedule never runs in the bench's own process (its faults kill process trees)
    assert all(r.schedule != f"pid {os.getpid()}" for r, _ in out)


def test_no_schedule_starts_once_the_budget_is_spent() -> None:
    assert list(campaign.run_all(range(5), OPTS, 2, 0.0, runner=fake_runner)) == []


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--jobs", "0", "must be at least 1"),
        ("-n", "-3", "must be at least 1"),
        ("--limit", "nan", "finite number above 0"),
        ("--budget", "-1", "finite number above 0"),
        ("--drop-orders", "1.5", "between 0 and 1"),
    ],
)
def test_a_bad_number_is_refused_before_any_job_starts(
    flag: str,
    value: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    started: list[object] = []

    def record(*args: object, **kwargs: object) -> list[tuple[Result, str]]:
        started.append(args)
        return []

    monkeypatch.setattr(campaign, "run_all", record)
    monkeypatch.setattr("sys.argv", ["campaign.py", flag, value])
    with pytest.raises(SystemExit) as exc:
        campaign.main()
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert started == []


@pytest.mark.parametrize(
    ("verdict", "phase", "terminal", "column"),
    [
        ("ok", "Succeed", None, "recovered"),
        ("ok", "Failed", None, "failed as expected"),
        ("ok", None, "launcher_kill", "launcher killed"),
        ("ok", "Failed", "launcher_kill", "failed as expected"),
        ("hung", None, None, "hung"),
        ("wrong-count", "Succeed", None, "wrong counts"),
    ],
)
def test_each_outcome_lands_in_its_column(
    verdict: str, phase: str | None, terminal: str | None, column: str
) -> None:
    assert campaign.category(verdict, phase, terminal) == column
    assert column in campaign.COLUMNS


@pytest.mark.parametrize("verdict", ["hung", "ok"])
def test_a_bad_run_leaves_its_directory_where_keep_says(
    verdict: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_schedule(s: object, tmp: Path, limit: float) -> Result:
        (tmp / "run.err").write_text("the launcher's last words\n")
        return Result(7, "nats_kill", verdict)

    monkeypatch.setattr(campaign, "run_schedule", fake_schedule)
    keep = tmp_path / "kept"
    r, _ = campaign.run_one(7, (False, None, 150.0, False, str(keep)))
    assert r.verdict == verdict
    kept = keep / "seed-7" / "run.err"
    if verdict == "ok":
        assert not keep.exists()  # a good run leaves nothing behind
    else:
        assert kept.read_text() == "the launcher's last words\n"
