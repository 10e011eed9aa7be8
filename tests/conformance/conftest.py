"""Shared TLC runs: each model is model-checked once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.conformance.session import Baseline, baseline

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "AegisPhase.tla"
SMALL_CFG = Path(__file__).parent / "models" / "AegisPhase_maxretry1.cfg"


@pytest.fixture(scope="session")
def main_baseline() -> Baseline:
    """spec/AegisPhase.cfg: TLC's graph and probe verdicts."""
    return baseline(SPEC)


@pytest.fixture(scope="session")
def small_baseline() -> Baseline:
    """The MaxRetry = 1 model, whose constants differ from the generated module's cfg."""
    return baseline(SPEC, SMALL_CFG)
