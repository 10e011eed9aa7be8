"""The fast trace check: replay a step log through the generated tables, step by step.

It checks what the runtime can check by itself (each logged step is a successor of the
previous logged state by the logged action, process and choices). The independent check,
TLC itself on the run's own constants, is `aegis spec validate-log` (aegis.tracevalidate).
"""

from __future__ import annotations

import os

from aegis.generated.aegis_phase import Constants, State, next_states
from aegis.runtime.engine import candidates, initial_state
from aegis.runtime.steplog import LoggedStep, Resume, apply_changes, open_steplog

# A controller killed between saving its state and logging the steps that led to it resumes
# ahead of its log: the validators then look for any path of Next steps of that length from
# the last logged state to the restored one (one event's steps: an observation, decisions).
MAX_GAP = 16
MAX_BRIDGE_STATES = 200_000


class TraceMismatch(AssertionError):
    """A logged step is not a legal successor of the previous logged state."""


def check_steplog(path: str | os.PathLike[str], constants: Constants | None = None) -> int:
    """Check every applied step of the log; the number checked (TraceMismatch on the first
    bad one). The constants are the log's own; `constants`, if given, must equal them."""
    header, events = open_steplog(path)
    c = header.constants
    if constants is not None and constants != c:
        raise TraceMismatch(f"{path}: the log's constants {c} are not {constants}")
    if header.init != initial_state(c):
        raise TraceMismatch(f"{path}:{header.line}: the logged initial state is not the spec's")
    state, seq_no, checked = header.init, 0, 0
    for ev in events:
        if isinstance(ev, Resume):
            if not resumable(c, state, seq_no, ev):
                raise TraceMismatch(
                    f"{path}:{ev.line}: the resumed controller restored step {ev.seq_no}, "
                    f"which is not a state the spec reaches from step {seq_no} of the log"
                )
            state, seq_no = ev.state, ev.seq_no
            continue
        state = check_step(c, state, ev, path)
        seq_no = ev.seq_no
        checked += 1
    return checked


def resumable(c: Constants, state: State, seq_no: int, resume: Resume) -> bool:
    """Whether a restored state continues the log: the state at its last step, or (steps
    saved but not logged) one that `resume.seq_no - seq_no` steps of Next reach."""
    gap = resume.seq_no - seq_no
    if gap == 0:
        return resume.state == state
    if not 0 < gap <= MAX_GAP:
        return False
    return resume.state in reachable(c, state, gap)


def reachable(c: Constants, state: State, steps: int) -> set[State]:
    """The states exactly `steps` steps of Next lead to from `state`."""
    frontier = {state}
    for _ in range(steps):
        frontier = {succ.state for s in frontier for _, _, succ in next_states(c, s)}
        if len(frontier) > MAX_BRIDGE_STATES:
            raise TraceMismatch(f"{steps} unlogged steps: too many paths to search")
    return frontier


def check_step(c: Constants, state: State, step: LoggedStep, where: object = "") -> State:
    """The state after `step` if it is a successor of `state` (TraceMismatch if not)."""
    after = apply_changes(state, step.changes)
    legal = [
        s
        for pid, s in candidates(c, state, step.action, dict(step.choices))
        if pid == step.process and s.state == after
    ]
    if not legal:
        raise TraceMismatch(
            f"{where}:{step.line}: step {step.seq_no} ({step.action} {dict(step.choices)}) is "
            "not a successor of the previous state in the spec"
        )
    return after
