"""Behaviours for model-based testing of the runtime: paths through TLC's graph covering every edge.

Greedy edge cover: each behaviour starts at an initial state and repeatedly walks (by BFS over
TLC's graph) to the nearest edge not yet covered and takes it, until it reaches `max_steps`
or no uncovered edge is reachable from where it stands. The choices of each step (the `\\E`,
`with` values) and its process id come from the generated successor equal to TLC's target.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aegis.conformance.bound import BoundModel
from aegis.conformance.tlcgraph import Key, TlcGraph
from aegis.errors import AegisError
from aegis.protocol.state_codec import decode, encode
from aegis.values import Value, render

EdgeId = tuple[int, str, int]
EdgeKind = Callable[[Key, str, Key], object]  # (source, label, target) -> a class of edges


@dataclass(frozen=True)
class Step:
    """One step of a behaviour: the action taken, by which process, with which choices."""

    action: str
    process: Value
    choices: tuple[tuple[str, Value], ...]
    state: Any  # the module's State after the step


def step_kind(variables: tuple[str, ...], phase: str = "phase") -> EdgeKind:
    """A step's kind: its action, the phase before and after, and the variables it changes."""
    i = variables.index(phase)

    def kind(src: Key, label: str, dst: Key) -> object:
        changed = tuple(v for v, a, b in zip(variables, src, dst, strict=True) if a != b)
        return (label, src[i], dst[i], changed)

    return kind


def _ranks(graph: TlcGraph) -> list[int]:
    """A canonical order of the nodes (by their printed states): TLC numbers them at random."""
    memo: dict[int, str] = {}

    def text(x: Value) -> str:
        t = memo.get(id(x))
        if t is None:
            t = memo[id(x)] = render(x)
        return t

    printed = ["\x00".join(map(text, key)) for key in graph.states]
    rank = [0] * len(printed)
    for r, n in enumerate(sorted(range(len(printed)), key=printed.__getitem__)):
        rank[n] = r
    return rank


def _tree(graph: TlcGraph, rank: list[int]) -> dict[int, EdgeId | None]:
    """A BFS tree of the graph from its initial states: node -> the edge that first reached it."""
    starts = sorted(graph.initial, key=rank.__getitem__)
    parent: dict[int, EdgeId | None] = dict.fromkeys(starts)
    queue = deque(starts)
    while queue:
        node = queue.popleft()
        for label, dst in sorted(graph.out[node], key=lambda e: (e[0], rank[e[1]])):
            if dst not in parent:
                parent[dst] = (node, label, dst)
                queue.append(dst)
    return parent


def _unwind(parent: dict[int, EdgeId | None], node: int) -> list[EdgeId]:
    path: list[EdgeId] = []
    edge = parent[node]
    while edge is not None:
        path.append(edge)
        edge = parent[edge[0]]
    return path[::-1]


def edge_paths(
    graph: TlcGraph, max_steps: int = 80, kind: EdgeKind | None = None
) -> list[list[EdgeId]]:
    """Edge paths from initial states that together take every edge (or, with `kind`, one
    shallowest edge of every kind) of the graph.

    Each path reaches the first uncovered edge (in a fixed order) by the shortest route, takes
    it, then keeps taking uncovered edges from where it stands (preferring a target that
    still has uncovered edges) until stuck or `max_steps` long.
    """
    rank = _ranks(graph)
    parent = _tree(graph, rank)
    if len(parent) < len(graph.states):
        raise AegisError("some states are unreachable from the initial states")
    depth = {n: len(_unwind(parent, n)) for n in parent}
    order = sorted(parent, key=lambda n: (depth[n], rank[n]))
    todo = {n: {(n, label, dst) for label, dst in graph.out[n]} for n in order}
    if kind is not None:
        todo = _one_per_kind(graph, order, todo, kind, rank)
    paths: list[list[EdgeId]] = []
    for n in order:
        while todo[n]:
            path = _unwind(parent, n)
            paths.append(path + _walk(n, todo, max_steps - len(path), rank))
    return paths


