"""The trace module: AegisPhase extended with the run's constants and its logged steps.

    TraceInit  == traceIndex = 0 /\\ Init /\\ every variable = its logged initial value
    TraceNext  == traceIndex < Len(TraceLog) /\\ traceIndex' = traceIndex + 1
                  /\\ LET e == TraceLog[traceIndex + 1] IN
                        T_<e.a>(e.c)               \\* the logged action, its logged choices
                        /\\ every variable' = its logged value after the step

TLC explores exactly one path (every variable is pinned at every step), so the depth of its
search is 1 + the number of logged events it could match. A gap (steps a killed controller
saved but never logged) is `n` steps of Next, any: a resume event then pins the state.
TLC tells states apart by `TraceView` (VIEW in the config): a pinned state by its place in
the log, which saves hashing every per-pod function at every step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aegis.errors import AegisError
from aegis.generated.aegis_phase import VARIABLES, Constants, State
from aegis.runtime.steplog import Change, LoggedStep, Resume
from aegis.tracevalidate.actions import BoundAction
from aegis.values import Fn, ModelValue, Value, sorted_values

MODULE = "AegisTrace"
RESUME = "(resume)"
GAP = "(gap)"


@dataclass(frozen=True)
class Gap:
    """`steps` steps that were saved but never logged, before the resume at `line`."""

    line: int
    seq_no: int  # the last logged step before them
    steps: int


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TraceModuleError(AegisError):
    """A logged value or step that the trace module cannot express."""


@dataclass(frozen=True)
class TlaConstants:
    """The constants TLC runs with (see docs/trace-validation.md for why they are sound)."""

    pods: tuple[str, ...]  # identifiers of the pods, in the log's order
    max_retry: int
    init_seq: int
    fault_budget: int  # the logged budget less `fault_offset`
    max_seq_gap: int
    fault_offset: int  # subtracted from every logged value of `faults`


def _scalar(v: bool | int | str) -> str:
    """A boolean, integer or string as TLA+ text."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v) if v >= 0 else f"(0 - {-v})"  # Naturals has no unary minus
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Writer:
    """Renders spec values as TLA+ text, with the pods as the module's constants."""

    def __init__(self, workers: frozenset[Value], fault_offset: int = 0) -> None:
        self.order = sorted_values(workers)
        self.names: dict[Value, str] = {}
        taken: set[str] = set()
        for w in self.order:
            base = "pod_" + re.sub(r"\W", "_", w.name if isinstance(w, ModelValue) else str(w))
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            self.names[w] = name
        self.workers = frozenset(workers)
        self.fault_offset = fault_offset

    def value(self, v: Value) -> str:
        """v as a TLA+ expression."""
        if isinstance(v, bool | int | str):
            return _scalar(v)
        if isinstance(v, ModelValue):
            if v not in self.names:
                raise TraceModuleError(f"model value {v.name} is not one of the run's pods")
            return self.names[v]
        if isinstance(v, frozenset):
            return "{" + ", ".join(self.value(x) for x in sorted_values(v)) + "}"
        if isinstance(v, tuple):
            return "<<" + ", ".join(self.value(x) for x in v) + ">>"
        if isinstance(v, Fn):
            return self._fn(v)
        raise TraceModuleError(f"not a TLA+ value: {v!r:.80}")

    def _fn(self, f: Fn) -> str:
        if not f:
            return "<<>>"
        if frozenset(f) == self.workers:
            return self._per_worker(f)
        keys = sorted_values(f)
        if all(isinstance(k, str) and _IDENT.match(k) for k in keys):
            return "[" + ", ".join(f"{k} |-> {self.value(f[k])}" for k in keys) + "]"
        return "(" + " @@ ".join(f"{self.value(k)} :> {self.value(f[k])}" for k in keys) + ")"

    def _per_worker(self, f: Fn) -> str:
        """A function over all the pods: TraceAll(v) when it is constant, else TraceFW."""
        values = [f[w] for w in self.order]
        if all(x == values[0] for x in values):
            return f"TraceAll({self.value(values[0])})"
        return "TraceFW(<<" + ", ".join(self.value(x) for x in values) + ">>)"

    def var_value(self, name: str, v: Value) -> str:
        """A variable's value (faults shifted by the offset)."""
        if name == "faults" and isinstance(v, int):
            v -= self.fault_offset
        return self.value(v)

    def change(self, name: str, ch: Change) -> str:
        """A logged change as the record TraceUpd reads."""
        if ch.kind == "=":
            return f'[k |-> "=", v |-> {self.var_value(name, ch.value)}]'
        if ch.kind == "all":
            return f'[k |-> "all", v |-> {self.value(ch.value)}]'
        if ch.kind == "except":
            pairs = ", ".join(f"<<{self.value(k)}, {self.value(v)}>>" for k, v in ch.pairs)
            return f'[k |-> "except", v |-> <<{pairs}>>]'
        return f'[k |-> "delta", plus |-> {self.value(ch.plus)}, minus |-> {self.value(ch.minus)}]'

    def state(self, s: State) -> str:
        """A whole state as a record {variable: value}."""
        return (
            "[" + ", ".join(f"{n} |-> {self.var_value(n, getattr(s, n))}" for n in VARIABLES) + "]"
        )

    def pin(self, s: State) -> str:
        """An element of TraceLog that takes no step and matches only in state s (a resume
        record; also where a part of a log validated in parts ends)."""
        return f'[a |-> "{RESUME}", d |-> <<>>, s |-> {self.state(s)}]'

    def event(self, ev: LoggedStep | Resume | Gap, choices: Sequence[str]) -> str:
        """One element of TraceLog."""
        if isinstance(ev, Gap):
            return f'[a |-> "{GAP}", n |-> {ev.steps}, d |-> <<>>]'
        if isinstance(ev, Resume):
            return self.pin(ev.state)
        made = dict(ev.choices)
        missing = [n for n in choices if n not in made]
        if missing:
            raise TraceModuleError(
                f"line {ev.line}: step {ev.seq_no} ({ev.action}) does not log its choice(s) "
                f"{missing}"
            )
        c = "[" + ", ".join(f"{n} |-> {self.value(made[n])}" for n in choices) + "]"
        d = ", ".join(f"{n} |-> {self.change(n, ch)}" for n, ch in ev.changes.items())
        return (
            f'[a |-> "{ev.action}", p |-> {self.value(ev.process)}, '
            f"c |-> {c if choices else '<<>>'}, d |-> {'[' + d + ']' if d else '<<>>'}]"
        )


