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


# the limits on hand-written code: a module a newcomer can read, functions a reviewer can follow
# (radon's cyclomatic complexity; docs/design.md, "The controller core decides; its parts keep")
HAND_WRITTEN = ("aegis", "codegen", "tools", "bench")
MAX_MODULE_LINES = 600
MAX_FUNCTION_CC = 20
MAX_FUNCTIONS_OVER_10 = 50


def _hand_written_modules() -> list[Path]:
    return [
        path
        for top in HAND_WRITTEN
        for path in sorted((ROOT / top).rglob("*.py"))
        if "generated" not in path.relative_to(ROOT).parts
        and not path.stem.endswith(("_pb2", "_pb2_grpc"))
    ]


def _functions(path: Path) -> list[tuple[str, int]]:
    """(where, complexity) of every function and method in the module, as `radon cc` lists
    them (a closure's complexity counts in its function's)."""
    from radon.complexity import cc_visit
    from radon.visitors import Function

    return [
        (f"{path.relative_to(ROOT)}:{block.lineno} {block.fullname}", block.complexity)
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if isinstance(block, Function)
    ]


def test_no_hand_written_module_is_over_its_length() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in _hand_written_modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, long


def test_functions_stay_within_their_complexity() -> None:
    functions = [f for path in _hand_written_modules() for f in _functions(path)]
    over_limit = [f"{where} (CC {cc})" for where, cc in functions if cc > MAX_FUNCTION_CC]
    assert not over_limit, over_limit
    complex_ = [where for where, cc in functions if cc > 10]
    assert len(complex_) <= MAX_FUNCTIONS_OVER_10, f"{len(complex_)} functions over CC 10"
