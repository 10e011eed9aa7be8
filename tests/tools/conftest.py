"""Shared fixtures for the TLC tooling tests: fixture specs and one TLC run per model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools.tlc import TlcResult, run_tlc

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The directory of fixture specs (read-only: tests copy before editing)."""
    return FIXTURES


@pytest.fixture(scope="session")
def counter_ok() -> TlcResult:
    """Counter with Counter.cfg: passes."""
    return run_tlc(FIXTURES / "Counter.tla")


@pytest.fixture(scope="session")
def counter_small() -> TlcResult:
    """Counter with CounterSmall.cfg: invariant Small violated."""
    return run_tlc(FIXTURES / "Counter.tla", FIXTURES / "CounterSmall.cfg")


@pytest.fixture
def twoprocs(tmp_path: Path) -> Path:
    """A private copy of the PlusCal fixture (spec and cfg) that a test may edit."""
    for name in ("TwoProcs.tla", "TwoProcs.cfg"):
        shutil.copyfile(FIXTURES / name, tmp_path / name)
    return tmp_path / "TwoProcs.tla"
