"""Explain a step TLC could not match: which logged values no successor of the spec has.

Computed with the generated tables from the state the log had reached before that step (the
verdict is TLC's; this only makes it readable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aegis.generated.aegis_phase import ACTIONS, VARIABLES, Constants, State
from aegis.runtime.engine import candidates, initial_state
from aegis.runtime.steplog import Header, LoggedStep, Resume, apply_changes
from aegis.runtime.trace_check import reachable
from aegis.tracevalidate.module import Gap
from aegis.values import Fn, Value, render
from tools.tlc.result import jsonable

if TYPE_CHECKING:
    from aegis.tracevalidate.validate import Mismatch

_MAX_SHOWN = 5


def explain(header: Header, events: Sequence[object], index: int, reason: str) -> Mismatch:
    """The Mismatch of event `index` (-1: the initial state); `reason` if already known."""
    from aegis.tracevalidate.validate import Mismatch

    c = header.constants
    if index < 0:
        return Mismatch(
            0,
            header.line,
            None,
            "Init",
            None,
            {},
            reason or "the logged initial state is not the spec's Init for the logged constants",
            _diff(header.init, [initial_state(c)]),
        )
    state = _state_after(header.init, events[:index])
    number = 1 + sum(isinstance(e, LoggedStep | Resume) for e in events[:index])
    ev = events[index]
    if isinstance(ev, Resume):
        gap = events[index - 1] if index > 0 else None
        return _resume_mismatch(c, state, ev, gap, number, reason)
    assert isinstance(ev, LoggedStep)
    return _step_mismatch(header, events[:index], state, ev, number, reason)


def _step_mismatch(
    header: Header,
    before: Sequence[object],
    state: State,
    ev: LoggedStep,
    number: int,
    reason: str,
) -> Mismatch:
    """The Mismatch of a logged step from `state` (the one the events `before` reached)."""
    from aegis.tracevalidate.validate import Mismatch

    choices = {k: jsonable(v) for k, v in ev.choices}
    mismatch = Mismatch(number, ev.line, ev.seq_no, ev.action, _name(ev.process), choices, reason)
    if reason:
        return mismatch
    mismatch.reason, mismatch.diff = _step(header.constants, state, ev)
    replaced = _replaced_sender(header.init, before, ev)
    if replaced and not mismatch.diff:
        mismatch.reason = f"{mismatch.reason}: {replaced}"
    return mismatch


def _resume_mismatch(
    c: Constants, state: State, ev: Resume, gap: object, number: int, reason: str
) -> Mismatch:
    """The Mismatch of a resume whose restored state the log did not reach (after a Gap of
    steps saved but not logged: any state a path of that length reaches)."""
    from aegis.tracevalidate.validate import Mismatch

    states = list(reachable(c, state, gap.steps)) if isinstance(gap, Gap) else [state]
    return Mismatch(
        number,
        ev.line,
        ev.seq_no,
        "(resume)",
        None,
        {},
        reason or "the resumed controller restored a state the log never reached",
        _diff(ev.state, states) if states else {},
    )


def _advance(state: State, e: object) -> State:
    """The state after logged event `e` (a Resume restores its state, a step changes it)."""
    if isinstance(e, Resume):
        return e.state
    if isinstance(e, LoggedStep):
        return apply_changes(state, e.changes)
    return state


def _state_after(init: State, events: Sequence[object]) -> State:
    """The state the log reached after `events`."""
    state = init
    for e in events:
        state = _advance(state, e)
    return state


# the steps that replace a pod's incarnation (its reports in flight are then a replaced one's)
_REPLACING = ("envPodRestart", "reschedule")


def _replaced_sender(init: State, before: Sequence[object], ev: LoggedStep) -> str:
    """Why a report cannot be received, when that is why: its sender's incarnation was
    replaced after the report was sent ("" otherwise)."""
    m = dict(ev.choices).get("m")
    if ev.action != "receive" or not isinstance(m, Fn) or "from" not in m:
        return ""
    sender = m["from"]
    replaced = _replacing_step(init, before, m, sender)
    if replaced is None:
        return ""
    return (
        f"the report {render(m)} was sent by an incarnation of {_name(sender)} that step "
        f"{replaced.seq_no} ({replaced.action}, line {replaced.line}) replaced: a report "
        "counts only for the incarnation that sent it (ReplacedIncarnationIgnored)"
    )


def _replacing_step(
    init: State, before: Sequence[object], m: Fn, sender: Value
) -> LoggedStep | None:
    """The step that replaced the incarnation of `sender` that sent report `m`, when no live
    incarnation has had `m` in flight since (None otherwise)."""
    live, replaced = False, None
    state = init
    for e in before:
        state = _advance(state, e)
        if not isinstance(e, LoggedStep):
            continue
        if e.action in _REPLACING and live and dict(e.choices).get("w") == sender:
            replaced = e
        # in flight from a live incarnation (sent again by a new one: not stale)
        live = any(_same_report(m, x) and not _get(x, "replaced") for x in state.msgs)
        replaced = None if live else replaced
    return replaced


def _get(f: Value, key: str) -> Value:
    return f[key] if isinstance(f, Fn) and key in f else None


def _same_report(a: Fn, b: Value) -> bool:
    """Whether b is report a, whether or not either is marked replaced."""
    if not isinstance(b, Fn):
        return False
    keys = ("from", "type", "seq")
    return all(k in b and k in a and a[k] == b[k] for k in keys)


def _step(c: Constants, state: State, ev: LoggedStep) -> tuple[str, dict[str, dict[str, Any]]]:
    if ev.action not in ACTIONS:
        return f"{ev.action} is not an action of the spec", {}
    if ev.process != ACTIONS[ev.action].process:
        return f"the process {_name(ev.process)} does not take {ev.action}", {}
    after = apply_changes(state, ev.changes)
    succs = [s.state for pid, s in candidates(c, state, ev.action, dict(ev.choices))]
    if not succs:
        return _not_enabled(c, state, ev), {}
    if after in succs:
        return (
            "TLC found no successor with the logged values, but the generated tables do: "
            "the tables and the spec disagree (regenerate them: aegis spec gen)",
            {},
        )
    return "no successor of the logged action reaches the logged values", _diff(after, succs)


def _not_enabled(c: Constants, state: State, ev: LoggedStep) -> str:
    """Why the logged action has no successor with its logged choices (and which it has)."""
    others = [dict(s.choices) for _, s in candidates(c, state, ev.action, {})]
    if not others:
        return f"{ev.action} is not enabled in the state the log reached"
    shown = "; ".join(
        ", ".join(f"{k} = {render(v)}" for k, v in o.items()) for o in others[:_MAX_SHOWN]
    )
    more = f" (and {len(others) - _MAX_SHOWN} more)" if len(others) > _MAX_SHOWN else ""
    return f"{ev.action} is not enabled with the logged choices; it is with: {shown}{more}"


def _name(v: Value) -> str:
    return v if isinstance(v, str) else render(v)


def _diff(logged: State, spec: list[State]) -> dict[str, dict[str, Any]]:
    """{variable: {"logged": .., "spec": ..}} for the variables no spec state agrees on."""
    out: dict[str, dict[str, Any]] = {}
    for name in VARIABLES:
        mine = getattr(logged, name)
        theirs = [getattr(s, name) for s in spec]
        if any(mine == t for t in theirs):
            continue
        first = theirs[0]
        out[name] = {"logged": _show(mine, first), "spec": _show(first, mine)}
    return out


def _show(v: Value, other: Value) -> Any:
    """v as JSON, a function cut down to the keys where it differs from `other`."""
    if isinstance(v, Fn) and isinstance(other, Fn) and set(v) == set(other):
        return {render(k): jsonable(v[k]) for k in v if v[k] != other[k]}
    if isinstance(v, frozenset) and isinstance(other, frozenset):
        return {"only here": jsonable(v - other)}
    return jsonable(v)


def render_mismatch(m: Mismatch) -> str:
    """The human text of a mismatch."""
    head = f"line {m.line}"
    if m.seq_no is not None:
        head += f", step {m.seq_no}"
    what = m.action
    if m.choices:
        what += " " + ", ".join(f"{k} = {v}" for k, v in m.choices.items())
    lines = [f"first mismatch: event {m.event} ({head}): {what}", f"  {m.reason}"]
    for name, d in m.diff.items():
        lines.append(f"  {name}: logged {d['logged']}, spec {d['spec']}")
    return "\n".join(lines)
