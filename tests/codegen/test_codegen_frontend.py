"""Front end and structure: what the IR says about the fixture specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.values import ModelValue
from codegen import ir
from codegen.cfg import read_config
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.sany import export_xml
from codegen.structure import build_spec


@pytest.fixture(scope="module")
def jobs(fixtures_dir: Path) -> ir.Spec:
    spec = fixtures_dir / "Jobs.tla"
    index = ModuleIndex(export_xml(spec), spec, "Jobs.tla")
    return build_spec(index, read_config(fixtures_dir / "Jobs.cfg", "Jobs.cfg"))


def test_declarations_in_source_order(jobs: ir.Spec) -> None:
    assert jobs.module.constants == ("Workers", "MaxRetry", "Master")
    assert jobs.module.variables == ("phase", "retries", "info", "log", "seen", "pc", "mine")


def test_processes_and_labels(jobs: ir.Spec) -> None:
    ctl, worker = jobs.processes
    assert (ctl.name, ctl.kind, ctl.labels) == ("ctl", "single", ("Ctl",))
    assert isinstance(ctl.ids, ir.Const) and ctl.ids.name == "Master"
    assert (worker.name, worker.kind, worker.labels) == ("worker", "set", ("Work", "Record"))
    labels = [(a.label, a.process, a.self_param is not None) for a in jobs.actions]
    assert labels == [
        ("Ctl", "ctl", False),
        ("Work", "worker", True),
        ("Record", "worker", True),
        ("Terminating", None, False),
    ]


def test_invariants_and_constraint_come_from_the_cfg(jobs: ir.Spec) -> None:
    assert jobs.invariants[:3] == ("ValidPhase", "RetriesBound", "TypeOK")
    assert jobs.constraints == ("InfoBound",)
    assert jobs.config.constants == {
        "Workers": frozenset({ModelValue("w1"), ModelValue("w2")}),
        "MaxRetry": 1,
        "Master": ModelValue("m"),
    }


def test_locations_point_into_the_spec(jobs: ir.Spec, fixtures_dir: Path) -> None:
    work = next(a for a in jobs.actions if a.label == "Work")
    line = (fixtures_dir / "Jobs.tla").read_text().splitlines()[work.loc.line - 1]
    assert line.startswith("Work(self) ==")
    assert str(work.loc).startswith("Jobs.tla:")


def test_let_definitions_are_keyed_apart(jobs: ir.Spec) -> None:
    lets = [k for k in jobs.module.defs if "#" in k]
    assert {k.split("#")[0] for k in lets} >= {"vals", "small"}


def test_uniprocess_structure(build) -> None:
    m = build("Toggle").module
    assert m.PROCESSES == {None: ("Flip", "Check", "Terminating")}
    assert {info.kind for info in m.ACTIONS.values()} == {"none"}
    assert m.ACTIONS["Flip"].process_ids(m.CFG_CONSTANTS) == frozenset({None})


def test_cfg_reader(tmp_path: Path) -> None:
    cfg = tmp_path / "M.cfg"
    cfg.write_text(
        '\\* comment\nCONSTANTS\n  A = {a, "s", 3}  (* block *)\n  B <- Other\n  C = <<1, -2>>\n'
        "INIT Init NEXT Next\nINVARIANT I1\nINVARIANTS I2 I3\nPROPERTY P\nCONSTRAINTS K\n"
    )
    got = read_config(cfg, "M.cfg")
    assert got.constants == {"A": frozenset({ModelValue("a"), "s", 3}), "C": (1, -2)}
    assert got.substitutions == {"B": "Other"}
    assert (got.init, got.next, got.invariants) == ("Init", "Next", ("I1", "I2", "I3"))
    assert (got.properties, got.constraints) == (("P",), ("K",))


def test_cfg_reader_rejects_junk(tmp_path: Path) -> None:
    cfg = tmp_path / "M.cfg"
    cfg.write_text("CONSTANTS\n  A ? 1\n")
    with pytest.raises(CodegenError, match=r"M.cfg:2"):
        read_config(cfg, "M.cfg")
