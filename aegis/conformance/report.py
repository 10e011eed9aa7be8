"""A conformance report for people (text) and programs (JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aegis.conformance.compare import Mismatch, Report
from aegis.conformance.tlcgraph import Key
from aegis.values import render


def state_text(variables: Sequence[str], key: Key, indent: str = "    ") -> str:
    """The state in TLC's `/\\ var = value` form."""
    return "\n".join(f"{indent}/\\ {v} = {render(x)}" for v, x in zip(variables, key, strict=True))


def change_text(variables: Sequence[str], src: Key | None, dst: Key) -> str:
    """A successor as the variables it changes (all of them when there is no source)."""
    pairs = [(v, a, b) for v, a, b in zip(variables, src or (None,) * len(dst), dst, strict=True)]
    changed = [f"{v}' = {render(b)}" for v, a, b in pairs if src is None or a != b]
    return ", ".join(changed) or "(no change: stutter)"


def mismatch_text(variables: Sequence[str], m: Mismatch) -> str:
    """One mismatch: what, where, and what each side produced."""
    head = f"{m.kind}: action {m.action}" if m.action else m.kind
    lines = [head + (f" ({m.detail})" if m.detail else "")]
    if m.state is not None:
        lines += ["  in state", state_text(variables, m.state)]
    if m.kind in ("edges", "initial"):
        for side, succs in (("TLC", m.tlc), ("Python", m.python)):
            lines.append(f"  {side} produced {len(succs)}:")
            lines += [f"    {change_text(variables, m.state, s)}" for s in succs]
            only = set(succs) - set(m.python if side == "TLC" else m.tlc)
            if only:
                lines.append(f"    (of which only {side} has {len(only)})")
    return "\n".join(lines)


def report_text(variables: Sequence[str], r: Report) -> str:
    """The summary line and every mismatch."""
    verdict = "conforms" if r.ok else f"{len(r.mismatches)} mismatch(es)"
    lines = [
        f"{r.states} states and {r.edges} edges compared with TLC's {r.tlc_states} and "
        f"{r.tlc_edges} in {r.seconds:.1f}s: {verdict}"
    ]
    if r.unreached:
        lines.append(f"{r.unreached} of TLC's states were not reached (after the first divergence)")
    lines += [f"note: {note}" for note in r.notes]
    lines += [mismatch_text(variables, m) for m in r.mismatches]
    return "\n".join(lines)


def report_json(variables: Sequence[str], r: Report) -> dict[str, Any]:
    """{states, edges, mismatches, seconds, ...} with values rendered in TLC syntax."""

    def state(k: Key | None) -> dict[str, str] | None:
        return None if k is None else {v: render(x) for v, x in zip(variables, k, strict=True)}

    return {
        "states": r.states,
        "edges": r.edges,
        "tlc_states": r.tlc_states,
        "tlc_edges": r.tlc_edges,
        "unreached": r.unreached,
        "seconds": round(r.seconds, 3),
        "ok": r.ok,
        "notes": list(r.notes),
        "mismatches": [
            {
                "kind": m.kind,
                "action": m.action,
                "state": state(m.state),
                "tlc": [state(s) for s in m.tlc],
                "python": [state(s) for s in m.python],
                "detail": m.detail,
            }
            for m in r.mismatches
        ],
    }
