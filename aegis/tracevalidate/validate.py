"""Validate a step log with TLC: build the trace module, run the shipped jar, read the verdict.

The verdict is TLC's: the trace module pins every variable at every step, so the depth of
TLC's search is one level per logged event it can match (and `n` more per gap of `n`
unlogged steps); it stops where it cannot. The readable diff at that step is computed
afterwards with the generated tables (they only explain; they don't judge).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aegis
from aegis.errors import AegisError
from aegis.generated.aegis_phase import ACTIONS, SPEC_MODULE, SPEC_PATH, State
from aegis.runtime.steplog import Change, Header, LoggedStep, Resume, open_steplog
from aegis.runtime.trace_check import MAX_GAP
from aegis.tracevalidate.actions import BoundAction, bind_action, translation
from aegis.tracevalidate.diff import explain
from aegis.tracevalidate.module import (
    MODULE,
    Gap,
    Writer,
    cfg_text,
    fault_offset,
    module_text,
    tla_constants,
)
from tools.tlc.runner import run_tlc

DEFAULT_SPEC = Path(aegis.__file__).resolve().parent.parent / SPEC_PATH
# TLC expands a \A over Workers in an action's guard (AllReady in advance) into one nested
# call per pod: a 1,000-pod trace needs more than the JVM's default thread stack.
JAVA_STACK = "-Xss256m"


class TraceValidationError(AegisError):
    """TLC could not run on the trace (an error, not a verdict)."""


@dataclass
class Mismatch:
    """The first logged event TLC cannot match, and why (from the generated tables)."""

    event: int  # 1-based among the validated events; 0 = the initial state
    line: int
    seq_no: int | None
    action: str
    process: str | None
    choices: dict[str, Any]
    reason: str
    diff: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The `first_mismatch` object of `--json`."""
        return {
            "event": self.event,
            "line": self.line,
            "seq_no": self.seq_no,
            "action": self.action,
            "process": self.process,
            "choices": self.choices,
            "reason": self.reason,
            "diff": self.diff,
        }


@dataclass
class Verdict:
    """What `aegis spec validate-log` reports."""

    path: str
    steps: int  # applied steps in the log (rejected observations are not steps)
    resumes: int
    unlogged_steps: int  # saved by a controller killed before it logged them (gaps)
    pods: int
    matched: bool
    first_mismatch: Mismatch | None
    seconds: float
    tlc_seconds: float
    distinct_states: int | None

    def as_json(self) -> dict[str, Any]:
        """{steps, pods, matched, first_mismatch, seconds} (+ resumes, tlc_seconds)."""
        return {
            "steps": self.steps,
            "pods": self.pods,
            "matched": self.matched,
            "first_mismatch": None
            if self.first_mismatch is None
            else self.first_mismatch.as_json(),
            "seconds": round(self.seconds, 3),
            "resumes": self.resumes,
            "unlogged_steps": self.unlogged_steps,
            "tlc_seconds": round(self.tlc_seconds, 3),
        }


Event = LoggedStep | Resume | Gap


@dataclass
class _Plan:
    """The events TLC gets, and a structural problem found before TLC (if any)."""

    events: list[Event]
    problem: tuple[int, str] | None  # (index into events, reason): TLC stops before it
    min_faults: int
    max_seq: int


def validate_log(
    path: str | os.PathLike[str],
    *,
    spec: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    keep: str | os.PathLike[str] | None = None,
) -> Verdict:
    """Let TLC decide whether the step log at `path` is a behaviour of the spec.

    `spec`: the spec module (default: the one the generated tables come from); `keep`: a
    directory to leave the generated AegisTrace.tla/.cfg in."""
    start = time.monotonic()
    header, stream = open_steplog(path)
    plan = _plan(header, list(stream))
    spec_path = Path(spec) if spec is not None else DEFAULT_SPEC
    spec_text = spec_path.read_text(encoding="utf-8")
    actions = {label: bind_action(translation(spec_text), label) for label in ACTIONS}
    checked = plan.events if plan.problem is None else plan.events[: plan.problem[0]]
    writer = Writer(header.constants.Workers, fault_offset(header.constants, plan.min_faults))
    events = [writer.event(ev, _choices(actions, ev)) for ev in checked]
    module = module_text(SPEC_MODULE, actions, header.init, events, writer, str(path))
    cfg = cfg_text(tla_constants(header.constants, writer, plan.max_seq))
    result = _run(spec_path, module, cfg, timeout, keep)
    if result.errors or result.timed_out or result.exit_code != 0:
        why = (
            "timed out"
            if result.timed_out
            else "\n".join(result.errors)
            or (f"exit {result.exit_code}, {result.violation or 'no violation reported'}")
        )
        raise TraceValidationError(f"TLC could not validate {path}: {why}")
    found = result.distinct_states or 0  # no initial state: the logged one is not Init's
    mismatch = _verdict(header, plan, checked, (result.depth or found) if found else 0)
    steps = sum(isinstance(e, LoggedStep) for e in plan.events)
    return Verdict(
        path=str(path),
        steps=steps,
        resumes=sum(isinstance(e, Resume) for e in plan.events),
        unlogged_steps=sum(e.steps for e in plan.events if isinstance(e, Gap)),
        pods=len(header.constants.Workers),
        matched=mismatch is None,
        first_mismatch=mismatch,
        seconds=time.monotonic() - start,
        tlc_seconds=result.seconds,
        distinct_states=result.distinct_states,
    )


