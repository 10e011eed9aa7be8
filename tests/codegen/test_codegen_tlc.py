"""Generated code explores exactly the states and steps TLC explores: TLC is the oracle.

Jobs covers processes, either/with, records, sets, sequences and a CONSTRAINT; Raw the
hand-written action forms (x' \\in S, action operators, CASE, tuple binders); Toggle a
uniprocess algorithm in C syntax; Exprs stores many expressions' values in the state, so
that their values (not only the reachable set) are compared with TLC's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tools.tlc import dump_state_graph

if TYPE_CHECKING:
    from tests.codegen.conftest import Build, Explorer


@pytest.mark.parametrize("name", ["Jobs", "Raw", "Toggle", "Exprs"])
def test_state_graph_equals_tlc(
    name: str, build: Build, explorer: Explorer, fixtures_dir: Path
) -> None:
    m = build(name).module
    states, edges = explorer(m)
    graph = dump_state_graph(fixtures_dir / f"{name}.tla")
    by_fp = {fp: m.State.from_dict(values) for fp, values in graph.states.items()}
    assert set(by_fp.values()) == states
    assert {by_fp[fp] for fp in graph.initial} == set(m.initial_states(m.CFG_CONSTANTS))
    assert {(by_fp[a], label, by_fp[b]) for a, label, b in graph.edges} == edges
    assert not [s for s in states if m.violated_invariants(m.CFG_CONSTANTS, s)]
