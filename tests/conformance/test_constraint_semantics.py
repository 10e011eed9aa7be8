"""How TLC 2.15 treats states outside the CONSTRAINT, which conformance mirrors.

A successor violating the constraint is not a distinct state, is not in the dot, and
neither is the edge to it; but its invariants are checked. The same holds for initial states.
"""

from __future__ import annotations

from pathlib import Path

from aegis.conformance.tlcgraph import dump_graph, load_cfg
from tools.tlc import run_tlc

MODELS = Path(__file__).parent / "models"


def test_out_of_constraint_states_are_neither_counted_nor_dumped() -> None:
    cfg = load_cfg(MODELS / "Cx.cfg")
    graph = dump_graph(MODELS / "Cx.tla", cfg, ("x", "y"))
    assert sorted(graph.states) == [(x, y) for x in range(3) for y in range(2)]
    assert graph.distinct_states == 6
    at_bound = [graph.index[(2, y)] for y in range(2)]
    assert all(label == "B" for n in at_bound for label, _ in graph.out[n])


def test_out_of_constraint_states_have_invariants_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "Cx.cfg"
    cfg.write_text((MODELS / "Cx.cfg").read_text().replace("Limit = 10", "Limit = 3"))
    result = run_tlc(MODELS / "Cx.tla", cfg)
    assert result.violation is not None and result.violation.name == "Inv"
    # the violating state is outside Bound (x <= 2); which y TLC reaches first depends on its
    # worker threads, so only x is pinned
    last = result.violation.trace[-1].state
    assert last["x"] == 3 and last["y"] in (0, 1)
    assert result.violation.trace[-2].state["x"] == 2
