"""Render a generated package's phase machine as Mermaid, Graphviz dot or SVG."""

from __future__ import annotations

import shutil
import subprocess
from types import ModuleType

from aegis.errors import SpecError, ToolMissingError

FORMATS = ("mermaid", "dot", "svg")
GRAPHVIZ_HINT = "graphviz's `dot` is not installed: apt-get install -y graphviz"


def render(generated: ModuleType, fmt: str) -> str:
    """The diagram of `generated.PhaseMachine` in format `fmt`."""
    machine = getattr(generated, "PhaseMachine", None)
    if machine is None:
        raise SpecError(f"{generated.SPEC_PATH} has no phase variable: no phase machine to draw")
    if fmt == "mermaid":
        return f"{machine:mermaid}"
    if fmt == "dot":
        return to_dot(generated)
    if fmt == "svg":
        return to_svg(to_dot(generated))
    raise ValueError(f"unknown diagram format {fmt!r}: use one of {', '.join(FORMATS)}")


def to_dot(generated: ModuleType) -> str:
    """Graphviz source: phases as nodes, one edge per (label, from, to)."""
    name = generated.PhaseMachine.__name__
    lines = [f"digraph {name} {{", "    rankdir=LR;", "    node [shape=box, style=rounded];"]
    lines.append('    "__start" [shape=point, label=""];')
    lines.append(f'    "__start" -> {_quote(generated.INITIAL_PHASE)};')
    for phase in generated.PHASES:
        lines.append(f"    {_quote(phase)};")
    for label, source, target in generated.PHASE_TRANSITIONS:
        lines.append(f"    {_quote(source)} -> {_quote(target)} [label={_quote(label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(dot_source: str) -> str:
    """SVG drawn by graphviz's `dot`."""
    exe = shutil.which("dot")
    if exe is None:
        raise ToolMissingError(GRAPHVIZ_HINT)
    done = subprocess.run([exe, "-Tsvg"], input=dot_source, capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolMissingError(f"dot -Tsvg failed: {done.stderr.strip()}")
    return done.stdout


def _quote(value: object) -> str:
    text = getattr(value, "name", None) if not isinstance(value, str) else value
    text = str(text if text is not None else value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
