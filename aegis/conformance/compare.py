"""Compare the generated tables with TLC's state graph, state by state and edge by edge.

Explores the generated Next breadth-first from the generated Init in lockstep with TLC's
graph, mirroring TLC 2.15 (checked on a fixture, tests/conformance/test_constraint_semantics):
every generated state (initial or successor) has its invariants checked, but one that
violates a CONSTRAINT is neither a distinct state nor printed, and neither is the edge to it.
For each state the set of (label, successor) pairs must equal TLC's out-edges (TLC's dot
carries no process id); only agreed successors are explored further, so one divergence is
reported once rather than cascading.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aegis.conformance.bound import BoundModel
from aegis.conformance.tlcgraph import Key, TlcGraph
from aegis.values import render

Edge = tuple[str, Key]


@dataclass(frozen=True)
class Mismatch:
    """One divergence: kind is initial | edges | invariant | error."""

    kind: str
    state: Key | None
    action: str | None
    tlc: tuple[Key, ...] = ()
    python: tuple[Key, ...] = ()
    detail: str = ""


@dataclass
class Report:
    """What was compared, how long it took, and every divergence found."""

    states: int = 0
    edges: int = 0
    tlc_states: int = 0
    tlc_edges: int = 0
    unreached: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    @property
    def ok(self) -> bool:
        """True iff the two sides agree everywhere."""
        return not self.mismatches and not self.unreached


class _Lockstep:
    """The exploration state of one comparison."""

    def __init__(self, graph: TlcGraph, model: BoundModel, limit: int) -> None:
        self.graph, self.model, self.limit = graph, model, limit
        self.report = Report(tlc_states=len(graph.states), tlc_edges=graph.edge_count)
        self.checked: set[Key] = set()
        self.visited: set[int] = set()
        self.queue: deque[tuple[int, Any]] = deque()

    def full(self) -> bool:
        return len(self.report.mismatches) >= self.limit

    def add(self, m: Mismatch) -> None:
        if not self.full():
            self.report.mismatches.append(m)

    def check_invariants(self, key: Key, state: Any) -> None:
        """Every cfg invariant on a generated state (TLC found them all true)."""
        if key in self.checked:
            return
        self.checked.add(key)
        try:
            broken = self.model.violated(state)
        except Exception as exc:
            self.add(Mismatch("error", key, None, detail=f"invariants: {exc!r}"))
            return
        for name in broken:
            self.add(Mismatch("invariant", key, name, detail="TLC: holds; Python: violated"))

    def within(self, key: Key, state: Any) -> bool | None:
        try:
            return self.model.within(state)
        except Exception as exc:
            self.add(Mismatch("error", key, None, detail=f"constraint: {exc!r}"))
            return None

    def start(self) -> None:
        """Compare the initial states and queue the agreed ones."""
        model, graph = self.model, self.graph
        try:
            init = {model.key(s): s for s in model.initial_states()}
        except Exception as exc:
            self.add(Mismatch("error", None, "Init", detail=repr(exc)))
            return
        py = set()
        for key, s in init.items():
            self.check_invariants(key, s)
            if self.within(key, s):
                py.add(key)
        tlc = {graph.states[n] for n in graph.initial}
        if py != tlc:
            self.add(Mismatch("initial", None, "Init", _sorted(tlc - py), _sorted(py - tlc)))
        for key in _sorted(py & tlc):
            node = graph.index[key]
            self.visited.add(node)
            self.queue.append((node, init[key]))

    def step(self, node: int, state: Any) -> None:
        """Compare one state's out-edges and queue the agreed, unvisited successors."""
        key = self.graph.states[node]
        py: dict[Edge, Any] = {}
        try:
            for label, _pid, succ in self.model.next_states(state):
                k = self.model.key(succ.state)
                self.check_invariants(k, succ.state)
                if self.within(k, succ.state):
                    py[(label, k)] = succ.state
        except Exception as exc:
            self.add(Mismatch("error", key, None, detail=f"successors: {exc!r}"))
            return
        states = self.graph.states
        tlc = {(label, states[dst]) for label, dst in self.graph.out[node]}
        self.report.states += 1
        self.report.edges += len(tlc)
        if tlc != py.keys():
            self._diff(key, tlc, set(py))
        for edge in tlc & py.keys():
            dst = self.graph.index[edge[1]]
            if dst not in self.visited:
                self.visited.add(dst)
                self.queue.append((dst, py[edge]))

    def _diff(self, key: Key, tlc: set[Edge], py: set[Edge]) -> None:
        """One mismatch per action whose successors differ, with both sides' successors."""
        for label in sorted({lab for lab, _ in tlc ^ py}):
            t = _sorted(k for lab, k in tlc if lab == label)
            p = _sorted(k for lab, k in py if lab == label)
            self.add(Mismatch("edges", key, label, t, p))

    def run(self) -> Report:
        self.start()
        while self.queue and not self.full():
            self.step(*self.queue.popleft())
        self.report.unreached = len(self.graph.states) - len(self.visited)
        return self.report


def _sorted(keys: Iterable[Key]) -> tuple[Key, ...]:
    return tuple(sorted(keys, key=lambda k: [render(x) for x in k]))


def compare(graph: TlcGraph, model: BoundModel, *, max_mismatches: int = 20) -> Report:
    """Compare; stops after `max_mismatches` divergences (1 is enough to kill a mutant)."""
    if graph.variables != model.variables:
        raise ValueError("the graph was read with another module's variables")
    start = time.monotonic()
    report = _Lockstep(graph, model, max_mismatches).run()
    report.seconds = time.monotonic() - start
    return report
