"""Human-readable text for a TLC result: statistics, checked names, counterexample."""

from __future__ import annotations

from aegis.values import Value, render
from tools.tlc.result import TlcResult, TraceStep, Violation


def _num(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


def format_result(result: TlcResult, title: str) -> str:
    """The report `aegis spec check` prints for one run."""
    verdict = "no error found" if result.ok else "FAILED"
    lines = [
        f"{title}: {verdict}",
        f"  states generated  {_num(result.states_generated)}",
        f"  distinct states   {_num(result.distinct_states)}",
        f"  depth             {_num(result.depth)}",
        f"  seconds           {result.seconds:.1f}",
    ]
    for kind, names in (("invariant", result.invariants), ("property", result.properties)):
        lines += [f"  {kind:<9} {name:<28} {_status(result, kind, name)}" for name in names]
    if result.violation is not None:
        lines += ["", *format_violation(result.violation)]
    return "\n".join(lines)


def _status(result: TlcResult, kind: str, name: str) -> str:
    v = result.violation
    if v is not None and v.kind == kind and v.name == name:
        return "VIOLATED"
    if v is not None and v.kind == "property" and v.name is None and kind == "property":
        return "VIOLATED (one of the properties)"
    return "holds" if result.ok else "not fully checked (TLC stopped)"


def format_violation(v: Violation) -> list[str]:
    """The violation headline and its trace, showing only changed variables after step 1."""
    if v.kind == "error":
        lines = [f"error: {v.name}"]
        if v.message and " ".join(v.message.split()) != v.name:
            lines += ["  " + ln for ln in v.message.splitlines()]
    else:
        what = v.kind if v.name is None else f"{v.kind} {v.name}"
        lines = [f"{what}: {v.message}" if v.message else what]
    before: dict[str, Value] = {}
    for i, step in enumerate(v.trace, start=1):
        lines += _step(i, step, before)
        before = step.state
    if v.loop is not None:
        lines.append(f"  then back to state {v.loop} (a cycle: the behaviour repeats forever)")
    return lines


def _step(i: int, step: TraceStep, before: dict[str, Value]) -> list[str]:
    lines = [f"  {i}: {step.action}"]
    changed = {k: x for k, x in step.state.items() if k not in before or before[k] != x}
    for name in sorted(changed):
        lines.append(f"       {name} = {render(changed[name])}")
    if not changed:
        lines.append("       (no change)")
    return lines
