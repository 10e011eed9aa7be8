"""The spec executor: applies the generated actions to (Constants, State); pure, no I/O.

Observations (reports, joins, pod events, quit) are applied with the choices the runtime
observed; one that is not enabled is rejected and leaves the state unchanged. Decisions of
the controller are applied by `settle()` until none is enabled, in DECISION_ORDER; when an
action has several successors (restartOutsideRun over several pods) the first in the
generated order is taken, i.e. the smallest pod by name. Every step is checked against the
spec's invariants: the starting state against all of them, each step against those that read a
variable it changed (the others keep the value they had, true).

Cost per event does not grow with the number of pods: an observation binds its observed
choices into the generated enumeration (the one reporting pod is tested, not every pod
enumerated), a decision takes the first successor the generator yields, and the spec's
derived sets, quantifiers and invariants are kept current by the generated code from the
state a step came from (`commit` carries them over to each new current state).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from aegis.errors import AegisError
from aegis.generated.aegis_phase import (
    ACTIONS,
    VARIABLES,
    Constants,
    Label,
    State,
    Successor,
    commit,
    initial_states,
    violated_invariants,
)
from aegis.values import Fn, ModelValue, Value

# Wrap-up and quit first (they end the job), then failure handling, restarts, and last the
# normal advance; alignRetries before advance so that a new order carries aligned retries.
DECISION_ORDER: tuple[Label, ...] = (
    Label.failedWrapUp,
    Label.quitRequested,
    Label.retriesExhausted,
    Label.restartInRun,
    Label.evictSlow,
    Label.restartOutsideRun,
    Label.restartDone,
    Label.alignRetries,
    Label.hangWithQuit,
    Label.advance,
)
OBSERVATIONS: tuple[Label, ...] = (
    Label.receive,
    Label.agentJoin,
    Label.agentWork,
    Label.agentHang,
    Label.agentCheckpoint,
    Label.agentEvict,
    Label.envPodRestart,
    Label.envDuplicate,
    Label.envQuit,
    Label.reschedule,
    Label.jobDone,
)
RUNTIME_BUDGET = 10**9  # FaultBudget at run time: faults are not limited
MAX_SETTLE_STEPS = 1000


class EngineError(AegisError):
    """The engine cannot continue (the spec leaves a choice open, or decisions loop)."""


class InvariantViolation(EngineError):
    """A step led to a state that breaks the spec's invariants: stop the job safely."""

    def __init__(self, action: str | None, names: list[str]) -> None:
        where = "the starting state" if action is None else f"step {action}"
        super().__init__(
            f"{where} violates the spec invariant(s) {', '.join(names)}: "
            "the job is stopped; keep the step log and the status file for a bug report"
        )
        self.action = action
        self.names = names


@dataclass(frozen=True)
class StepResult:
    """One applied (or rejected) step: the state after it, or the unchanged state."""

    seq_no: int
    action: str
    process: Value
    choices: tuple[tuple[str, Value], ...]
    state: State
    applied: bool = True
    reason: str = ""
    # what the step changed, when the functions' EXCEPT provenance says (before `commit`
    # forgets it): the state it came from, and {variable: keys that may differ, or None}
    # for every variable that is not the very same object; the step log encodes the
    # changes from it in O(the keys) instead of comparing whole functions
    delta: tuple[State, Mapping[str, tuple[Value, ...] | None]] | None = field(
        default=None, compare=False, repr=False
    )


def state_delta(old: State, new: State) -> dict[str, tuple[Value, ...] | None]:
    """{variable: the keys at which a function may differ (Fn.changed_since), or None when
    unknown or not a function} for the variables of `new` that are not `old`'s object."""
    out: dict[str, tuple[Value, ...] | None] = {}
    for name in VARIABLES:
        o, v = getattr(old, name), getattr(new, name)
        if o is v:
            continue
        keys = v.changed_since(o) if isinstance(v, Fn) and isinstance(o, Fn) else None
        out[name] = None if keys is None else tuple(dict.fromkeys(keys))
    return out


def report(w: Value, kind: str, seq: int) -> Fn:
    """The spec's message for a report of pod `w` (`msgs`' element an agent's step adds).

    `replaced` (a ghost the spec's promise ReplacedIncarnationIgnored reads) is FALSE: the
    controller takes a report into the spec only from the pod's current incarnation."""
    return Fn({"from": w, "type": kind, "seq": seq, "replaced": False})


def runtime_constants(
    pods: Iterable[str], max_retry: int, *, init_seq: int = 0, budget: int = RUNTIME_BUDGET
) -> Constants:
    """The constants of a real job: Workers = its pod names as model values."""
    workers = frozenset(ModelValue(p) for p in pods)
    if not workers:
        raise EngineError("a job needs at least one pod")
    return Constants(
        Workers=workers,
        MaxRetry=max_retry,
        InitSeqNum=init_seq,
        FaultBudget=budget,
        MaxSeqGap=budget,
    )


def initial_state(c: Constants) -> State:
    """The spec's one initial state."""
    states = initial_states(c)
    if len(states) != 1:
        raise EngineError(f"the spec has {len(states)} initial states; the runtime needs one")
    return states[0]


def matches(succ: Successor, wanted: Mapping[str, Value]) -> bool:
    """Whether the successor's choices agree with every named one."""
    made = dict(succ.choices)
    return all(k in made and made[k] == v for k, v in wanted.items())


