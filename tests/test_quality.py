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


def test_tools_whose_output_is_compared_are_pinned() -> None:
    """A fresh install resolves the generator and checkers the committed files were made with.

    grpcio-tools writes the committed gRPC stubs (its version is in them), ruff formats the
    generated code and judges the tree, mypy and its stub packages judge the types: a range
    lets a new release change their output on a fresh install and fail CI with no change here.
    """
    import tomllib

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = dict(req.split("==", 1) for req in dev["dev"] if "==" in req)
    for tool in ("grpcio-tools", "ruff", "mypy", "types-protobuf", "types-PyYAML"):
        assert tool in pins, f"{tool} must be pinned with == in pyproject's dev extra"
    stub = ROOT / "aegis/runtime/transport/proto/credentials_pb2_grpc.py"
    assert f"GRPC_GENERATED_VERSION = '{pins['grpcio-tools']}'" in stub.read_text()
