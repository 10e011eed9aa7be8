"""Interpret TLC's tool-mode messages into a `TlcResult` (statistics, violation, trace)."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable

from tools.tlc.cfg import TlcConfig
from tools.tlc.result import Progress, TlcResult, TraceStep, Violation, ViolationKind
from tools.tlc.toolmode import Code, ExitStatus, Message, Severity, describe_exit
from tools.tlc.valueparser import parse_state

_NUM = r"([\d,]+)"
_PROGRESS = re.compile(
    rf"Progress\((\d+)\).*?: {_NUM} states generated.*?, {_NUM} distinct states found.*?, "
    rf"{_NUM} states left on queue"
)
_STATS = re.compile(rf"{_NUM} states generated, {_NUM} distinct states found, {_NUM} states left")
_INIT = re.compile(rf"Finished computing initial states: {_NUM} distinct state")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_STEP = re.compile(
    r"^(\d+): <(.+?)(?: (line \d+, col \d+ to line \d+, col \d+ of module \w+))?>\s*$"
)
_NAMED = re.compile(r"(?:Invariant|[Pp]roperty) (\S+) is violated")
_ASSUMPTION = re.compile(r"Assumption (.+?) is false")
_BACK = re.compile(r"^(\d+): Back to state")
_STUTTER = re.compile(r"^(\d+): Stuttering")

# Informational messages: nothing to report beyond the statistics they carry.
_INFO = frozenset(
    {2185, 2186, 2187, 2188, 2189, 2190, 2192, 2193, 2194, 2199, 2200, 2201, 2202, 2204}
    | {2205, 2206, 2207, 2208, 2209, 2210, 2212, 2219, 2220, 2221, 2262, 2267, 2268, 2269}
)
_VIOLATIONS: dict[int, ViolationKind] = {
    Code.TLC_ASSUMPTION_FALSE: "assumption",
    Code.TLC_INVARIANT_VIOLATED_INITIAL: "invariant",
    Code.TLC_INVARIANT_VIOLATED_BEHAVIOR: "invariant",
    Code.TLC_PROPERTY_VIOLATED_INITIAL: "property",
    Code.TLC_ACTION_PROPERTY_VIOLATED_BEHAVIOR: "property",
    Code.TLC_TEMPORAL_PROPERTY_VIOLATED: "property",
    Code.TLC_DEADLOCK_REACHED: "deadlock",
}
_TRACE_HEADERS = frozenset({Code.TLC_BEHAVIOR_UP_TO_THIS_POINT, Code.TLC_COUNTER_EXAMPLE})
_TRACE_CODES = _TRACE_HEADERS | {
    Code.TLC_STATE_PRINT2,
    Code.TLC_STATE_PRINT3,
    Code.TLC_BACK_TO_STATE,
}


def _int(s: str) -> int:
    return int(s.replace(",", ""))


class ResultBuilder:
    """Accumulates messages of one run; `finish` makes the result."""

    def __init__(
        self,
        config: TlcConfig,
        on_progress: Callable[[Progress], None] | None = None,
        relocate: Callable[[str], str] = str,
    ) -> None:
        self.config = config
        self.on_progress = on_progress
        self.relocate = relocate
        self.generated: int | None = None
        self.distinct: int | None = None
        self.depth: int | None = None
        self.complete_depth: int | None = None
        self.kind: ViolationKind | None = None
        self.name: str | None = None
        self.violation_text = ""
        self.trace: list[TraceStep] = []
        self.loop: int | None = None
        self.notes: list[tuple[bool, str]] = []
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def add(self, msg: Message) -> None:
        """Take one top-level message into account."""
        if msg.code == Code.GENERAL and msg.children:
            for child in msg.children:
                self.add(child)
            return
        code = msg.code
        if code in _INFO:
            self._info(msg)
        elif code in _VIOLATIONS:
            self._violation(_VIOLATIONS[code], msg)
        elif code in _TRACE_CODES:
            self._trace(code, msg.text)
        elif msg.severity == Severity.WARNING:
            self.warnings.append(self.relocate(msg.text))
        else:  # an error, its details (e.g. "The second argument of \\div is 0.") or news
            is_error = msg.severity in (Severity.ERROR, Severity.TLCBUG)
            self.notes.append((is_error, self.relocate(msg.text)))

    def _trace(self, code: int, text: str) -> None:
        """A part of the error trace: a header (nothing to keep), a state, or where a
        behaviour loops back (a stutter or `Back to state n`)."""
        if code == Code.TLC_STATE_PRINT2:
            self._step(text)
        elif code in (Code.TLC_STATE_PRINT3, Code.TLC_BACK_TO_STATE):
            m = _STUTTER.match(text) or _BACK.match(text)
            if m:
                self.loop = int(m.group(1)) - (code == Code.TLC_STATE_PRINT3)

    def _info(self, msg: Message) -> None:
        text = msg.text
        if m := _PROGRESS.search(text):
            self.depth = int(m.group(1))
            self._stats(_int(m.group(2)), _int(m.group(3)))
            if self.on_progress is not None:
                queue = _int(m.group(4))
                self.on_progress(Progress(_int(m.group(2)), _int(m.group(3)), queue, self.depth))
        elif m := _STATS.search(text):
            self._stats(_int(m.group(1)), _int(m.group(2)))
        elif m := _INIT.search(text):
            self.distinct = self.distinct or _int(m.group(1))
        elif m := _DEPTH.search(text):
            self.complete_depth = int(m.group(1))

    def _stats(self, generated: int, distinct: int) -> None:
        self.generated, self.distinct = generated, distinct

    def _violation(self, kind: ViolationKind, msg: Message) -> None:
        first, _, rest = msg.text.partition("\n")
        self.kind = kind
        self.violation_text = self.relocate(first)
        if kind == "assumption":
            m = _ASSUMPTION.search(first)
            self.name = self.relocate(m.group(1)) if m else None
        elif m := _NAMED.search(first):
            self.name = m.group(1)
        elif msg.code == Code.TLC_TEMPORAL_PROPERTY_VIOLATED and len(self.config.properties) == 1:
            self.name = self.config.properties[0]  # TLC does not say which; None if several
        if rest.strip():  # the initial-state violations carry the state in the message
            self.trace.append(TraceStep("Initial predicate", parse_state(rest)))

    def _step(self, text: str) -> None:
        header, _, body = text.partition("\n")
        m = _STEP.match(header)
        action, location = (m.group(2), m.group(3) or "") if m else (header, "")
        self.trace.append(TraceStep(action, parse_state(body), location))

    def errors_so_far(self) -> list[str]:
        """The error texts seen so far (for a run that failed before checking anything)."""
        return [text for _, text in self.notes]

    def finish(self, exit_code: int, seconds: float, timed_out: bool = False) -> TlcResult:
        """The result once TLC has exited with `exit_code`."""
        self._keep_errors(exit_code, timed_out)
        violation = self._make_violation(exit_code, timed_out)
        finished = exit_code == ExitStatus.SUCCESS or timed_out
        return TlcResult(
            ok=finished and violation is None and not self.errors,
            exit_code=exit_code,
            distinct_states=self.distinct,
            states_generated=self.generated,
            depth=self.complete_depth if self.complete_depth is not None else self.depth,
            seconds=round(seconds, 3),
            invariants=self.config.invariants,
            properties=self.config.properties,
            violation=violation,
            errors=list(self.errors),
            warnings=list(self.warnings),
            timed_out=timed_out,
        )

    def _keep_errors(self, exit_code: int, timed_out: bool) -> None:
        """The notes are errors when one of them is, or when TLC failed without a violation."""
        failed = exit_code != ExitStatus.SUCCESS and not timed_out and self.kind is None
        if failed or any(is_error for is_error, _ in self.notes):
            self.errors = [text for _, text in self.notes]

    def _make_violation(self, exit_code: int, timed_out: bool) -> Violation | None:
        if self.kind is not None:
            return Violation(self.kind, self.name, self.trace, self.violation_text, self.loop)
        if self.errors or self.trace or (exit_code != ExitStatus.SUCCESS and not timed_out):
            first = self.errors[0] if self.errors else _failure(exit_code)
            name = " ".join(first.split())
            return Violation("error", name, self.trace, "\n".join(self.errors), self.loop)
        return None


def _failure(exit_code: int) -> str:
    """Why TLC stopped, when it said nothing about it."""
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return f"TLC was killed by {name}"
    return f"TLC failed: {describe_exit(exit_code)} (exit status {exit_code})"
