"""Behaviours for the runtime: the committed NDJSON is made of TLC's edges and covers them."""

from __future__ import annotations

import itertools
from pathlib import Path

from aegis.conformance.behaviours import (
    covered_edges,
    edge_paths,
    generate_behaviours,
    read_ndjson,
    records,
    step_kind,
)
from aegis.conformance.session import Baseline

COMMITTED = Path(__file__).parent / "behaviours" / "AegisPhase.ndjson"


def test_committed_behaviours_are_current(main_baseline: Baseline) -> None:
    graph, model = main_baseline.graph, main_baseline.bind()
    rows = read_ndjson(COMMITTED)
    kind = step_kind(graph.variables)
    every_kind = {
        kind(graph.states[n], lab, graph.states[d]) for n, o in enumerate(graph.out) for lab, d in o
    }
    covered = covered_edges(rows, graph)
    assert {kind(graph.states[s], lab, graph.states[d]) for s, lab, d in covered} == every_kind
    fresh = list(records(generate_behaviours(graph, model, kind=kind), model))
    assert fresh == rows, "regenerate: aegis spec conform --behaviours " + str(COMMITTED)


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
