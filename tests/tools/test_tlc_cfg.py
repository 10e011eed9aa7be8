"""The TLC config reader: names, constants, comments, line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from tools.tlc.cfg import parse_cfg, read_cfg

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
    assert set(cfg.constants) == {"Workers", "MaxRetry", "Name", "Op"}
    assert cfg.constants["MaxRetry"] == "2"
    assert cfg.constants["Op"] == "DefOp"
    assert cfg.constants["Name"] == '"a \\* not a comment"'
    assert " ".join(cfg.constants["Workers"].split()) == "{w1, w2, w3}"
    assert cfg.lines["RetriesBound"] == 12
    assert cfg.lines["MaxRetry"] == 5


def test_init_next_form() -> None:
    cfg = parse_cfg("INIT Init\nNEXT Next\nINVARIANT TypeOK")
    assert (cfg.init, cfg.next, cfg.invariants) == ("Init", "Next", ("TypeOK",))


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"missing\.cfg: model config not found"):
        read_cfg(tmp_path / "missing.cfg")
    with pytest.raises(SpecError, match=r"<cfg>:2: expected `=`"):
        parse_cfg("CONSTANTS\n  N 3\n")