def _verdict(header: Header, plan: _Plan, checked: list[Event], depth: int) -> Mismatch | None:
    """The first event beyond the depth TLC reached (a gap: the resume that ends it)."""
    if depth == 0:
        return explain(header, plan.events, -1, "")
    reached = depth - 1  # levels after the initial state
    for i, ev in enumerate(checked):
        reached -= 1 + (ev.steps if isinstance(ev, Gap) else 0)
        if reached < 0:
            gap = ev if isinstance(ev, Gap) else checked[i - 1] if i > 0 else None
            if isinstance(gap, Gap):
                why = (
                    f"no {gap.steps} steps of the spec lead from step {gap.seq_no}, the last "
                    "logged, to the state the resumed controller restored"
                )
                return explain(header, plan.events, i + 1 if gap is ev else i, why)
            return explain(header, plan.events, i, "")
    if plan.problem is not None:
        return explain(header, plan.events, plan.problem[0], plan.problem[1])
    return None


def _choices(actions: dict[str, BoundAction], ev: Event) -> tuple[str, ...]:
    return actions[ev.action].choices if isinstance(ev, LoggedStep) else ()


def _plan(header: Header, logged: list[LoggedStep | Resume]) -> _Plan:
    """Scan the events: the least `faults`, the greatest `masterSeq`, structural problems,
    and a gap before a resume that restored steps which were saved but never logged."""
    init: State = header.init
    min_faults, max_seq = int(init.faults), int(init.masterSeq)
    seq_no = 0
    events: list[Event] = []
    problem: tuple[int, str] | None = None
    for ev in logged:
        if isinstance(ev, Resume):
            min_faults = min(min_faults, int(ev.state.faults))
            max_seq = max(max_seq, int(ev.state.masterSeq))
            gap = ev.seq_no - seq_no
            if 0 < gap <= MAX_GAP:
                events.append(Gap(ev.line, seq_no, gap))
            elif gap != 0 and problem is None:
                problem = (len(events), _resume_gap(ev.seq_no, seq_no))
            seq_no = ev.seq_no
            events.append(ev)
            continue
        min_faults = min(min_faults, _int_of(ev.changes.get("faults"), min_faults))
        max_seq = max(max_seq, _int_of(ev.changes.get("masterSeq"), max_seq))
        if problem is None:
            if ev.action not in ACTIONS:
                problem = (len(events), f"{ev.action} is not an action of the spec")
            elif ev.seq_no != seq_no + 1:
                why = f"step {ev.seq_no} follows step {seq_no}: the log misses steps"
                problem = (len(events), why)
        seq_no = ev.seq_no
        events.append(ev)
    return _Plan(events, problem, min_faults, max_seq)


def _resume_gap(restored: int, logged: int) -> str:
    if restored > logged:
        return (
            f"the resumed controller restored step {restored}, but the log ends at step "
            f"{logged}: more than {MAX_GAP} steps were saved but never logged"
        )
    return (
        f"the resumed controller restored step {restored}, but the log goes on to step "
        f"{logged}: steps {restored + 1}..{logged} were logged but never saved"
    )


def _int_of(ch: Change | None, default: int) -> int:
    if ch is not None and ch.kind == "=" and isinstance(ch.value, int):
        return ch.value
    return default


def _run(spec: Path, module: str, cfg: str, timeout: float | None, keep: Any) -> Any:
    with tempfile.TemporaryDirectory(prefix="aegis-trace-") as tmp:
        d = Path(keep) if keep is not None else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec, d / f"{SPEC_MODULE}.tla")
        (d / f"{MODULE}.tla").write_text(module, encoding="utf-8")
        (d / f"{MODULE}.cfg").write_text(cfg, encoding="utf-8")
        with _java_options(JAVA_STACK):
            return run_tlc(
                d / f"{MODULE}.tla",
                d / f"{MODULE}.cfg",
                extra_args=["-deadlock"],  # the end of the log is no deadlock
                workers=1,
                timeout=timeout,
            )


@contextmanager
def _java_options(option: str) -> Iterator[None]:
    """JVM options for the TLC run (tools.tlc.run_tlc takes none): JAVA_TOOL_OPTIONS."""
    key = "JAVA_TOOL_OPTIONS"
    old = os.environ.get(key)
    os.environ[key] = f"{old} {option}" if old else option
    try:
        yield
    finally:
        if old is None:
            del os.environ[key]
        else:
            os.environ[key] = old
