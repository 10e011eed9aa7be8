"""The step log: one JSON line per engine step, so that a real run can be checked against the spec.

What TLC needs and no more (docs/trace-validation.md has the format):

  line 1      {"format": 2, "constants": {name: value}, "init": {variable: value}, "t": ...}
  a step      {"seq_no", "action", "process", "choices", "changed": {variable: change}, "t"}
  rejected    {"seq_no", "action", "process", "choices", "rejected": reason, "t"}
  a resume    {"resume": seq_no, "state": {variable: value}, "t"}   (a restarted controller)

Values use the tagged JSON of aegis.protocol.state_codec. A step lists only the variables it
changed (found by identity first, then by value), so a step costs O(1) in the number of pods
for everything it left alone; a changed function or set is written as the smallest of:
its full value, {"except": [[key, value], ...]} (the keys that changed), {"all": value} (every
key maps to one value) or {"plus": [...], "minus": [...]} (a set's added and removed elements).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aegis.errors import AegisError
from aegis.generated.aegis_phase import CONSTANT_NAMES, VARIABLES, Constants, State
from aegis.protocol import json_bytes
from aegis.protocol.state_codec import (
    CodecError,
    decode,
    decode_choices,
    decode_state,
    encode,
    encode_choices,
    encode_state,
)
from aegis.runtime.engine import StepResult
from aegis.values import Fn, Value

FORMAT = 2


class StepLogError(AegisError):
    """A step log that is malformed, truncated or not in the current format (names the line)."""


# ---------------- changes: what a step did to one variable ----------------


def encode_change(old: Value, new: Value) -> Any:
    """The JSON of `new` given `old` (smallest of full value / except / all / plus-minus)."""
    if isinstance(old, Fn) and isinstance(new, Fn) and len(new) > 1 and old.keys() == new.keys():
        values = iter(new.values())
        first = next(values)
        if all(v == first for v in values):
            return {"all": encode(first)}
        changed = [(k, v) for k, v in new.items() if old[k] != v]
        if len(changed) <= len(new) // 2:
            return {"except": [[encode(k), encode(v)] for k, v in changed]}
    if isinstance(old, frozenset) and isinstance(new, frozenset):
        plus, minus = new - old, old - new
        if len(plus) + len(minus) < len(new):
            return {"plus": encode(plus)["set"], "minus": encode(minus)["set"]}
    return encode(new)


@dataclass(frozen=True)
class Change:
    """A decoded change: kind "=" (value), "except" (pairs), "all" (value), "delta" (sets)."""

    kind: str
    value: Value = None
    pairs: tuple[tuple[Value, Value], ...] = ()
    plus: frozenset[Value] = frozenset()
    minus: frozenset[Value] = frozenset()

    def apply(self, old: Value) -> Value:
        """The new value of a variable whose value was `old`."""
        if self.kind == "=":
            return self.value
        if self.kind == "except":
            if not isinstance(old, Fn):
                raise StepLogError(f"an except-change of a non-function {old!r:.60}")
            try:  # O(the pairs): a log of a 12,500-pod job replays in O(its steps)
                return old.with_values(self.pairs)
            except KeyError as exc:
                key = exc.args[0]
                raise StepLogError(f"an except-change of key {key!r} outside the domain") from None
        if self.kind == "all":
            if not isinstance(old, Fn):
                raise StepLogError(f"an all-change of a non-function {old!r:.60}")
            return Fn((k, self.value) for k in old)
        if not isinstance(old, frozenset):
            raise StepLogError(f"a set change of a non-set {old!r:.60}")
        return (old - self.minus) | self.plus


def decode_change(o: Any) -> Change:
    """The Change of an `encode_change` JSON value."""
    if isinstance(o, dict) and set(o) == {"plus", "minus"}:
        return Change("delta", plus=_decode_set(o["plus"]), minus=_decode_set(o["minus"]))
    if isinstance(o, dict) and len(o) == 1 and "except" in o:
        pairs = o["except"]
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in pairs
        ):
            raise CodecError("except must be a list of [key, value] pairs")
        return Change("except", pairs=tuple((decode(k), decode(v)) for k, v in pairs))
    if isinstance(o, dict) and len(o) == 1 and "all" in o:
        return Change("all", value=decode(o["all"]))
    return Change("=", value=decode(o))


def _decode_set(o: Any) -> frozenset[Value]:
    if not isinstance(o, list):
        raise CodecError("plus/minus must be lists")
    return frozenset(decode(x) for x in o)


def changes_between(
    old: State | None, new: State, delta: Mapping[str, tuple[Value, ...] | None] | None = None
) -> dict[str, Any]:
    """{variable: encoded change} of the variables that differ (all of them if old is None).
    With `delta` (engine.state_delta from `old` to `new`) a variable it leaves out is
    unchanged and a function whose changed keys it names is encoded as an except of those
    keys: O(the keys), where comparing two functions costs O(pods)."""
    out: dict[str, Any] = {}
    # with a delta only its variables can differ (it names every one that is another object)
    for name in VARIABLES if delta is None else delta:
        v = getattr(new, name)
        if old is None:
            out[name] = encode(v)
            continue
        o = getattr(old, name)
        if o is v:
            continue
        keys = None if delta is None else delta[name]
        if keys is not None and isinstance(o, Fn) and isinstance(v, Fn):
            changed = [(k, v[k]) for k in keys if o[k] != v[k]]
            if changed:
                out[name] = {"except": [[encode(k), encode(x)] for k, x in changed]}
            continue
        if o == v:
            continue
        out[name] = encode_change(o, v)
    return out


def apply_changes(state: State, changes: Mapping[str, Change]) -> State:
    """The state after a step that made `changes`."""
    if not changes:
        return state
    values = state.as_dict()
    for name, ch in changes.items():
        values[name] = ch.apply(values[name])
    return State.from_dict(values)


# ---------------- writing ----------------


def step_record(step: StepResult, before: State | None) -> dict[str, Any]:
    """The JSON object of one step (the changes from `before`; everything if it is None)."""
    rec: dict[str, Any] = {
        "seq_no": step.seq_no,
        "action": step.action,
        "process": encode(step.process),
        "choices": encode_choices(step.choices),
    }
    if step.applied:
        delta = step.delta[1] if step.delta is not None and step.delta[0] is before else None
        rec["changed"] = changes_between(before, step.state, delta)
    else:
        rec["rejected"] = step.reason
    return rec


def encode_constants(c: Constants) -> dict[str, Any]:
    """{constant: encoded value}."""
    return {name: encode(getattr(c, name)) for name in CONSTANT_NAMES}


def decode_constants(o: Mapping[str, Any]) -> Constants:
    """The Constants of an `encode_constants` object (CodecError if one is missing)."""
    missing = [n for n in CONSTANT_NAMES if n not in o]
    if missing:
        raise CodecError(f"constants lack {missing}")
    return Constants(**{n: decode(o[n]) for n in CONSTANT_NAMES})


class StepLog:
    """Appends step records to a JSON-lines file (flushed per line, fsynced on close).

    It remembers the last state it wrote, so that each step lists only what changed; a
    resumed controller calls `write_resume` with the state it restored."""

    def __init__(
        self, path: str | os.PathLike[str], on_full: Callable[[OSError], bool] | None = None
    ) -> None:
        """`on_full(exc)`: called when a write fails; True: room was made, try again."""
        self.path = Path(path)
        self.on_full = on_full
        # unbuffered: a write that fails leaves nothing behind in a buffer, to be written
        # (a piece of a line) by the next one
        self._f = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        self._last: State | None = None
        if self._f.tell() > 0 and not _ends_with_newline(self.path):
            self._f.write(b"\n")  # a line torn by a crash stays a line of its own

    def write(self, step: StepResult) -> None:
        """Append one step, stamped with the wall-clock time it was logged ("t", seconds)."""
        self.write_all((step,))

    def write_all(self, steps: Iterable[StepResult]) -> None:
        """Append steps (a commit's) in one write: one flush, not one per step. If it fails,
        the next write's changes are still counted from the last state written."""
        last, lines = self._last, []
        for step in steps:
            lines.append(_line(step_record(step, last)))
            if step.applied:
                last = step.state
        self._append(b"".join(lines))
        self._last = last

    @property
    def empty(self) -> bool:
        """Whether nothing was logged yet (a resumed controller then logs the header first)."""
        return self._f.tell() == 0

    def write_initial(self, constants: Constants, state: State) -> None:
        """Write the first record: the run's constants and its initial state. A log already
        there is emptied first: it is what a controller that died before its first status
        save wrote (nothing of that start was saved, so nothing of it happened)."""
        if not self.empty:
            self._f.seek(0)
            self._f.truncate()
        self._put(
            {
                "format": FORMAT,
                "constants": encode_constants(constants),
                "init": encode_state(state),
            }
        )
        self._last = state

    def write_resume(self, seq_no: int, state: State) -> None:
        """Append a resume record: a restarted controller continues from step `seq_no`, in
        the state it restored from its store."""
        self._put({"resume": seq_no, "state": encode_state(state)})
        self._last = state

    def _put(self, rec: dict[str, Any]) -> None:
        self._append(_line(rec))

    def _append(self, data: bytes) -> None:
        """Write whole lines or nothing: a failed write (a full disk) is cut off again, so
        the log never holds part of a line; with room made by `on_full`, once more."""
        try:
            self._write_whole(data)
        except OSError as exc:
            if self.on_full is None or not self.on_full(exc):
                raise
            self._write_whole(data)

    def _write_whole(self, data: bytes) -> None:
        start = self._f.tell()
        view = memoryview(data)
        try:
            while view:
                view = view[self._f.write(view) or 0 :]
        except OSError:
            with contextlib.suppress(OSError):
                self._f.truncate(start)
                self._f.seek(start)
            raise

    def close(self) -> None:
        """Fsync and close."""
        if not self._f.closed:
            with contextlib.suppress(OSError):  # a full disk: what was written stays
                os.fsync(self._f.fileno())
            self._f.close()


def _line(rec: dict[str, Any]) -> bytes:
    """One record's line, stamped with the wall-clock time ("t", seconds)."""
    rec["t"] = round(time.time(), 6)
    return json_bytes.dumps(rec) + b"\n"


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


# ---------------- reading ----------------


def read_steplog(path: str | os.PathLike[str], *, strict: bool = False) -> Iterator[dict[str, Any]]:
    """The JSON records of a step log, in order, each with its line number under "_line".

    A line torn by a controller crash is skipped when a resume record follows it, or when it
    is the last line and not `strict` (a log still being written); any other malformed line
    raises StepLogError naming it."""
    torn: tuple[int, str] | None = None
    with open(path, "rb") as f:  # a line is decoded in the try: a crash may cut a character
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                if torn is not None:
                    raise _malformed(path, *torn) from None
                torn = (lineno, str(exc))
                continue
            if torn is not None:
                if "resume" not in rec:
                    raise _malformed(path, *torn)
                torn = None
            rec["_line"] = lineno
            yield rec
    if torn is not None and strict:
        raise StepLogError(
            f"{path}:{torn[0]}: truncated (the last line is incomplete: {torn[1]}); the "
            "controller was stopped while writing it -- remove that line to check the rest"
        )


def _malformed(path: str | os.PathLike[str], lineno: int, why: str) -> StepLogError:
    return StepLogError(f"{path}:{lineno}: malformed step record ({why})")


@dataclass(frozen=True)
class Header:
    """The first line: the run's constants and initial state."""

    constants: Constants
    init: State
    line: int = 1


@dataclass(frozen=True)
class LoggedStep:
    """One applied step as logged (rejected observations are not steps and are skipped)."""

    line: int
    seq_no: int
    action: str
    process: Value
    choices: tuple[tuple[str, Value], ...]
    changes: dict[str, Change] = field(default_factory=dict)


@dataclass(frozen=True)
class Resume:
    """A restarted controller's record: it continues after step `seq_no`, in `state`."""

    line: int
    seq_no: int
    state: State


Event = LoggedStep | Resume


def open_steplog(path: str | os.PathLike[str]) -> tuple[Header, Iterator[Event]]:
    """The header and the applied steps and resumes of a step log (strict: StepLogError on
    any malformed or truncated line, with its number)."""
    records = read_steplog(path, strict=True)
    first = next(records, None)
    if first is None:
        raise StepLogError(f"{path}: empty step log")
    header = _header(path, first)
    return header, _events(path, records)


def _header(path: str | os.PathLike[str], rec: dict[str, Any]) -> Header:
    line = rec["_line"]
    if "init" not in rec:
        raise StepLogError(f"{path}:{line}: the log does not start with the initial state")
    if rec.get("format") != FORMAT or "constants" not in rec:
        raise StepLogError(
            f"{path}:{line}: step log format {rec.get('format', 1)}, not {FORMAT} (a log "
            "written before the constants were logged holds full states; it cannot be validated)"
        )
    try:
        return Header(decode_constants(rec["constants"]), decode_state(rec["init"]), line)
    except (CodecError, TypeError, KeyError) as exc:
        raise StepLogError(f"{path}:{line}: bad initial record: {exc}") from None


def _events(path: str | os.PathLike[str], records: Iterator[dict[str, Any]]) -> Iterator[Event]:
    for rec in records:
        line = rec["_line"]
        try:
            if "resume" in rec:
                yield Resume(line, int(rec["resume"]), decode_state(rec["state"]))
            elif "init" in rec:
                raise StepLogError(f"{path}:{line}: a second initial record")
            elif "rejected" in rec:
                continue
            else:
                unknown = set(rec["changed"]) - set(VARIABLES)
                if unknown:
                    raise CodecError(f"unknown variable(s) {sorted(unknown)}")
                yield LoggedStep(
                    line,
                    int(rec["seq_no"]),
                    str(rec["action"]),
                    decode(rec["process"]),
                    decode_choices(rec["choices"]),
                    {k: decode_change(v) for k, v in rec["changed"].items()},
                )
        except KeyError as exc:
            raise StepLogError(f"{path}:{line}: malformed step record (no {exc!s:.80})") from None
        except (CodecError, TypeError, ValueError) as exc:
            raise StepLogError(f"{path}:{line}: malformed step record ({exc!s:.200})") from None
