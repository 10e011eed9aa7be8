"""The dot state-graph parser on real TLC output (PlusCal, two processes)."""

from __future__ import annotations

from pathlib import Path

from aegis.values import Fn, ModelValue
from tools.tlc import dump_state_graph, read_dot


def _pc(**kw: str) -> Fn:
    return Fn({ModelValue(k): v for k, v in kw.items()})


def test_dump_state_graph_two_processes(fixtures: Path) -> None:
    g = dump_state_graph(fixtures / "TwoProcs.tla")
    assert len(g.states) == 9
    (init,) = g.initial
    assert g.states[init] == {"pc": _pc(p1="Bump", p2="Bump"), "count": 0}
    labels = {label for _, label, _ in g.edges}
    assert labels == {"Bump", "Rest", "Terminating"}
    (done,) = [i for i, s in g.states.items() if s["pc"] == _pc(p1="Done", p2="Done")]
    assert (done, "Terminating", done) in g.edges  # PlusCal's stuttering self-loop
    # every edge joins two known states; Bump adds one to count
    by_id = g.states
    for src, label, dst in g.edges:
        assert src in by_id and dst in by_id
        if label == "Bump":
            assert by_id[dst]["count"] == by_id[src]["count"] + 1


def test_string_keyed_pc_prints_as_a_record(fixtures: Path) -> None:
    g = dump_state_graph(fixtures / "TwoProcs.tla", fixtures / "TwoProcsStrings.cfg")
    (init,) = g.initial
    assert g.states[init]["pc"] == Fn({"a": "Bump", "b": "Bump"})


def test_colorized_dump_skips_the_legend(fixtures: Path) -> None:
    # Recorded with: -dump dot,colorize,actionlabels (TLC 2.15, 2020-01-30)
    g = read_dot(fixtures / "TwoProcs.colorize.dot")
    assert len(g.states) == 9 and len(g.edges) == 13 and len(g.initial) == 1
    assert all(isinstance(i, int) for i in g.states)
