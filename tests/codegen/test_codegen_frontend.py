"""Front end and structure: what the IR says about the fixture specs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from aegis.values import ModelValue
from codegen import ir
from codegen.errors import CodegenError
from codegen.frontend import ModuleIndex
from codegen.pipeline import generate
from codegen.structure import build_spec
from tools.tlc.cfg import read_cfg
from tools.tlc.sany import export_xml

if TYPE_CHECKING:
    from tests.codegen.conftest import Build


@pytest.fixture(scope="module")
def jobs(fixtures_dir: Path) -> ir.Spec:
    spec = fixtures_dir / "Jobs.tla"
    index = ModuleIndex(export_xml(spec), spec, "Jobs.tla")
    return build_spec(index, read_cfg(fixtures_dir / "Jobs.cfg", "Jobs.cfg"))


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
    assert jobs.constants == {
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


def test_uniprocess_structure(build: Build) -> None:
    m = build("Toggle").module
    assert m.PROCESSES == {None: ("Flip", "Check", "Terminating")}
    assert {info.kind for info in m.ACTIONS.values()} == {"none"}
    assert m.ACTIONS["Flip"].process_ids(m.CFG_CONSTANTS) == frozenset({None})


def test_labels_are_an_enum_keying_the_tables(build: Build) -> None:
    m = build("Jobs").module
    assert [member.name for member in m.Label] == ["Ctl", "Work", "Record", "Terminating"]
    assert all(member.value == member.name for member in m.Label)
    assert list(m.ACTIONS) == list(m.Label)
    assert all(type(key) is m.Label and m.ACTIONS[key].label is key for key in m.ACTIONS)
    assert m.ACTIONS["Work"] is m.ACTIONS[m.Label.Work]  # a StrEnum: text finds it too
    assert {type(label) for label, _, _ in m.PHASE_TRANSITIONS} == {m.Label}
    assert m.PROCESSES["worker"] == (m.Label.Work, m.Label.Record)
    c = m.CFG_CONSTANTS
    labels = {label for s in m.initial_states(c) for label, _, _ in m.next_states(c, s)}
    assert labels and {type(label) for label in labels} == {m.Label}


def test_the_spec_operators_are_reachable_from_the_package(build: Build) -> None:
    m = build("Jobs").module
    assert "defs" in m.__all__
    s = m.initial_states(m.CFG_CONSTANTS)[0]
    assert m.defs.ValidPhase(m.CFG_CONSTANTS, s) is True


@pytest.mark.parametrize("label", ["upper", "_hidden"])
def test_a_label_that_cannot_be_an_enum_member_is_located(tmp_path: Path, label: str) -> None:
    spec = tmp_path / "Bad.tla"
    spec.write_text(
        "---- MODULE Bad ----\nVARIABLES pc, x\nvars == <<pc, x>>\n"
        f'Init == pc = "{label}" /\\ x = 0\n'
        f'{label} == /\\ pc = "{label}"\n    /\\ x\' = 1\n    /\\ pc\' = "Done"\n'
        f"Next == {label}\nSpec == Init /\\ [][Next]_vars\n====\n",
        encoding="utf-8",
    )
    (tmp_path / "Bad.cfg").write_text("SPECIFICATION Spec\n", encoding="utf-8")
    with pytest.raises(CodegenError, match=rf"^(.*/)?Bad\.tla:5:1: rename label {label}"):
        generate(spec)
