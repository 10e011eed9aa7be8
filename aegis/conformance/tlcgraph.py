"""TLC's state graph, read fast from its `-dump dot,actionlabels` file and indexed by state."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from aegis.errors import SpecError
from aegis.values import Value
from tools.tlc import TlcConfig, parse_dot, read_cfg, render_cfg, run_tlc

Key = tuple[Value, ...]  # a state as its values in the generated module's VARIABLES order


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


def load_cfg(path: Path) -> TlcConfig:
    """Read a model cfg; SpecError if it uses a feature that changes which states TLC
    explores or prints (conformance cannot mirror those)."""
    cfg = read_cfg(path)
    found = [
        f"{keyword} {cfg.at(name)}"
        for keyword, names in (
            ("SYMMETRY", [cfg.symmetry]),
            ("VIEW", [cfg.view]),
            ("ALIAS", [cfg.alias]),
            ("ACTION_CONSTRAINT", cfg.action_constraints),
            ("<-", cfg.substitutions),
        )
        for name in names
        if name is not None
    ]
    if found:
        raise SpecError(f"{cfg.where}: conformance does not support {'; '.join(found)}")
    return cfg


def model_only(cfg: TlcConfig) -> TlcConfig:
    """The cfg without PROPERTY (liveness does not change the state graph, and is slow)."""
    return replace(cfg, properties=())


def parse_graph(lines: Iterable[str], variables: Sequence[str]) -> TlcGraph:
    """Index TLC's dot dump (read by tools.tlc.parse_dot) by state, in `variables` order."""
    dot = parse_dot(lines)
    graph = TlcGraph(tuple(variables))
    node_of: dict[int, int] = {}
    for fp, state in dot.states.items():
        if set(state) != set(variables):
            raise SpecError(
                f"TLC's state has variables {sorted(state)}, the generated module "
                f"{sorted(variables)}: regenerate it (aegis spec gen)"
            )
        node_of[fp] = _add_state(graph, tuple(state[v] for v in variables))
    graph.initial = {node_of[fp] for fp in dot.initial}
    for src, label, dst in dot.edges:
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
    cfg: TlcConfig,
    variables: Sequence[str],
    *,
    extra_args: Sequence[str] = (),
    cfg_text: str | None = None,
) -> TlcGraph:
    """Run TLC once with `-dump dot,actionlabels` (liveness left out) and read the graph."""
    with tempfile.TemporaryDirectory(prefix="aegis-conform-") as tmp:
        cfg_path = Path(tmp) / "Model.cfg"
        cfg_path.write_text(cfg_text or render_cfg(model_only(cfg)), encoding="utf-8")
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
