"""The TLC config reader: names, constants, comments, line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from aegis.values import ModelValue
from tools.tlc.cfg import parse_cfg, read_cfg, render_cfg
from tools.tlc.cfgvalues import plain_kind

CFG = """\\* Model for the phase machine.
CONSTANTS
  Workers = {w1, w2,   \\* three would be slow
             w3}
  MaxRetry = 2 Name = "a \\* not a comment"
  Op <- DefOp
(* INVARIANT Hidden
   (* nested *) still hidden *)
SPECIFICATION Spec
INVARIANTS ValidPhase
  RecoverCountBound
INVARIANT RetriesBound
PROPERTY Termination
PROPERTIES Live1 Live2
CONSTRAINT SeqBound
ACTION_CONSTRAINT NoStutter
"""


def test_names_by_section() -> None:
    cfg = parse_cfg(CFG)
    assert cfg.specification == "Spec"
    assert cfg.invariants == ("ValidPhase", "RecoverCountBound", "RetriesBound")
    assert cfg.properties == ("Termination", "Live1", "Live2")
    assert cfg.constraints == ("SeqBound",)
    assert cfg.action_constraints == ("NoStutter",)
    assert "Hidden" not in cfg.invariants


def test_constants_and_lines() -> None:
    cfg = parse_cfg(CFG)
    assert set(cfg.constants) == {"Workers", "MaxRetry", "Name"}
    assert cfg.substitutions == {"Op": "DefOp"}
    assert cfg.constants["MaxRetry"] == "2"
    assert cfg.constants["Name"] == '"a \\* not a comment"'
    assert " ".join(cfg.constants["Workers"].split()) == "{w1, w2, w3}"
    assert cfg.lines["RetriesBound"] == 12
    assert cfg.lines["MaxRetry"] == 5


def test_init_next_form() -> None:
    cfg = parse_cfg("INIT Init\nNEXT Next\nINVARIANT TypeOK")
    assert (cfg.init, cfg.next, cfg.invariants) == ("Init", "Next", ("TypeOK",))


def test_values_are_parsed_on_demand() -> None:
    cfg = parse_cfg('CONSTANTS\n  A = {a, "s", 3}  (* block *)\n  C = <<1, -2>> D = TRUE\n')
    assert cfg.values() == {"A": frozenset({ModelValue("a"), "s", 3}), "C": (1, -2), "D": True}


def test_the_remaining_clauses() -> None:
    cfg = parse_cfg(
        "INIT Init NEXT Next\nSYMMETRY Perms VIEW V\nALIAS A POSTCONDITION P\n"
        "CHECK_DEADLOCK FALSE\n"
    )
    assert (cfg.symmetry, cfg.view, cfg.alias, cfg.postcondition) == ("Perms", "V", "A", "P")
    assert cfg.check_deadlock is False
    assert parse_cfg("CHECK_DEADLOCK TRUE").check_deadlock is True
    assert parse_cfg("INIT Init").check_deadlock is None


def test_render_reads_back_the_same() -> None:
    cfg = parse_cfg(CFG + "SYMMETRY Perms\nCHECK_DEADLOCK FALSE\n")
    again = parse_cfg(render_cfg(cfg))
    fields: tuple[str, ...] = (
        "specification",
        "constants",
        "substitutions",
        "invariants",
        "properties",
    )
    fields += ("constraints", "action_constraints", "symmetry", "check_deadlock")
    for name in fields:
        assert getattr(again, name) == getattr(cfg, name), name


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.cfg: model config not found"):
        read_cfg(tmp_path / "missing.cfg")
    with pytest.raises(SpecError, match=r"<cfg>:2: expected `=`"):
        parse_cfg("CONSTANTS\n  N 3\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\\* a model\nInit\n", r"^M\.cfg:2: unexpected 'Init' where a keyword"),
        ("INIT Init\nINVARIANT A, B\n", r"^M\.cfg:2: expected a name, found ','"),
        ("INIT\n", r"^M\.cfg:1: expected a name after INIT, found the end of the file"),
        ("INIT Init\nNEXT\nINVARIANT I\n", r"^M\.cfg:3: expected a name after NEXT, found 'INV"),
        ("CHECK_DEADLOCK no\n", r"^M\.cfg:1: CHECK_DEADLOCK takes TRUE or FALSE"),
        ("CONSTANTS\n  N =\nINIT Init\n", r"^M\.cfg:2: expected a value after N ="),
        ('CONSTANTS\n  N <- "x"\n', r"^M\.cfg:2: expected a name after N <-, found '\"x\"'"),
        ("CONSTANTS\n  {a} = 1\n", r"^M\.cfg:2: expected a constant's name, found '{'"),
    ],
)
def test_syntax_errors_are_located(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "M.cfg"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=message):
        read_cfg(path, display="M.cfg")


def test_a_bad_value_is_located() -> None:
    cfg = parse_cfg("INIT Init\nCONSTANTS\n  N = 1\n  S = {a,,}\n", display="M.cfg")
    with pytest.raises(SpecError, match=r"^M\.cfg:4: the value of S does not parse"):
        cfg.values()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("3", "int"),
        ('"a \\" b"', "str"),
        ("TRUE", "bool"),
        ("w1", "model"),
        ("{}", "set"),
        ("{w1, w2}", "set"),
        ("{{1}, {2, 3}}", "set"),
        # outside TLC 2.15's grammar, or a set it cannot sort: TLC itself is asked
        ("<<1, 2>>", None),
        ("-3", None),
        ("1..3", None),
        ("[a |-> 1]", None),
        ('{1, "a"}', None),
        ("{1,}", None),
        ("2147483648", None),
    ],
)
def test_values_in_tlcs_cfg_grammar_are_taken_without_asking_tlc(
    text: str, kind: str | None
) -> None:
    assert plain_kind(text) == kind