def module_text(
    spec_module: str,
    actions: Mapping[str, BoundAction],
    init: State,
    events: Iterable[str],
    w: Writer,
    source: str,
    *,
    from_init: bool = True,
) -> str:
    """The whole trace module (`events` are Writer.event texts, in order). `init` is the
    state the events start from: the log's first, which must satisfy the spec's Init too
    (`from_init`), or the state where an earlier part of the log, validated apart, ended."""
    pods = ", ".join(w.names[x] for x in w.order)
    bound = "\n\n".join(a.text for a in actions.values())
    arms = "\n       [] ".join(
        f'e.a = "{label}" -> e.p = "{label}" /\\ T_{label}(e.c)' for label in actions
    )
    resume = "\n                          ".join(f"/\\ {n} = e.s.{n}" for n in VARIABLES)
    init_lines = "\n             ".join(
        ["/\\ Init"] * from_init
        + [f"/\\ {n} = {w.var_value(n, getattr(init, n))}" for n in VARIABLES]
    )
    values = "\n                ".join(f'/\\ {n}\' = TraceNew(e, "{n}", {n})' for n in VARIABLES)
    log = ",\n  ".join(events)
    text = f"""---------------------------- MODULE {MODULE} ----------------------------
\\* Generated by `aegis spec validate-log` from {source}: do not edit.
\\* The run's steps as a behaviour for TLC to match (docs/trace-validation.md).
EXTENDS {spec_module}, Sequences, TLC

CONSTANTS {pods}

VARIABLES traceIndex, \\* the logged events matched
          traceGap     \\* steps of Next left to take in a gap

TracePods == <<{pods}>>
TracePodIndex == [x \\in Workers |-> CHOOSE k \\in 1..Len(TracePods) : TracePods[k] = x]
TraceFW(vs) == [x \\in Workers |-> vs[TracePodIndex[x]]]
TraceAll(v) == [x \\in Workers |-> v]
RECURSIVE TracePatch(_, _)
TracePatch(f, ps) ==
    IF ps = <<>> THEN f ELSE TracePatch([f EXCEPT ![Head(ps)[1]] = Head(ps)[2]], Tail(ps))
TraceUpd(old, d) ==
    CASE d.k = "=" -> d.v
      [] d.k = "except" -> TracePatch(old, d.v)
      [] d.k = "all" -> [x \\in DOMAIN old |-> d.v]
      [] d.k = "delta" -> (old \\ d.minus) \\cup d.plus
TraceNew(e, name, old) == IF name \\in DOMAIN e.d THEN TraceUpd(old, e.d[name]) ELSE old

\\* The actions of Next with their choices bound to the logged ones (T_A(c) => A).
{bound}

TraceLog == <<
  {log}
>>

TraceInit == /\\ traceIndex = 0
             /\\ traceGap = 0
             {init_lines}

TraceStep(e) ==
    CASE {arms}
       [] e.a = "{RESUME}" -> /\\ UNCHANGED vars
                          {resume}

TraceValues(e) ==
                {values}

\\* What TLC fingerprints to tell states apart: a state outside a gap is the one its logged
\\* events pin, so its place in the log names it; inside a gap, and where the gap's steps
\\* end, states that differ are kept apart (docs/trace-validation.md, "What TLC hashes").
TraceView ==
    IF traceGap > 0 \\/ (traceIndex > 0 /\\ TraceLog[traceIndex].a = "{GAP}")
    THEN <<traceIndex, traceGap, vars>>
    ELSE <<traceIndex, traceGap>>

TraceNext ==
    \\/ /\\ traceGap > 0
       /\\ traceGap' = traceGap - 1
       /\\ UNCHANGED traceIndex
       /\\ Next
    \\/ /\\ traceGap = 0
       /\\ traceIndex < Len(TraceLog)
       /\\ traceIndex' = traceIndex + 1
       /\\ LET e == TraceLog[traceIndex + 1] IN
            IF e.a = "{GAP}" THEN traceGap' = e.n /\\ UNCHANGED vars
                           ELSE traceGap' = 0 /\\ TraceStep(e) /\\ TraceValues(e)
=============================================================================
"""
    return wrap_long_lines(text)