def _one_per_kind(
    graph: TlcGraph,
    order: list[int],
    todo: dict[int, set[EdgeId]],
    kind: EdgeKind,
    rank: list[int],
) -> dict[int, set[EdgeId]]:
    """Keep only the first edge of each kind, sources taken shallowest first."""
    seen: set[object] = set()
    kept: dict[int, set[EdgeId]] = {n: set() for n in order}
    for n in order:
        for edge in sorted(todo[n], key=lambda e: (e[1], rank[e[2]])):
            k = kind(graph.states[edge[0]], edge[1], graph.states[edge[2]])
            if k not in seen:
                seen.add(k)
                kept[n].add(edge)
    return kept


def _walk(node: int, todo: dict[int, set[EdgeId]], budget: int, rank: list[int]) -> list[EdgeId]:
    """Take uncovered edges from `node` while there are any (at most `budget`; at least one)."""
    path: list[EdgeId] = []
    while todo[node] and (budget > 0 or not path):
        edge = min(todo[node], key=lambda e: (-len(todo[e[2]]) + (e[2] == node), e[1], rank[e[2]]))
        todo[node].discard(edge)
        path.append(edge)
        budget -= 1
        node = edge[2]
    return path


def generate_behaviours(
    graph: TlcGraph, model: BoundModel, max_steps: int = 80, kind: EdgeKind | None = None
) -> list[list[Step]]:
    """Behaviours covering every edge (or kind of edge), with process ids and choices."""
    out: list[list[Step]] = []
    for path in edge_paths(graph, max_steps, kind):
        out.append([_step(graph, model, edge) for edge in path])
    return out


def _step(graph: TlcGraph, model: BoundModel, edge: EdgeId) -> Step:
    """The generated successor of the edge's source that matches TLC's target."""
    src, label, dst = edge
    target = graph.states[dst]
    for action, pid, succ in model.next_states(model.state(graph.states[src])):
        if action == label and model.key(succ.state) == target:
            return Step(label, pid, succ.choices, succ.state)
    raise AegisError(f"no generated {label} step matches TLC's edge (run aegis spec conform)")


def records(behaviours: list[list[Step]], model: BoundModel) -> Iterable[dict[str, Any]]:
    """One JSON object per step, in order."""
    for i, behaviour in enumerate(behaviours):
        for k, step in enumerate(behaviour):
            yield {
                "behaviour": i,
                "step": k,
                "action": step.action,
                "process": encode(step.process) if step.process is not None else None,
                "choices": {name: encode(v) for name, v in step.choices},
                "state": {
                    v: encode(x)
                    for v, x in zip(model.variables, model.key(step.state), strict=True)
                },
            }


def write_ndjson(path: Path, behaviours: list[list[Step]], model: BoundModel) -> int:
    """Write the behaviours as NDJSON (one step a line); the number of lines."""
    lines = [
        json.dumps(r, separators=(",", ":"), sort_keys=False) for r in records(behaviours, model)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def read_ndjson(path: Path) -> list[dict[str, Any]]:
    """The step records of an NDJSON behaviours file."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def covered_edges(rows: list[dict[str, Any]], graph: TlcGraph) -> set[EdgeId]:
    """The graph edges the recorded behaviours take (each from an initial state)."""
    variables = graph.variables
    covered: set[EdgeId] = set()
    node: int | None = None
    for row in rows:
        if row["step"] == 0:
            node = None
        key = tuple(decode(row["state"][v]) for v in variables)
        dst = graph.index.get(key)
        if dst is None:
            raise AegisError(f"behaviour {row['behaviour']} step {row['step']}: not a TLC state")
        sources = sorted(graph.initial) if node is None else [node]
        found = [s for s in sources if (row["action"], dst) in graph.out[s]]
        if not found:
            raise AegisError(f"behaviour {row['behaviour']} step {row['step']}: not a TLC edge")
        covered.add((found[0], row["action"], dst))
        node = dst
    return covered
