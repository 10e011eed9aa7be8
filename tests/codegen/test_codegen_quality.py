"""Generated code is lint-clean, typed, and imports nothing but aegis.values and statemachine."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"__future__", "collections", "dataclasses", "itertools", "typing", "statemachine"}


@pytest.mark.parametrize("name", ["Jobs", "Raw"])
def test_generated_imports(build, name: str) -> None:
    for file, text in build(name).gen.files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                top = (node.module or "").split(".")[0]
                assert node.module == "aegis.values" or top in ALLOWED, (file, node.module)
            elif isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in ALLOWED for a in node.names), file


@pytest.mark.parametrize("name", ["Jobs", "Raw", "Exprs"])
def test_generated_code_passes_ruff(build, name: str) -> None:
    pkg = str(build(name).out)
    cfg = str(ROOT / "pyproject.toml")
    check = [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", cfg, pkg]
    done = subprocess.run(check, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    fmt = [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "--config", cfg, pkg]
    done = subprocess.run(fmt, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.slow
def test_generated_code_passes_mypy(build, tmp_path: Path) -> None:
    shutil.copytree(build("Jobs").out / "jobs", tmp_path / "jobs")
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "jobs"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
