"""A job's outcome in words: the summary line and the cause of a failure.

One wording for every place a user reads it: the line `aegis run` (the controller) prints when
the job ends, the timeline's title, and `aegis ctl status` of an ended job. Pure text; the
callers gather the numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.protocol.faults import FaultKind, FaultRecord

# a fault message's "<pod>: " or "agent <pod> " is not part of what went wrong: the same
# exception on two pods is the same error
_POD_WORDS = re.compile(r"\b[a-z0-9]([-a-z0-9]*[a-z0-9])?-worker-\d+\b")
# the fault-log kinds of a failure (the kinds that can count a retry, and a check round's)
_FAILURE_KINDS = frozenset(
    {
        FaultKind.ERROR,
        FaultKind.CHECK_FAILED,
        FaultKind.RESCHEDULE,
        FaultKind.CONTAINER_RESTART,
        FaultKind.POD_LOST,
        FaultKind.EVICTED_EXIT,
        FaultKind.LOST,
        FaultKind.EVICTED,
    }
)


def times(n: int, what: str = "time") -> str:
    """`1 time`, `3 times`: a count with its noun."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


@dataclass(frozen=True)
class JobOutcome:
    """The numbers of the summary line (docs/design.md, "Checks and graded recovery")."""

    job: str
    phase: str
    max_retry: int | None
    restarts: int | None  # the command's restarts (RunCommand orders after the first)
    node_faults: int | None = None  # pods rescheduled for a hardware fault
    evicted: int | None = None  # slow nodes evicted at a checkpoint

    def line(self) -> str:
        """`job local Succeed: max retries 3, restarted 1 time, hardware faults rescheduled 0,
        slow nodes evicted 0` (a number not known is left out)."""
        parts = []
        if self.max_retry is not None:
            parts.append(f"max retries {self.max_retry}")
        if self.restarts is not None:
            parts.append(f"restarted {times(self.restarts)}")
        if self.node_faults is not None:
            parts.append(f"hardware faults rescheduled {self.node_faults}")
        if self.evicted is not None:
            parts.append(f"slow nodes evicted {self.evicted}")
        return f"job {self.job} {self.phase}: " + ", ".join(parts)


def same_error(message: str) -> str:
    """What two failures must share to be "the same error": the message without pod names."""
    return _POD_WORDS.sub("<pod>", message)


def repeated_tail(messages: Sequence[str]) -> int:
    """How many of the last `messages` in a row are the same error as the last one."""
    if not messages:
        return 0
    last = same_error(messages[-1])
    n = 0
    for m in reversed(messages):
        if same_error(m) != last:
            break
        n += 1
    return n


def describe_failures(messages: Sequence[str]) -> str:
    """The last failure, and how often it happened in a row: `the same error 3 times: ...`."""
    if not messages:
        return ""
    n = repeated_tail(messages)
    if n > 1:
        return f"the same error {n} times in a row: {messages[-1]}"
    return f"the last failure: {messages[-1]}"


def failure_cause(
    *, stopped: str | None, failures: Sequence[str], counted: int | None, max_retry: int | None
) -> str:
    """Why a job ended Failed, in one sentence: stopped (and why), or its retries exhausted
    (how many failures were counted, and the last one, with its repetitions)."""
    if stopped:
        return f"stopped: {stopped}"
    said = describe_failures(failures)
    if counted is not None and max_retry is not None and counted > max_retry:
        head = f"retries exhausted ({times(counted, 'failure')} counted, max retries {max_retry})"
        return f"{head}; {said}" if said else head
    return said or "no fault was recorded (see the state dir's steps.jsonl)"


def fault_log_cause(
    records: Sequence[Mapping[str, Any]], counted: int | None, max_retry: int | None
) -> str:
    """Why a job failed, from its fault log's records (their kinds: a record written before
    faults were typed counts as neither): its stop, else its last failures (a check round's
    failure is one too). A message is shown without the word its kind was once told by."""
    typed = [FaultRecord.from_obj(r) for r in records]
    stops = [r.message.removeprefix("stop: ") for r in typed if r.kind is FaultKind.STOP]
    failures = [r.message.removeprefix("error: ") for r in typed if r.kind in _FAILURE_KINDS]
    return failure_cause(
        stopped=stops[-1] if stops else None,
        failures=failures,
        counted=counted,
        max_retry=max_retry,
    )
