"""Check a run's step log both ways: the fast replay through the generated tables and TLC
itself (`aegis spec validate-log`, one JVM per log)."""

from __future__ import annotations

from pathlib import Path

from aegis.generated.aegis_phase import Constants
from aegis.runtime.trace_check import check_steplog
from aegis.tracevalidate import render_mismatch, validate_log


def steplog_ok(path: Path, constants: Constants) -> int:
    """Assert that the tables and TLC accept the log (whose constants must be `constants`);
    the number of steps."""
    checked = check_steplog(path, constants)
    assert checked > 0, f"{path}: no steps"
    verdict = validate_log(path)
    assert verdict.matched, render_mismatch(verdict.first_mismatch)  # type: ignore[arg-type]
    assert verdict.steps == checked
    return checked
