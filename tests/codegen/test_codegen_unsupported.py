"""Constructs outside the supported subset fail generation with a located error.

fixtures/Unsupported.tla marks each case inline: `\\* error: TEXT` (or `error@LINE:` when
the error is reported where the construct is defined).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from codegen.checks import check_spec
from codegen.emit import emit
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.ir import Config
from codegen.pipeline import generate
from codegen.sany import export_xml
from codegen.structure import build_spec

SPEC = Path(__file__).parent / "fixtures" / "Unsupported.tla"
SHOWN = "tests/codegen/fixtures/Unsupported.tla"


def _cases() -> list[tuple[str, int, str]]:
    """(Next operator, expected line, expected text) from the fixture's markers."""
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    cases = []
    for number, line in enumerate(lines, start=1):
        if "\\* error" not in line or " == " not in line:
            continue
        name = line.split(" == ")[0]
        marker = line.split("\\* error", 1)[1]
        where, _, text = marker.partition(": ")
        expected_line = int(where[1:]) if where.startswith("@") else number
        nxt = name if name.startswith("Next") else f"Next{name}"
        cases.append((nxt, expected_line, text.strip()))
    return cases


@pytest.fixture(scope="module")
def xml() -> bytes:
    return export_xml(SPEC)


@pytest.mark.parametrize(("nxt", "line", "text"), _cases(), ids=[c[0] for c in _cases()])
def test_unsupported_construct_is_located(xml: bytes, nxt: str, line: int, text: str) -> None:
    index = ModuleIndex(xml, SPEC, SHOWN)
    with pytest.raises(CodegenError) as err:
        spec = build_spec(index, Config("Unsupported.cfg", init="Init", next=nxt))
        check_spec(spec)
        emit(spec)
    assert isinstance(err.value, SpecError)
    assert text in str(err.value)
    assert str(err.value).startswith(f"{SHOWN}:{line}:"), str(err.value)


def test_every_case_is_tested() -> None:
    assert len(_cases()) == 14


def test_sany_parse_error_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "Bad.tla"
    bad.write_text("---- MODULE Bad ----\nVARIABLE x\nInit == x = y\n====\n")
    (tmp_path / "Bad.cfg").write_text("INIT Init\nNEXT Init\n")
    with pytest.raises(
        SpecError, match=r"(?s)Bad.tla: SANY rejected the spec.*Unknown operator: `y'"
    ):
        generate(bad)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (
            Config("M.cfg", init="Init", next="Next", invariants=("Nope",)),
            "no definition named Nope",
        ),
        (
            Config("M.cfg", init="Init", next="Next", constants={"Extra": 1}),
            "Extra is not a CONSTANT",
        ),
        (
            Config("M.cfg", init="Init", next="Next", invariants=("Flip",)),
            "must be a state predicate",
        ),
        (Config("M.cfg", init="Init", next="Next", action_constraints=("X",)), "ACTION_CONSTRAINT"),
        (Config("M.cfg"), "needs SPECIFICATION, or INIT and NEXT"),
    ],
)
def test_cfg_is_checked(fixtures_dir: Path, cfg: Config, message: str, toggle_xml: bytes) -> None:
    index = ModuleIndex(toggle_xml, fixtures_dir / "Toggle.tla", "Toggle.tla")
    with pytest.raises(CodegenError, match=message):
        check_spec(build_spec(index, cfg))


@pytest.fixture(scope="module")
def toggle_xml(fixtures_dir: Path) -> bytes:
    return export_xml(fixtures_dir / "Toggle.tla")
