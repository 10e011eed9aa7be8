"""Parse the state graph TLC writes with `-dump dot,actionlabels FILE`.

What the 2020 build writes, one item a line: `strict digraph DiskGraph {`, a
`subgraph cluster_graph {`, nodes `ID [label="..."]` where ID is the state's signed 64-bit
fingerprint and initial states carry `,style = filled`; edges
`A -> B [label="Action",color="black",fontcolor="black"];` (PlusCal's `Terminating` gives
a self-loop); `{rank = same; ...}` lines; with `colorize` a `subgraph cluster_legend` whose
nodes are named after the actions. Labels use dot escaping (`\\\\`, `\\"`, `\\n`) around
TLC's state print (`/\\ x = 1` lines; TLC's own string escapes inside).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aegis.errors import AegisError, SpecError
from aegis.values import Value
from tools.tlc.runner import run_tlc
from tools.tlc.valueparser import parse_state, parse_value

_DOT_ESCAPES = {"n": "\n", "l": "\n", "r": "\n", '"': '"', "\\": "\\"}


class DotSyntaxError(AegisError):
    """A line of TLC's dot output this parser does not understand."""


@dataclass
class StateGraph:
    """The reachable states (by fingerprint), the initial ones and the labelled edges."""

    states: dict[int, dict[str, Value]] = field(default_factory=dict)
    initial: set[int] = field(default_factory=set)
    edges: set[tuple[int, str, int]] = field(default_factory=set)


_QUOTED = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"', re.S)


def _unescape(s: str) -> str:
    """Undo dot's escapes, left to right (`\\\\` first, then `\\n` and the rest)."""
    if "\\" not in s:
        return s
    parts = s.split("\\\\")
    for k, part in enumerate(parts):
        if "\\" in part:
            for esc, char in _DOT_ESCAPES.items():
                if esc != "\\":
                    part = part.replace("\\" + esc, char)
            parts[k] = part
    return "\\".join(parts)


def _statement(line: str) -> tuple[list[str], dict[str, str]]:
    """Split `A -> B [k="v",k2=v2];` into (["A", "->", "B"], {k: v, k2: v2})."""
    head, sep, rest = line.partition("[")
    attrs: dict[str, str] = {}
    if sep:
        i = 0
        while i < len(rest):
            c = rest[i]
            if c in " ,\t":
                i += 1
            elif c == "]":
                break
            else:
                eq = rest.index("=", i)
                key = rest[i:eq].strip()
                i = eq + 1
                while rest[i] == " ":
                    i += 1
                value, i = _attr_value(rest, i)
                attrs[key] = value
    return head.split(), attrs


def _attr_value(s: str, i: int) -> tuple[str, int]:
    """A quoted or bare attribute value at s[i]; and the offset after it."""
    if s[i] != '"':
        end = i
        while end < len(s) and s[end] not in ",] ":
            end += 1
        return s[i:end], end
    quoted = _QUOTED.match(s, i)
    if quoted is None:
        raise ValueError(f"unterminated string at {i}")
    return _unescape(quoted[1]), quoted.end()


def _node_id(tok: str) -> int | None:
    try:
        return int(tok)
    except ValueError:
        return None


_ASSIGN = re.compile(r"(?:^|\n)/\\ (\w+) = ")


class _StateReader:
    """Parses TLC's `/\\ x = v` state print, memoising each value's text (states share most)."""

    def __init__(self) -> None:
        self._values: dict[str, Value] = {}

    def state(self, text: str) -> dict[str, Value]:
        parts = _ASSIGN.split(text)
        if len(parts) == 1 or parts[0].strip():  # one variable prints as `x = v`, no `/\`
            return parse_state(text)
        pairs = zip(parts[1::2], parts[2::2], strict=True)
        return {name: self._value(v.strip()) for name, v in pairs}

    def _value(self, text: str) -> Value:
        v = self._values.get(text)
        if v is None:
            v = self._values[text] = parse_value(text)
        return v


def parse_dot(lines: Iterable[str]) -> StateGraph:
    """Parse TLC's dot dump; legend nodes and layout lines are skipped."""
    graph = StateGraph()
    reader = _StateReader()
    legend = False
    for raw in lines:
        line = raw.strip()
        if line.startswith("subgraph"):
            legend = line.startswith("subgraph cluster_legend")
        if not legend and _is_statement(line):
            _add_statement(graph, reader, line)
    return graph


def _is_statement(line: str) -> bool:
    """Whether `line` is a node or an edge (not blank, a brace, or the graph's header)."""
    return bool(line) and line[0] not in "{}" and not line.startswith(("strict", "digraph"))


def _add_statement(graph: StateGraph, reader: _StateReader, line: str) -> None:
    """Add one node (a state, initial when filled) or edge (with its action label)."""
    words, attrs = _parse_statement(line)
    ids = [_node_id(w) for w in words if w != "->"]
    if len(words) == 3 and words[1] == "->" and None not in ids:
        src, dst = ids
        assert src is not None and dst is not None
        graph.edges.add((src, attrs.get("label", ""), dst))
    elif len(words) == 1 and ids[0] is not None and "label" in attrs:
        _add_state(graph, reader, ids[0], attrs)


def _parse_statement(line: str) -> tuple[list[str], dict[str, str]]:
    try:
        return _statement(line)
    except (ValueError, IndexError):
        raise DotSyntaxError(f"cannot parse dot line: {line!r}") from None


def _add_state(graph: StateGraph, reader: _StateReader, node: int, attrs: dict[str, str]) -> None:
    graph.states[node] = reader.state(attrs["label"])
    if "filled" in attrs.get("style", ""):
        graph.initial.add(node)


def read_dot(path: Path) -> StateGraph:
    """Parse a dot file written by TLC."""
    with path.open(encoding="utf-8") as f:
        return parse_dot(f)


def dump_state_graph(
    spec: Path | str,
    cfg: Path | str | None = None,
    *,
    extra_args: Sequence[str] = (),
    workers: int | None = None,
) -> StateGraph:
    """Run TLC with `-dump dot,actionlabels` and parse the state graph; SpecError if partial."""
    # A violation or error stops TLC early, leaving a partial graph: that raises. Pass
    # extra_args=("-deadlock",) for a spec whose final states deadlock.
    with tempfile.TemporaryDirectory(prefix="aegis-dot-") as tmp:
        out = Path(tmp) / "states.dot"
        args = ("-dump", "dot,actionlabels", str(out), *extra_args)
        result = run_tlc(spec, cfg, extra_args=args, workers=workers)
        if not result.ok:
            why = result.violation.message if result.violation else "; ".join(result.errors)
            raise SpecError(f"{spec}: TLC did not explore the whole state graph: {why}")
        return read_dot(out)
