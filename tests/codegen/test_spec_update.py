"""`aegis spec update` runs the spec-edit loop on a real (small) project and says what is left."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aegis.cli import main

EDIT = ("with r \\in 0..1, tag", "with r \\in 0..0, tag")  # retries never grow any more

MUTANTS = """
[[mutant]]
name = "moved-text"
anchor = "Work"
find = 'r \\in 0..1'
replace = 'r \\in 0..2'
why = "a patch anchored to the text the edit changes"
expect_kind = "invariant"

[[mutant]]
name = "retries-never-one"
anchor = "RetriesBound"
find = 'retries[w] \\in 0..MaxRetry'
replace = 'retries[w] \\in 0..0'
why = "RetriesBound too strict: killed only while retries can grow"
expect_kind = "invariant"
expect_name = "RetriesBound"
"""


@pytest.fixture
def project(tmp_path: Path, fixtures_dir: Path) -> Path:
    """A project holding fixtures/Jobs as its spec, two spec mutants and a behaviours file."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    spec_dir = tmp_path / "spec"
    (spec_dir / "mutants").mkdir(parents=True)
    for name in ("Jobs.tla", "Jobs.cfg"):
        shutil.copy(fixtures_dir / name, spec_dir / name)
    (spec_dir / "mutants" / "mutants.toml").write_text(MUTANTS, encoding="utf-8")
    behaviours = tmp_path / "tests" / "conformance" / "behaviours" / "Jobs.ndjson"
    behaviours.parent.mkdir(parents=True)
    behaviours.write_text("", encoding="utf-8")
    return tmp_path


def _update(project: Path, *extra: str) -> list[str]:
    spec, out = project / "spec" / "Jobs.tla", project / "aegis" / "generated"
    return ["spec", "update", str(spec), "--out", str(out), *extra]


def test_the_loop_after_an_edit_names_what_is_left(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "spec" / "Jobs.tla"
    spec.write_text(spec.read_text(encoding="utf-8").replace(*EDIT), encoding="utf-8")
    assert main(_update(project, "--mutants", "apply")) == 1
    out = capsys.readouterr().out
    assert "translate: updated" in out
    assert "check: " in out and "no error found" in out
    assert "gen: 7 files rewritten" in out
    assert "conform: " in out and " 0 mismatches" in out
    assert "spec mutants: 2 listed, 1 to look at" in out
    # every step says when it starts, with the time it is expected to take, before it ends
    for step in ("translate", "check", "gen", "conform", "behaviours", "spec mutants"):
        started = out.index(f"] {step}: started (expected: ")
        assert started < out.index(f"] {step}: ", started + 1), step
    behaviours = project / "tests" / "conformance" / "behaviours" / "Jobs.ndjson"
    assert behaviours.read_text(encoding="utf-8").count("\n") > 10
    left = out.split("left for a human to decide:", 1)[1]
    assert "Jobs.ndjson changed" in left
    assert (
        "spec mutant moved-text: mutant moved-text: anchor Work: 'r \\\\in 0..1' occurs 0 times"
        in left
    )
    assert "retries-never-one" not in left  # still applies


@pytest.mark.slow  # three runs of the loop
def test_a_second_run_has_nothing_left_and_an_edit_shows(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_update(project, "--mutants", "apply")) == 1  # the behaviours file was empty
    assert "Jobs.ndjson changed" in capsys.readouterr().out
    assert main(_update(project, "--mutants", "apply")) == 0
    out = capsys.readouterr().out
    assert "translate: already current" in out and "gen: 0 files rewritten" in out
    assert "behaviours: " in out and "unchanged" in out
    assert "nothing left to decide" in out
    behaviours = project / "tests" / "conformance" / "behaviours" / "Jobs.ndjson"
    before = behaviours.read_text(encoding="utf-8")
    spec = project / "spec" / "Jobs.tla"
    spec.write_text(spec.read_text(encoding="utf-8").replace(*EDIT), encoding="utf-8")
    assert main(_update(project, "--mutants", "apply")) == 1
    assert "gen: 1 files rewritten" in capsys.readouterr().out  # actions.py
    assert behaviours.read_text(encoding="utf-8") != before


def test_a_violation_stops_the_loop_before_anything_is_generated(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "spec" / "Jobs.tla"
    text = spec.read_text(encoding="utf-8")
    bound = "RetriesBound == \\A w \\in Workers : retries[w] \\in 0..MaxRetry"
    spec.write_text(text.replace(bound, bound.replace("0..MaxRetry", "0..0")), encoding="utf-8")
    assert main(_update(project, "--mutants", "skip")) == 1
    out = capsys.readouterr().out
    assert "check: " in out and "FAILED" in out
    assert "TLC found a violation (above): fix the spec, or the property" in out
    assert "gen: " not in out and not (project / "aegis").exists()


@pytest.mark.slow  # runs TLC once per spec mutant
def test_a_mutant_the_edit_made_equivalent_is_named(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "spec" / "Jobs.tla"
    spec.write_text(spec.read_text(encoding="utf-8").replace(*EDIT), encoding="utf-8")
    assert main(_update(project, "--mutants", "run")) == 1
    out = capsys.readouterr().out
    assert "spec mutant 1/2 " in out and "spec mutant 2/2 " in out  # each said as it ends
    left = out.split("left for a human to decide:", 1)[1]
    assert "spec mutant retries-never-one: TLC reports no error, the list expects " in left
    assert "invariant RetriesBound" in left
