"""The fast trace check: replay a step log through the generated tables, step by step.

It checks what the runtime can check by itself (each logged step is a successor of the
previous logged state by the logged action, process and choices). The independent check,
TLC itself on the run's own constants, is `aegis spec validate-log` (aegis.tracevalidate).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from aegis.generated.aegis_phase import VARIABLES, Constants, State, commit, next_states
from aegis.runtime.engine import candidates, initial_state
from aegis.runtime.steplog import Change, LoggedStep, Resume, apply_changes, open_steplog
from aegis.values import Fn, Value

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
        if pid == step.process and same_successor(s.state, after, state, step.changes)
    ]
    if not legal:
        raise TraceMismatch(
            f"{where}:{step.line}: step {step.seq_no} ({step.action} {dict(step.choices)}) is "
            "not a successor of the previous state in the spec"
        )
    # the same value, as the engine keeps it: its derived sets carried over and its older
    # states let go (committed), so the next step's sets and quantifiers stay incremental
    succ = legal[0].state
    commit(succ)
    return succ


def same_successor(
    succ: State, logged: State, before: State, changes: Mapping[str, Change]
) -> bool:
    """succ == logged, for two successors of `before`, in O(what either changed): a function
    both made from before's by changing some keys (the engine's EXCEPT, which remembers the
    keys; the log's except-change, which names them) is compared at those keys only."""
    for name in VARIABLES:
        a, b = getattr(succ, name), getattr(logged, name)
        if a is b:
            continue
        keys = _compared_keys(a, b, getattr(before, name), changes.get(name))
        if keys is None and a != b:
            return False
        if keys is not None and any(a[k] != b[k] for k in keys):
            return False
    return True


def _compared_keys(a: object, b: object, old: object, ch: Change | None) -> set[Value] | None:
    """The keys at which the successors' values `a` and `b` of a variable that was `old` can
    differ (None: compare them whole)."""
    keys = _changed_keys(a, old)
    if keys is None or b is old:
        return keys
    # the log changed it too: at the keys its except-change names (any other change: whole)
    if ch is None or ch.kind != "except":
        return None
    return keys | {k for k, _ in ch.pairs}


def _changed_keys(f: object, old: object) -> set[Value] | None:
    """The keys at which f may differ from old, when f is old changed there by EXCEPT (the
    same domain: an EXCEPT of a key outside it is an error in the tables and in the log)."""
    if not (isinstance(f, Fn) and isinstance(old, Fn)):
        return None
    keys = f.changed_since(old)
    return None if keys is None or len(f) != len(old) else set(keys)
