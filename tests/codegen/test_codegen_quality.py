"""Generated code is lint-clean, typed, and imports nothing but aegis.values, statemachine
and the standard library modules in ALLOWED."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.codegen.conftest import Build

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {
    "__future__",
    "collections",
    "dataclasses",
    "enum",
    "functools",
    "itertools",
    "operator",
    "typing",
    "statemachine",
}


@pytest.mark.parametrize("name", ["Jobs", "Raw"])
def test_generated_imports(build: Build, name: str) -> None:
    for file, text in build(name).gen.files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                top = (node.module or "").split(".")[0]
                assert node.module == "aegis.values" or top in ALLOWED, (file, node.module)
            elif isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in ALLOWED for a in node.names), file


@pytest.mark.parametrize("name", ["Jobs", "Raw", "Exprs"])
def test_generated_code_passes_ruff(build: Build, name: str) -> None:
    pkg = str(build(name).out)
    cfg = str(ROOT / "pyproject.toml")
    check = [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", cfg, pkg]
    done = subprocess.run(check, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    fmt = [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "--config", cfg, pkg]
    done = subprocess.run(fmt, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


RUNTIME_USE = """\
from jobs import ACTIONS, PHASE_TRANSITIONS, Label, defs

info = ACTIONS[Label.Work]
by_text = ACTIONS["Work"]
labels: list[str] = [label for label, _, _ in PHASE_TRANSITIONS]
retried = Label.Wrok
"""


@pytest.mark.slow
def test_generated_code_passes_mypy_and_a_renamed_label_fails_it(
    build: Build, tmp_path: Path
) -> None:
    shutil.copytree(build("Jobs").out / "jobs", tmp_path / "jobs")
    (tmp_path / "runtime_use.py").write_text(RUNTIME_USE, encoding="utf-8")
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    done = subprocess.run(
        [*cmd, "jobs", "runtime_use.py"], capture_output=True, text=True, cwd=tmp_path
    )
    errors = [ln for ln in done.stdout.splitlines() if ": error:" in ln]
    assert errors == [
        'runtime_use.py:6: error: "type[Label]" has no attribute "Wrok"  [attr-defined]'
    ]
