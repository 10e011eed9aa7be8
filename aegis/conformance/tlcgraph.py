"""TLC's state graph, read fast from its `-dump dot,actionlabels` file and indexed by state."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aegis.conformance.modelcfg import ModelConfig, model_only_cfg
from aegis.errors import SpecError
from aegis.values import Value
from tools.tlc import parse_value, run_tlc

Key = tuple[Value, ...]  # a state as its values in the generated module's VARIABLES order

_EDGE = re.compile(r'(-?\d+) -> (-?\d+) \[label="((?:[^"\\]|\\.)*)"')
_NODE = re.compile(r'(-?\d+) \[label="((?:[^"\\]|\\.)*)"(.*)\];?$')
_DOT_ESCAPE = re.compile(r"\\(.)")
_DOT_ESCAPES = {"n": "\n", "l": "\n", "r": "\n"}
_ASSIGN = re.compile(r"(?:^|\n)/\\ (\w+) = ")


@dataclass
class TlcGraph:
    """The reachable states (node i = states[i]), initial nodes and out-edges (label, node)."""

    variables: tuple[str, ...]
    states: list[Key] = field(default_factory=list)
    index: dict[Key, int] = field(default_factory=dict)
    initial: set[int] = field(default_factory=set)
    out: list[set[tuple[str, int]]] = field(default_factory=list)
    distinct_states: int | None = None
    seconds: float = 0.0

    @property
    def edge_count(self) -> int:
        """The number of distinct (source, label, target) edges."""
        return sum(len(o) for o in self.out)

    def labels(self) -> set[str]:
        """Every action label on some edge."""
        return {label for o in self.out for label, _ in o}


class _Reader:
    """Parses node labels, memoising each variable's value text (states share most of them)."""

    def __init__(self, variables: Sequence[str]) -> None:
        self.variables = tuple(variables)
        self._values: dict[str, Value] = {}

    def state(self, label: str) -> Key:
        """The state printed in one dot node label."""
        text = _DOT_ESCAPE.sub(lambda m: _DOT_ESCAPES.get(m.group(1), m.group(1)), label)
        parts = _ASSIGN.split(text)
        found: dict[str, Value] = {}
        for name, value_text in zip(parts[1::2], parts[2::2], strict=True):
            found[name] = self._value(value_text.strip())
        if set(found) != set(self.variables):
            raise SpecError(
                f"TLC's state has variables {sorted(found)}, the generated module "
                f"{sorted(self.variables)}: regenerate it (aegis spec gen)"
            )
        return tuple(found[v] for v in self.variables)

    def _value(self, text: str) -> Value:
        v = self._values.get(text)
        if v is None:
            v = self._values[text] = parse_value(text)
        return v


def parse_graph(lines: Iterable[str], variables: Sequence[str]) -> TlcGraph:
    """Index TLC's dot dump (legend and layout lines skipped) by state."""
    reader = _Reader(variables)
    graph = TlcGraph(tuple(variables))
    node_of: dict[int, int] = {}
    edges: list[tuple[int, str, int]] = []
    legend = False
    for raw in lines:
        if raw.startswith("subgraph"):
            legend = raw.startswith("subgraph cluster_legend")
            continue
        if legend:
            continue
        if " -> " in raw:
            m = _EDGE.match(raw)
            if m:
                edges.append((int(m.group(1)), m.group(3), int(m.group(2))))
            continue
        m = _NODE.match(raw)
        if m:
            fp = int(m.group(1))
            node_of[fp] = _add_state(graph, reader.state(m.group(2)))
            if "filled" in m.group(3):
                graph.initial.add(node_of[fp])
    for src, label, dst in edges:
        graph.out[node_of[src]].add((label, node_of[dst]))
    return graph


def _add_state(graph: TlcGraph, key: Key) -> int:
    """The node of `key`, added if new."""
    node = graph.index.get(key)
    if node is None:
        node = graph.index[key] = len(graph.states)
        graph.states.append(key)
        graph.out.append(set())
    return node


def read_graph(path: Path, variables: Sequence[str]) -> TlcGraph:
    """Read a dot file written by TLC."""
    with path.open(encoding="utf-8") as f:
        return parse_graph(f, variables)


def dump_graph(
    spec: Path,
    cfg: ModelConfig,
    variables: Sequence[str],
    *,
    extra_args: Sequence[str] = (),
    cfg_text: str | None = None,
) -> TlcGraph:
    """Run TLC once with `-dump dot,actionlabels` (liveness left out) and read the graph."""
    with tempfile.TemporaryDirectory(prefix="aegis-conform-") as tmp:
        cfg_path = Path(tmp) / "Model.cfg"
        cfg_path.write_text(cfg_text or model_only_cfg(cfg), encoding="utf-8")
        dot = Path(tmp) / "states.dot"
        args = ("-dump", "dot,actionlabels", str(dot), *extra_args)
        result = run_tlc(spec, cfg_path, extra_args=args)
        if not result.ok:
            why = result.violation.message if result.violation else "; ".join(result.errors)
            raise SpecError(f"{spec}: TLC did not explore the whole state graph: {why}")
        graph = read_graph(dot, variables)
    graph.distinct_states = result.distinct_states
    graph.seconds = result.seconds
    if result.distinct_states is not None and result.distinct_states != len(graph.states):
        raise SpecError(
            f"TLC reports {result.distinct_states} distinct states but its dot has "
            f"{len(graph.states)}"
        )
    return graph
