"""The probe module's names cannot collide with the spec's; a cfg's CHECK_DEADLOCK is honoured."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aegis.cli import main
from aegis.conformance.probes import PREFIX, fresh_prefix
from aegis.conformance.session import baseline, conform
from codegen.pipeline import generate, load, write

MODELS = Path(__file__).parent / "models"


def test_the_prefix_grows_past_every_name_the_spec_uses() -> None:
    assert fresh_prefix(["VARIABLES x, b"]) == PREFIX
    assert fresh_prefix([f"VARIABLE {PREFIX}b", f"{PREFIX}_Init == TRUE"]) == PREFIX + "__"


def test_a_spec_with_the_probes_old_names_conforms(tmp_path: Path) -> None:
    spec = MODELS / "Clash.tla"  # defines b, p, d and has variables x, e, k
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path)
    base = baseline(spec, package=load(tmp_path, gen.package))
    assert base.cfg.check_deadlock is False  # else TLC stops at x = N: a deadlock
    assert len(base.graph.states) == 3
    report = conform(base)
    assert report.ok, report.mismatches
    assert base.probes is not None and len(base.probes.states) > 3
    assert any("TypeOK" not in holds for holds in base.probes.holds)  # perturbed e, k


def test_deadlock_flag_of_check_and_conform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = Path(__file__).parents[1] / "codegen" / "corpus"
    for name in ("Election.tla", "RingMath.tla"):
        shutil.copy(corpus / name, tmp_path / name)
    spec = tmp_path / "Election.tla"  # every run ends with all inboxes empty: a deadlock
    spec.with_suffix(".cfg").write_text("SPECIFICATION Spec\nCONSTANT N = 3\n", encoding="utf-8")
    gen = generate(spec, phase_variable=None)
    write(gen, tmp_path / "gen")
    monkeypatch.syspath_prepend(str(tmp_path / "gen"))
    check = ["spec", "check", str(spec), "--workers", "1"]
    conform_cmd = ["spec", "conform", str(spec), "--module", gen.package, "--no-probes"]
    assert main(check) == 1
    assert "Deadlock reached" in capsys.readouterr().out
    assert main(conform_cmd) == 2
    assert "TLC did not explore the whole state graph: Deadlock reached" in capsys.readouterr().err
    assert main([*check, "--deadlock"]) == 0
    behaviours = tmp_path / "Election.ndjson"  # no phase variable: behaviours cover every edge
    assert main([*conform_cmd, "--deadlock", "--behaviours", str(behaviours)]) == 0
    out = capsys.readouterr().out
    assert "24 states" in out and f"to {behaviours}" in out
    assert len(behaviours.read_text(encoding="utf-8").splitlines()) >= 46  # one row per edge
