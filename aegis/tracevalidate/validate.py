"""Validate a step log with TLC: build the trace module, run the shipped jar, read the verdict.

The verdict is TLC's: the trace module pins every variable at every step, so the depth of
TLC's search is one level per logged event it can match (and `n` more per gap of `n`
unlogged steps); it stops where it cannot. The readable diff at that step is computed
afterwards with the generated tables (they only explain; they don't judge).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aegis
from aegis.errors import AegisError
from aegis.generated.aegis_phase import ACTIONS, SPEC_MODULE, SPEC_PATH, State
from aegis.runtime.steplog import (
    Change,
    Header,
    LoggedStep,
    Resume,
    apply_changes,
    open_steplog,
)
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
from tools.tlc.jar import default_workers, physical_memory
from tools.tlc.result import TlcResult
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
    tlc_seconds: float  # the TLC runs' own times, added up
    distinct_states: int | None
    tlc_runs: int = 1  # the parts the log was validated in

    def as_json(self) -> dict[str, Any]:
        """{steps, pods, matched, first_mismatch, seconds} (+ resumes, unlogged_steps,
        tlc_seconds, tlc_runs)."""
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
            "tlc_runs": self.tlc_runs,
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
    part_bytes: int | None = None,
) -> Verdict:
    """Let TLC decide whether the step log at `path` is a behaviour of the spec.

    `spec`: the spec module (default: the one the generated tables come from); `keep`: a
    directory to leave the generated AegisTrace.tla/.cfg in (part-N/ for each part of a log
    validated in parts); `part_bytes`: the most text of logged events one TLC run takes
    (default PART_BYTES)."""
    start = time.monotonic()
    header, stream = open_steplog(path)
    plan = _plan(header, list(stream))
    spec_path = Path(spec) if spec is not None else DEFAULT_SPEC
    spec_text = spec_path.read_text(encoding="utf-8")
    actions = {label: bind_action(translation(spec_text), label) for label in ACTIONS}
    checked = plan.events if plan.problem is None else plan.events[: plan.problem[0]]
    writer = Writer(header.constants.Workers, fault_offset(header.constants, plan.min_faults))
    texts = [writer.event(ev, _choices(actions, ev)) for ev in checked]
    cfg = cfg_text(tla_constants(header.constants, writer, plan.max_seq))
    side_by_side = parallel_runs()
    parts = _parts(header.init, checked, texts, part_bytes or PART_BYTES, side_by_side)
    runs = [_Run(part, _part_module(part, actions, texts, writer, str(path))) for part in parts]
    results = _run_all(spec_path, runs, cfg, timeout, keep, side_by_side)
    mismatch = _first_mismatch(str(path), header, plan, checked, runs, results)
    steps, resumes, unlogged = _event_counts(plan.events)
    return Verdict(
        path=str(path),
        steps=steps,
        resumes=resumes,
        unlogged_steps=unlogged,
        pods=len(header.constants.Workers),
        matched=mismatch is None,
        first_mismatch=mismatch,
        seconds=time.monotonic() - start,
        tlc_seconds=sum(r.seconds for r in results),
        distinct_states=sum(r.distinct_states or 0 for r in results),
        tlc_runs=len(runs),
    )


def _event_counts(events: list[Event]) -> tuple[int, int, int]:
    """The logged steps, the resumes and the unlogged steps (in gaps) among `events`."""
    return (
        sum(isinstance(e, LoggedStep) for e in events),
        sum(isinstance(e, Resume) for e in events),
        sum(e.steps for e in events if isinstance(e, Gap)),
    )


def _part_module(
    part: _Part, actions: dict[str, BoundAction], texts: list[str], writer: Writer, path: str
) -> str:
    """The trace module of one part: its events, then the state the next part starts from."""
    pinned = [writer.pin(part.pin)] if part.pin is not None else []
    return module_text(
        SPEC_MODULE,
        actions,
        part.start,
        texts[part.first : part.end] + pinned,
        writer,
        path,
        from_init=part.first == 0,
    )


def _tlc_failure(result: TlcResult) -> str | None:
    """Why TLC gave no verdict on a part (None: it did)."""
    if not (result.errors or result.timed_out or result.exit_code != 0):
        return None
    if result.timed_out:
        return "timed out"
    return "\n".join(result.errors) or (
        f"exit {result.exit_code}, {result.violation or 'no violation reported'}"
    )


def _first_mismatch(
    path: str,
    header: Header,
    plan: _Plan,
    checked: list[Event],
    runs: list[_Run],
    results: list[TlcResult],
) -> Mismatch | None:
    """The first event TLC could not match, part by part (TraceValidationError if TLC failed)."""
    for run, result in zip(runs, results, strict=True):
        why = _tlc_failure(result)
        if why is not None:
            raise TraceValidationError(f"TLC could not validate {path}: {why}")
        found = result.distinct_states or 0  # no initial state: the logged one is not Init's
        depth = (result.depth or found) if found else 0
        mismatch = _verdict(header, plan, checked, run.part, depth)
        if mismatch is not None:
            return mismatch
    return None


# One TLC run's share of a long log. SANY's memory grows with the module's text (a
# 6.4 MB trace of a 12,500-pod job took 2.2 GB; 22 MB did not fit a 4 GB heap), and
# parts run side by side, one per core.
PART_BYTES = 4_000_000
# Below this much text a log is one run, whatever the cores (a run starts in 2-5 s).
PARALLEL_BYTES = 1_000_000
# The memory one run of a part may take (a 4 MB part of a 12,500-pod log: ~1.5-2 GB).
RUN_MEMORY = 3 << 30


def parallel_runs() -> int:
    """How many TLC runs go side by side: one per core, as many as the memory holds."""
    memory = physical_memory()
    fit = 1 if memory is None else max(1, memory // RUN_MEMORY)
    return min(default_workers(), fit)


@dataclass(frozen=True)
class _Part:
    """checked[first:end], from `start`; `pin`: the state its last event must reach, which
    the next part starts from (None for the last part)."""

    first: int
    end: int
    start: State
    pin: State | None


@dataclass(frozen=True)
class _Run:
    part: _Part
    module: str


def _parts(
    init: State, checked: list[Event], texts: list[str], most: int, cores: int
) -> list[_Part]:
    """Cut the events into parts of at most `most` bytes of text (and into one per core when
    there is enough to share), never between a gap and the resume that ends it."""
    total = sum(len(t) for t in texts)
    n = max(-(-total // most), min(cores, total // PARALLEL_BYTES), 1)
    share = -(-total // n)
    cuts: list[int] = []
    size = 0
    for i, t in enumerate(texts):
        if size >= share and not isinstance(checked[i - 1], Gap):
            cuts.append(i)
            size = 0
        size += len(t)
    bounds = [0, *cuts, len(checked)]
    states = _states_at(init, checked, cuts)
    return [
        _Part(a, b, states[a], states[b] if b < len(checked) else None)
        for a, b in itertools.pairwise(bounds)
    ]


def _states_at(init: State, checked: list[Event], cuts: list[int]) -> dict[int, State]:
    """The state the log has reached before each cut (and 0), by replaying its changes."""
    states = {0: init}
    state, want = init, set(cuts)
    for i, ev in enumerate(checked):
        if i in want:
            states[i] = state
        if isinstance(ev, Resume):
            state = ev.state
        elif isinstance(ev, LoggedStep):
            state = apply_changes(state, ev.changes)
    return states


def _verdict(
    header: Header, plan: _Plan, checked: list[Event], part: _Part, depth: int
) -> Mismatch | None:
    """The first event of `part` beyond the depth TLC reached (a gap: the resume that ends
    it); None if TLC matched the whole part."""
    if depth == 0:
        if part.first > 0:
            raise TraceValidationError(f"TLC found no state to start event {part.first + 1} from")
        return explain(header, plan.events, -1, "")
    reached = depth - 1  # levels after the initial state
    for i in range(part.first, part.end):
        ev = checked[i]
        reached -= 1 + (ev.steps if isinstance(ev, Gap) else 0)
        if reached < 0:
            return _unmatched(header, plan, checked, i)
    if part.pin is not None:
        if reached < 1:
            raise TraceValidationError(
                f"TLC matched events {part.first + 1}..{part.end} but did not reach the state "
                "the log's own replay reaches there: the trace module and the step log "
                "disagree on a change's meaning"
            )
        return None
    if plan.problem is not None:
        return explain(header, plan.events, plan.problem[0], plan.problem[1])
    return None


def _unmatched(header: Header, plan: _Plan, checked: list[Event], i: int) -> Mismatch:
    """Event `i` is beyond TLC's depth: it, or (after a gap) the resume that ends the gap."""
    ev = checked[i]
    gap = ev if isinstance(ev, Gap) else checked[i - 1] if i > 0 else None
    if not isinstance(gap, Gap):
        return explain(header, plan.events, i, "")
    why = (
        f"no {gap.steps} steps of the spec lead from step {gap.seq_no}, the last "
        "logged, to the state the resumed controller restored"
    )
    return explain(header, plan.events, i + 1 if gap is ev else i, why)


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


def _run_all(
    spec: Path, runs: list[_Run], cfg: str, timeout: float | None, keep: Any, cores: int
) -> list[TlcResult]:
    """TLC on each part, `cores` at a time; each within what is left of `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="aegis-trace-") as tmp:
        root = Path(keep) if keep is not None else Path(tmp)
        dirs = [root] if len(runs) == 1 else [root / f"part-{i + 1}" for i in range(len(runs))]

        def one(i: int) -> TlcResult:
            d = dirs[i]
            d.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(spec, d / f"{SPEC_MODULE}.tla")
            (d / f"{MODULE}.tla").write_text(runs[i].module, encoding="utf-8")
            (d / f"{MODULE}.cfg").write_text(cfg, encoding="utf-8")
            left = None if deadline is None else max(1.0, deadline - time.monotonic())
            return run_tlc(
                d / f"{MODULE}.tla",
                d / f"{MODULE}.cfg",
                extra_args=["-deadlock"],  # the end of the log is no deadlock
                workers=1,
                timeout=left,
            )

        with _java_options(JAVA_STACK), ThreadPoolExecutor(max(1, min(cores, len(runs)))) as pool:
            return list(pool.map(one, range(len(runs))))


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