# each label's process ids in order, for the constants they were last computed under:
# settle() asks every decision's after each event, and a job's constants never change
_ORDERED_IDS: dict[str, tuple[Constants, tuple[Value, ...]]] = {}


def ordered_process_ids(c: Constants, label: str) -> tuple[Value, ...]:
    """The ids of `label`'s processes under c, in the order the engine tries them."""
    kept = _ORDERED_IDS.get(label)
    if kept is not None and kept[0] is c:
        return kept[1]
    ids = tuple(sorted(ACTIONS[label].process_ids(c), key=repr))
    _ORDERED_IDS[label] = (c, ids)
    return ids


def candidates(
    c: Constants, s: State, label: str, wanted: Mapping[str, Value]
) -> list[tuple[Value, Successor]]:
    """The (process id, successor) pairs of `label` from s whose choices match `wanted`.

    The wanted choices are bound into the generated enumeration (only successors with those
    choices are built); duplicates are removed only when there are several."""
    info = ACTIONS[label]
    out: list[tuple[Value, Successor]] = []
    for pid in ordered_process_ids(c, label):
        found = [succ for succ in info.steps(c, s, pid, wanted) if matches(succ, wanted)]
        out.extend((pid, succ) for succ in (found if len(found) < 2 else dict.fromkeys(found)))
    return out


def first_successor(c: Constants, s: State, label: str) -> tuple[Value, Successor] | None:
    """The first (process id, successor) of `label` from s in the generated order (the
    smallest process id, then the smallest choice), without building the others."""
    info = ACTIONS[label]
    for pid in ordered_process_ids(c, label):
        succ = next(info.steps(c, s, pid, {}), None)
        if succ is not None:
            return pid, succ
    return None


class Engine:
    """Holds (Constants, State) and steps it by the generated actions."""

    def __init__(
        self,
        constants: Constants,
        state: State | None = None,
        *,
        seq_no: int = 0,
        on_step: Callable[[StepResult], None] | None = None,
        check_invariants: bool = True,
        start_checked: bool = False,
    ) -> None:
        """`start_checked`: the caller already checked `state` against every invariant (a
        resumed controller does, to name the broken one in its own error)."""
        self.constants = constants
        self.state = state if state is not None else initial_state(constants)
        self.seq_no = seq_no
        self.on_step = on_step
        self.check_invariants = check_invariants
        self.rejected = 0
        if check_invariants and not start_checked:
            # every step re-checks only the invariants that read what it changed: that is
            # sound only from a state that satisfies all of them (once, O(pods))
            bad = violated_invariants(constants, self.state)
            if bad:
                raise InvariantViolation(None, bad)

    def enabled(self, label: str, **choices: Value) -> bool:
        """Whether an observation with these choices would be applied."""
        return bool(candidates(self.constants, self.state, label, choices))

    def find(self, label: str, **choices: Value) -> tuple[Value, Successor] | None:
        """The one (process id, successor) the observation would lead to; None if not enabled.

        Pass it to `take` to apply it without computing the successors again."""
        found = candidates(self.constants, self.state, label, choices)
        if len(found) > 1:
            raise EngineError(
                f"{label} with {choices} matches {len(found)} successors: the spec leaves a "
                "choice open that the observation does not fix"
            )
        return found[0] if found else None

    def observe(self, label: str, **choices: Value) -> StepResult:
        """Apply observation `label` with the observed choices, or reject it (no change)."""
        found = self.find(label, **choices)
        if found is None:
            return self.reject(label, **choices)
        return self.take(label, found)

    def take(self, label: str, found: tuple[Value, Successor]) -> StepResult:
        """Apply what `find` returned for `label` (in the state it was found in)."""
        pid, succ = found
        return self._apply(label, pid, succ)

    def reject(self, label: str, **choices: Value) -> StepResult:
        """Log and count an observation that is not enabled; the state stays as it is."""
        self.rejected += 1
        step = StepResult(
            self.seq_no,
            label,
            ACTIONS[label].process,
            tuple(choices.items()),
            self.state,
            applied=False,
            reason="not enabled",
        )
        self._emit(step)
        return step

    def settle(self) -> list[StepResult]:
        """Apply enabled decisions (DECISION_ORDER, first successor) until none is enabled."""
        steps: list[StepResult] = []
        while True:
            step = self._decide_once()
            if step is None:
                return steps
            steps.append(step)
            if len(steps) > MAX_SETTLE_STEPS:
                raise EngineError(f"decisions did not settle after {MAX_SETTLE_STEPS} steps")

    def _decide_once(self) -> StepResult | None:
        for label in DECISION_ORDER:
            found = first_successor(self.constants, self.state, label)
            if found is not None:
                pid, succ = found
                return self._apply(label, pid, succ)
        return None

    def _apply(self, label: str, pid: Value, succ: Successor) -> StepResult:
        changed = state_delta(self.state, succ.state)  # before commit forgets
        if self.check_invariants:
            bad = violated_invariants(self.constants, succ.state, changed)
            if bad:
                raise InvariantViolation(label, bad)
        delta = (self.state, changed)
        commit(succ.state, changed)  # its derived sets kept; older states become garbage
        before = (self.seq_no, self.state)
        self.seq_no += 1
        self.state = succ.state
        step = StepResult(self.seq_no, label, pid, succ.choices, succ.state, delta=delta)
        try:
            self._emit(step)
        except BaseException:
            self.seq_no, self.state = before  # a failed hook leaves the state unchanged
            raise
        return step

    def _emit(self, step: StepResult) -> None:
        if self.on_step is not None:
            self.on_step(step)
