"""Behaviours for the runtime: the committed NDJSON is made of TLC's edges and covers them."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest

from aegis.conformance.behaviours import (
    covered_edges,
    edge_paths,
    generate_behaviours,
    read_ndjson,
    records,
    step_kind,
)
from aegis.conformance.session import Baseline
from aegis.errors import AegisError

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = Path(__file__).parent / "behaviours" / "AegisPhase.ndjson"
HINT = "stale: regenerate with `python3 -m aegis.cli spec conform --behaviours {}`"


def behaviours_problem(rows: list[dict[str, Any]], baseline: Baseline) -> str | None:
    """What is wrong with the recorded behaviours, the fix first; None if they are current."""
    graph, model = baseline.graph, baseline.bind()
    kind = step_kind(graph.variables)
    fresh = list(records(generate_behaviours(graph, model, kind=kind), model))
    if fresh != rows:
        return HINT.format(COMMITTED.relative_to(ROOT))
    every_kind = {
        kind(graph.states[n], lab, graph.states[d]) for n, o in enumerate(graph.out) for lab, d in o
    }
    try:
        covered = covered_edges(rows, graph)
    except AegisError as exc:
        return f"the behaviours leave TLC's graph: {exc}"
    missed = every_kind - {kind(graph.states[s], lab, graph.states[d]) for s, lab, d in covered}
    return f"{len(missed)} kinds of step not covered" if missed else None


@pytest.mark.slow  # regenerates the behaviours from the CI model's graph (`aegis spec update` does)
def test_committed_behaviours_are_current(main_baseline: Baseline) -> None:
    assert behaviours_problem(read_ndjson(COMMITTED), main_baseline) is None


def _with_a_new_variable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As if the spec had gained a variable since the file was written: one is missing."""
    out = copy.deepcopy(rows)
    for r in out:
        del r["state"]["finishCount"]
    return out


def _with_a_changed_value(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As if an action had changed: one step lands in a state TLC does not have."""
    out = copy.deepcopy(rows)
    out[1]["state"]["masterSeq"] = 99
    return out


@pytest.mark.slow  # needs the CI model's graph
@pytest.mark.parametrize("stale", [_with_a_new_variable, _with_a_changed_value])
def test_a_stale_file_fails_with_the_hint_first(main_baseline: Baseline, stale: Any) -> None:
    # before the fix, a stale file failed with "not a TLC state" (or a KeyError) and no hint
    problem = behaviours_problem(stale(read_ndjson(COMMITTED)), main_baseline)
    assert problem is not None
    assert problem.startswith("stale: regenerate with")
    assert "spec conform --behaviours tests/conformance/behaviours/AegisPhase.ndjson" in problem


def test_rows_carry_process_and_choices() -> None:
    rows = read_ndjson(COMMITTED)
    assert {"behaviour", "step", "action", "process", "choices", "state"} <= set(rows[0])
    assert any(r["action"] == "receive" and "m" in r["choices"] for r in rows)
    assert all(r["process"] == r["action"] for r in rows)  # one single-label process each


def test_every_edge_cover_of_a_model(small_baseline: Baseline) -> None:
    graph = small_baseline.graph
    paths = edge_paths(graph, max_steps=80)
    taken = {e for p in paths for e in p}
    assert taken == {(n, lab, d) for n, o in enumerate(graph.out) for lab, d in o}
    for path in paths:
        assert path[0][0] in graph.initial
        assert all(a[2] == b[0] for a, b in itertools.pairwise(path))
