"""Regeneration: a changed spec changes the generated behaviour, and --check notices."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from aegis.cli import main
from codegen import diagram, pipeline
from codegen.pipeline import Generated, diff, generate, load, write
from tools.tlc import translate

if TYPE_CHECKING:
    from tests.codegen.conftest import Build, Explorer


@pytest.fixture
def jobs_copy(tmp_path: Path, fixtures_dir: Path) -> Path:
    for name in ("Jobs.tla", "Jobs.cfg"):
        shutil.copy(fixtures_dir / name, tmp_path / name)
    return tmp_path / "Jobs.tla"


def test_changed_pluscal_changes_behaviour(
    jobs_copy: Path, build: Build, explorer: Explorer
) -> None:
    text = jobs_copy.read_text(encoding="utf-8")
    assert "with r \\in 0..1, tag" in text
    jobs_copy.write_text(text.replace("with r \\in 0..1, tag", "with r \\in 0..0, tag"))
    assert translate(jobs_copy)
    changed = generate(jobs_copy)
    original = build("Jobs")
    patch = diff(changed, original.out)
    removed = [ln for ln in patch.splitlines() if ln.startswith("-") and "_tla.enum(" in ln]
    added = [ln for ln in patch.splitlines() if ln.startswith("+") and "_tla.enum(" in ln]
    assert [ln.split("else ")[-1].strip() for ln in removed] == ["_tla.enum(_tla.interval(0, 1))"]
    assert [ln.split("else ")[-1].strip() for ln in added] == ["_tla.enum(_tla.interval(0, 0))"]
    write(changed, jobs_copy.parent / "out")
    before, _ = explorer(original.module)
    after, _ = explorer(load(jobs_copy.parent / "out", changed.package))
    assert any(s.phase == "Failed" for s in before)
    assert not any(s.phase == "Failed" for s in after)  # retries never grow any more


def test_cli_gen_and_check(
    jobs_copy: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "generated"
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out)]) == 0
    assert (out / "jobs" / "actions.py").is_file()
    assert (out / "__init__.py").is_file()
    gen = generate(jobs_copy)
    monkeypatch.setattr(pipeline, "generate", lambda *a, **k: gen)  # no more SANY runs
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out), "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
    actions = out / "jobs" / "actions.py"
    actions.write_text(actions.read_text().replace('"Busy"', '"Bussy"'))
    (out / "jobs" / "old.py").write_text(gen.files["_tla.py"])  # a stale generated file
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out), "--check"]) == 1
    captured = capsys.readouterr()
    assert '-            phase_next = "Bussy"' in captured.out
    assert '+            phase_next = "Busy"' in captured.out
    assert "old.py" in captured.out
    assert "is stale: run `aegis spec gen`" in captured.err
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out)]) == 0
    assert not (out / "jobs" / "old.py").exists()
    assert pipeline.diff(gen, out) == ""


def test_cli_gen_refuses_a_stale_translation(
    jobs_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "generated"
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out)]) == 0
    text = jobs_copy.read_text(encoding="utf-8")
    jobs_copy.write_text(text.replace("with r \\in 0..1, tag", "with r \\in 0..0, tag"))
    capsys.readouterr()
    for extra in (["--check"], []):
        assert main(["spec", "gen", str(jobs_copy), "--out", str(out), *extra]) == 2
        assert "the PlusCal translation is stale" in capsys.readouterr().err
    assert main(["spec", "translate", str(jobs_copy)]) == 0
    assert main(["spec", "gen", str(jobs_copy), "--out", str(out), "--check"]) == 1  # now: a diff


def test_cli_diagram(
    build: Build,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs = build("Jobs")
    project = tmp_path / "project"
    (project / "spec").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    write(Generated("aegis_phase", jobs.gen.files), project / "aegis" / "generated")
    monkeypatch.chdir(project)
    assert main(["spec", "diagram"]) == 0
    assert capsys.readouterr().out.startswith("stateDiagram-v2")
    assert main(["spec", "diagram", "--format", "dot"]) == 0
    assert '"Idle" -> "Busy" [label="Ctl"];' in capsys.readouterr().out
    monkeypatch.setattr(diagram.shutil, "which", lambda name: None)
    assert main(["spec", "diagram", "--format", "svg"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"aegis: error: {diagram.GRAPHVIZ_HINT}"
    assert "apt-get install -y graphviz" in err


def test_cli_diagram_before_generation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["spec", "diagram"]) == 2
    assert "run `aegis spec gen` first" in capsys.readouterr().err
