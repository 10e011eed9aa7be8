"""Constructs outside the supported subset fail generation with a located error.

fixtures/Unsupported.tla marks each case inline: `\\* error: TEXT` (or `error@LINE:` when
the error is reported where the construct is defined).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aegis.errors import SpecError
from codegen import ir, pipeline
from codegen.checks import check_spec
from codegen.emit import emit
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.pipeline import generate, load, write
from codegen.structure import build_spec
from tools.tlc.cfg import TlcConfig, parse_cfg
from tools.tlc.sany import export_xml

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
        spec = build_spec(index, TlcConfig(display="Unsupported.cfg", init="Init", next=nxt))
        check_spec(spec)
        emit(spec)
    assert isinstance(err.value, SpecError)
    assert text in str(err.value)
    assert str(err.value).startswith(f"{SHOWN}:{line}:"), str(err.value)


def test_every_case_is_tested() -> None:
    assert len(_cases()) == 13


def test_a_temporal_formula_in_an_action_is_refused_with_sanys_level_error(
    tmp_path: Path,
) -> None:
    # SANY's level check rejects it (TLC does not run it); the XML exporter prints the error
    # but exports the spec all the same, so generation must read its errors
    spec = tmp_path / "Temp.tla"
    spec.write_text(
        "---- MODULE Temp ----\nVARIABLE x\nInit == x = 0\nNext == [](x = 0) /\\ x' = x\n====\n"
    )
    (tmp_path / "Temp.cfg").write_text("INIT Init\nNEXT Next\n")
    with pytest.raises(
        SpecError,
        match=r"(?s)Temp.tla: SANY rejected the spec:\n.*Temp\.tla:4:9: \\land has both "
        r"temporal formula and action as arguments",
    ):
        generate(spec)


def test_sany_parse_error_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "Bad.tla"
    bad.write_text("---- MODULE Bad ----\nVARIABLE x\nInit == x = y\n====\n")
    (tmp_path / "Bad.cfg").write_text("INIT Init\nNEXT Init\n")
    with pytest.raises(
        SpecError, match=r"(?s)Bad.tla: SANY rejected the spec.*Unknown operator: `y'"
    ):
        generate(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("INIT Init NEXT Next\nINVARIANT Nope\n", "no definition named Nope"),
        ("INIT Init\nNEXT Next\nCONSTANTS\n  Extra = 1\n", r"^M\.cfg:4: Extra is not a CONSTANT"),
        ("INIT Init NEXT Next\nINVARIANT Flip\n", "must be a state predicate"),
        ("INIT Init NEXT Next\nACTION_CONSTRAINT X\n", r"^M\.cfg:2: ACTION_CONSTRAINT X is not"),
        ("INVARIANT CountOK\n", r"^M\.cfg: needs SPECIFICATION, or INIT and NEXT"),
    ],
)
def test_cfg_is_checked(fixtures_dir: Path, text: str, message: str, toggle_xml: bytes) -> None:
    index = ModuleIndex(toggle_xml, fixtures_dir / "Toggle.tla", "Toggle.tla")
    with pytest.raises(CodegenError, match=message):
        check_spec(build_spec(index, parse_cfg(text, display="M.cfg")))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "INIT Init\nNEXT Next\nCONSTANT\n  Limit ? 3\n",
            r":4: expected `=` or `<-` after 'Limit'",
        ),
        (  # outside TLC's cfg grammar: TLC's own words
            "INIT Init\nNEXT Next\nCONSTANT\n  Limit = {1,\n",
            r":4: TLC refuses the value of Limit: It was expecting }, but did not find it",
        ),
        ("INIT Init\nNEXT Next,\n", r":2: unexpected ',' where a keyword"),
    ],
)
def test_cfg_syntax_errors_are_located(
    fixtures_dir: Path, tmp_path: Path, text: str, message: str
) -> None:
    spec = tmp_path / "Toggle.tla"
    shutil.copy(fixtures_dir / "Toggle.tla", spec)
    (tmp_path / "Toggle.cfg").write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=r"^(.*/)?Toggle\.cfg" + message):
        generate(spec)


@pytest.fixture(scope="module")
def toggle_xml(fixtures_dir: Path) -> bytes:
    return export_xml(fixtures_dir / "Toggle.tla")


COUNTER = "---- MODULE Counter ----\nEXTENDS Naturals\nVARIABLES pc, n\nBump == n' = n + 1\n====\n"


def _with_counter(tmp_path: Path, instance: str) -> Path:
    """A PlusCal-shaped spec whose line 5 instantiates Counter (and uses none of it)."""
    (tmp_path / "Counter.tla").write_text(COUNTER, encoding="utf-8")
    spec = tmp_path / "Inst.tla"
    spec.write_text(
        "---- MODULE Inst ----\nEXTENDS Naturals\nVARIABLES pc, n\nvars == << pc, n >>\n"
        f'{instance}\nInit == n = 0 /\\ pc = "step"\n'
        "step == /\\ pc = \"step\"\n    /\\ n < 2\n    /\\ n' = n + 1\n    /\\ pc' = pc\n"
        "Next == step\nSpec == Init /\\ [][Next]_vars\n====\n",
        encoding="utf-8",
    )
    (tmp_path / "Inst.cfg").write_text("SPECIFICATION Spec\n", encoding="utf-8")
    return spec


def test_an_instantiated_module_does_not_leak_its_declarations(tmp_path: Path) -> None:
    # SANY's XML also lists Counter's own pc and n: they once made State(pc=pc, n=n, pc=pc, ...)
    spec = _with_counter(tmp_path, "INSTANCE Counter")
    gen = generate(spec)
    write(gen, tmp_path / "out")
    m = load(tmp_path / "out", gen.package)
    assert m.VARIABLES == ("pc", "n")
    assert [s.n for s in m.initial_states(m.CFG_CONSTANTS)] == [0]


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("model.py", "\nclass Label(", "\nOops = Undefined\n\n\nclass Label(", "NameError"),
        (
            "actions.py",
            "return list(dict.fromkeys(_init(c)))",
            "return list(dict.fromkeys(_init(c))) + [1 // 0]",
            "ZeroDivisionError",
        ),
        (  # the first step, not Init, fails: found all the same
            "actions.py",
            ') -> Iterator[Successor]:\n    """Flip',
            ') -> Iterator[Successor]:\n    yield Undefined\n    """Flip',
            "NameError",
        ),
    ],
)
def test_generated_code_that_does_not_run_is_a_generator_error(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch, file: str, old: str, new: str, message: str
) -> None:
    real = pipeline.emit

    def broken(spec: ir.Spec) -> dict[str, str]:
        files = real(spec)
        assert old in files[file]
        return {**files, file: files[file].replace(old, new, 1)}

    monkeypatch.setattr(pipeline, "emit", broken)
    with pytest.raises(CodegenError, match=rf"does not run \({file}:\d+: {message}"):
        generate(fixtures_dir / "Toggle.tla")
