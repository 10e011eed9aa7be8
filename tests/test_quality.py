"""Repository-wide checks that run with the test suite: lint, types, layering, generated code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "cmd",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        (sys.executable, "-m", "mypy"),
        ("lint-imports",),
    ],
    ids=["ruff", "ruff-format", "mypy", "import-layers"],
)
def test_static_check_is_clean(cmd: tuple[str, ...]) -> None:
    proc = run(*cmd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_generated_code_is_current() -> None:
    proc = run(sys.executable, "-m", "aegis.cli", "spec", "gen", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_spec_translation_is_current() -> None:
    from tools.tlc import check_translation

    check_translation(ROOT / "spec" / "AegisPhase.tla")