# SANY checks every module for a PlusCal translation (pcal.Validator), which rebuilds each
# line a character at a time: O(length^2) per line, and a 12,500-pod trace's CONSTANTS line
# would be 400 KB long; lines are kept short instead.
LINE_WIDTH = 200


def wrap_long_lines(text: str, width: int = LINE_WIDTH) -> str:
    """`text` with each line longer than `width` broken after a `, ` (outside strings),
    its continuations indented 4 columns past the line's start. Only the module's generated
    value lists are that long; a line with a junction bullet after its start is left alone
    (a continuation left of that bullet would end its list)."""
    return "\n".join(_wrap(line, width) for line in text.split("\n"))


def _wrap(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    start = len(line) - len(line.lstrip())
    body = line[start + 2 :] if line.startswith(("/\\", "\\/"), start) else line[start:]
    code = _outside_strings(body)
    if "/\\" in code or "\\/" in code:
        return line
    return ("\n" + " " * (start + 4)).join(_cut_after_commas(line, width))


def _cut_after_commas(line: str, width: int) -> list[str]:
    """`line` cut after the first `, ` (outside strings) at least `width` past each cut."""
    parts: list[str] = []
    cut, in_string, i = 0, False, 0
    while i < len(line):
        c = line[i]
        if in_string and c == "\\":
            i += 2
            continue
        if c == '"':
            in_string = not in_string
        elif not in_string and c == "," and line.startswith(", ", i) and i - cut >= width:
            parts.append(line[cut : i + 1])
            cut = i + 2
        i += 1
    parts.append(line[cut:])
    return parts


def _outside_strings(s: str) -> str:
    """s with the contents of its string literals blanked."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', s)


def cfg_text(k: TlaConstants) -> str:
    """The model config: pods as model values, the run's other constants."""
    pods = "\n".join(f"    {p} = {p}" for p in k.pods)
    return f"""\\* Generated by `aegis spec validate-log`: the run's constants
\\* (docs/trace-validation.md).
INIT TraceInit
NEXT TraceNext
VIEW TraceView
CONSTANTS
{pods}
    Workers = {{{", ".join(k.pods)}}}
    MaxRetry = {k.max_retry}
    InitSeqNum = {k.init_seq}
    FaultBudget = {k.fault_budget}
    MaxSeqGap = {k.max_seq_gap}
"""


def fault_offset(c: Constants, min_faults: int) -> int:
    """How much of the logged FaultBudget the run never came near (see docs): the least value
    `faults` took in the log, which every logged value of `faults` is shifted down by."""
    if not all(isinstance(x, int) for x in (c.MaxRetry, c.InitSeqNum, c.FaultBudget)):
        raise TraceModuleError("MaxRetry, InitSeqNum and FaultBudget must be integers")
    return max(0, min(min_faults, c.FaultBudget))


def tla_constants(c: Constants, w: Writer, max_seq: int) -> TlaConstants:
    """The constants for TLC: the logged ones, FaultBudget/MaxSeqGap made small (see docs)."""
    offset = w.fault_offset
    budget = c.FaultBudget
    return TlaConstants(
        pods=tuple(w.names[x] for x in w.order),
        max_retry=c.MaxRetry,
        init_seq=c.InitSeqNum,
        fault_budget=budget - offset,
        max_seq_gap=max(0, max_seq - c.InitSeqNum),
        fault_offset=offset,
    )
