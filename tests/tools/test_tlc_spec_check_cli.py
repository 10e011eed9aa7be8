"""`aegis spec check` and `aegis spec translate` end to end through the CLI entry point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aegis.cli import main


def test_check_passing_spec_human(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", str(fixtures / "TwoProcs.tla")]) == 0
    out, err = capsys.readouterr()
    assert "no error found" in out and "distinct states   9" in out
    assert "invariant CountBound" in out and "holds" in out
    assert "TLC:" in err  # progress goes to stderr


def test_check_violation_json(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, cfg = fixtures / "Counter.tla", fixtures / "CounterSmall.cfg"
    assert main(["spec", "check", "--json", "--config", str(cfg), str(spec)]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)  # exactly one JSON object on stdout
    assert set(data) == {
        "distinct_states",
        "states_generated",
        "depth",
        "seconds",
        "invariants",
        "properties",
        "violation",
    }
    assert data["invariants"] == ["TypeOK", "Small"] and data["properties"] == []
    v = data["violation"]
    assert (v["kind"], v["name"]) == ("invariant", "Small")
    assert [s["action"] for s in v["trace"]] == ["Initial predicate", "Up", "Up", "Up"]
    last = v["trace"][-1]["state"]
    assert last["seen"] == [0, 1, 2]  # a set: sorted list
    assert last["tag"] == {"hist": [2, -2], "name": "a\\b", "quote": 'say "hi"'}
    assert set(last["owner"]) == {"p1", "p2"}  # model-value keys by name
    assert err == ""


def test_check_parse_error_exits_2(fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", str(fixtures / "Broken.tla")]) == 2
    err = capsys.readouterr().err
    assert "aegis: error: " in err and "Broken.tla:7:1: parse error" in err


def test_check_missing_cfg_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "Lonely.tla"
    spec.write_text("---- MODULE Lonely ----\nVARIABLE x\nInit == x = 0\n====\n")
    assert main(["spec", "check", str(spec)]) == 2
    assert "Lonely.cfg: model config not found" in capsys.readouterr().err


def test_check_refuses_a_stale_translation(
    twoprocs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twoprocs.write_text(twoprocs.read_text().replace("count + 1;", "count + 5;"))
    assert main(["spec", "check", str(twoprocs)]) == 2
    assert "translation is stale; run `aegis spec translate" in capsys.readouterr().err
    assert main(["spec", "translate", str(twoprocs)]) == 0
    assert "translation updated" in capsys.readouterr().out


def test_relative_spec_resolves_from_cwd(
    fixtures: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shutil.copyfile(fixtures / "Deadlock.tla", tmp_path / "Deadlock.tla")
    shutil.copyfile(fixtures / "Deadlock.cfg", tmp_path / "Deadlock.cfg")
    monkeypatch.chdir(tmp_path)
    assert main(["spec", "check", "Deadlock.tla"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("Deadlock.tla with Deadlock.cfg: FAILED")
    assert "deadlock: Deadlock reached." in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Deadlock.cfg", "Deadlock.tla"]
