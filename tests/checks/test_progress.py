"""Progress signals: a one-line API in the training script, a reader in the agent."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aegis.checks import progress as prog
from aegis.checks.local import check_hang
from aegis.checks.params import CheckParams


@pytest.fixture
def progress_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "progress.json"
    monkeypatch.setenv(prog.PROGRESS_FILE_ENV, str(path))
    monkeypatch.setenv(prog.PROGRESS_INTERVAL_ENV, "0")
    return path


def test_round_trip(progress_file: Path) -> None:
    before = time.time()
    prog.progress(7)
    prog.checkpoint_done(5)
    prog.progress(8)
    rec = prog.read_progress(progress_file)
    assert rec is not None
    assert (rec.step, rec.checkpoint_step) == (8, 5)
    assert rec.time is not None and rec.time >= before
    assert rec.age() is not None and 0 <= rec.age() < 60  # type: ignore[operator]
    assert [p.name for p in progress_file.parent.iterdir()] == ["progress.json"]  # no temp left


def test_writes_are_throttled_but_checkpoints_are_not(
    progress_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(prog.PROGRESS_INTERVAL_ENV, "3600")
    prog.progress(1)
    prog.progress(2)  # within the interval: kept in memory only
    rec = prog.read_progress(progress_file)
    assert rec is not None and rec.step == 1
    prog.checkpoint_done(2)
    rec = prog.read_progress(progress_file)
    assert rec is not None and (rec.step, rec.checkpoint_step) == (2, 2)


def test_no_op_without_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(prog.PROGRESS_FILE_ENV, raising=False)
    prog.progress(1)
    prog.checkpoint_done(1)
    assert list(tmp_path.iterdir()) == []
    assert prog.read_progress(tmp_path / "missing.json") is None


def test_hang_check_reads_the_file(progress_file: Path) -> None:
    prog.progress(3)
    params = CheckParams(progress_file=str(progress_file), hang_threshold_s=60)
    assert check_hang(params).passed
    late = check_hang(params, now=time.time() + 120)
    assert late.failed and "no progress for" in late.result
    none = check_hang(CheckParams())
    assert not none.applicable and none.passed and "no progress source" in none.result


def test_hang_check_without_a_record_is_not_applicable(tmp_path: Path) -> None:
    r = check_hang(CheckParams(progress_file=str(tmp_path / "never-written.json")))
    assert r.passed and not r.applicable and "holds no progress record" in r.result
