"""The controller's runtime bookkeeping, persisted beside the spec state (not part of the
model): incarnations, the pods declared lost, counters, the last failure reason of each pod,
each pod's replaced incarnations, and a few numbers (the step number, the command orders, the
last published masterSeq)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aegis.runtime.controller.undo import TrackedCounter, TrackedDict, UndoLog
from aegis.runtime.engine import StepResult
from aegis.values import Fn, apply


class Extras:
    """Runtime bookkeeping persisted beside the spec state (not part of the model); its maps
    log their changes in `undo` (a rollback and a WAL record cost O(the changes))."""

    MAPS = ("incarnations", "evicted", "counters", "reasons", "failures", "retired")

    def __init__(
        self,
        *,
        incarnations: Mapping[str, str | None] | None = None,
        step_no: int = 0,
        command_orders: int = 0,
        published_seq: int = -1,
        counters: Mapping[str, int] | None = None,
        evicted: Mapping[str, str] | None = None,
        reasons: Mapping[str, str] | None = None,
        failures: Mapping[str, int] | None = None,
        retired: Mapping[str, list[str]] | None = None,
    ) -> None:
        self.undo = UndoLog()
        self.incarnations: TrackedDict[str, str | None] = _tracked(self.undo, incarnations)
        self.step_no = step_no
        self.command_orders = command_orders
        self.published_seq = published_seq
        self.counters = TrackedCounter(self.undo, (counters or {}).items())
        # pod -> its incarnation that must leave: declared lost (missed heartbeats), or evicted
        # at a checkpoint (it reported Evicted: its exit is that eviction's, not a node fault)
        self.evicted: TrackedDict[str, str] = _tracked(self.undo, evicted)
        self.reasons: TrackedDict[str, str] = _tracked(self.undo, reasons)  # last failure
        # pod -> the failures counted against it (the spec's per-pod retries are aligned to
        # the job's recoverCount at each restart, so they do not say which pod failed)
        self.failures: TrackedDict[str, int] = _tracked(self.undo, failures)
        # pod -> its replaced incarnations, the last few (aegis.runtime.controller.identity)
        self.retired: TrackedDict[str, list[str]] = _tracked(self.undo, retired)
        for name, value in self.counters.items():
            if not isinstance(name, str) or not isinstance(value, int):
                raise TypeError(f"counter {name!r} = {value!r}: not a count")

    def scalars(self) -> tuple[int, int, int]:
        """(step_no, command_orders, published_seq): what a rollback restores besides `undo`."""
        return self.step_no, self.command_orders, self.published_seq

    def set_scalars(self, values: tuple[int, int, int]) -> None:
        """The inverse of `scalars`."""
        self.step_no, self.command_orders, self.published_seq = values

    def to_json(self) -> dict[str, Any]:
        """The JSON object kept in Status.runtime (the reasons are in its podInfos)."""
        return {
            "incarnations": dict(self.incarnations),
            "stepNo": self.step_no,
            "commandOrders": self.command_orders,
            "publishedSeq": self.published_seq,
            "counters": dict(self.counters),
            "evicted": dict(self.evicted),
            "failures": dict(self.failures),
            "retired": dict(self.retired),
        }

    @classmethod
    def from_json(cls, ex: Mapping[str, Any], reasons: Mapping[str, str] | None = None) -> Extras:
        """The inverse of `to_json` (missing keys take their defaults)."""
        return cls(
            incarnations=dict(ex.get("incarnations", {})),
            step_no=int(ex.get("stepNo", 0)),
            command_orders=int(ex.get("commandOrders", 0)),
            published_seq=int(ex.get("publishedSeq", -1)),
            counters=dict(ex.get("counters", {})),
            evicted=dict(ex.get("evicted", {})),
            reasons=reasons,
            failures={str(k): int(v) for k, v in dict(ex.get("failures", {})).items()},
            retired={str(p): list(i) for p, i in dict(ex.get("retired", {})).items()},
        )

    def delta(self) -> dict[str, Any]:
        """What changed since the last commit (`undo.forget`): the part of a WAL record."""
        out: dict[str, Any] = {
            "stepNo": self.step_no,
            "commandOrders": self.command_orders,
            "publishedSeq": self.published_seq,
        }
        for name in self.MAPS:
            target: TrackedDict[str, Any] = getattr(self, name)
            keys = list(self.undo.changed(target))
            if keys:
                out[name] = {
                    "set": {k: target[k] for k in keys if k in target},
                    "del": [k for k in keys if k not in target],
                }
        return out

    def apply_delta(self, delta: Mapping[str, Any]) -> None:
        """Replay a `delta` (ValueError, TypeError or KeyError if it is not one)."""
        self.set_scalars(
            (int(delta["stepNo"]), int(delta["commandOrders"]), int(delta["publishedSeq"]))
        )
        for name in self.MAPS:
            change = delta.get(name)
            if change is None:
                continue
            target: TrackedDict[str, Any] = getattr(self, name)
            sets, dels = change["set"], change["del"]
            if not isinstance(sets, dict) or not isinstance(dels, list):
                raise TypeError(f"{name}: set must be an object and del a list")
            if name in ("counters", "failures") and not all(
                isinstance(v, int) for v in sets.values()
            ):
                raise TypeError(f"{name}: counts must be integers")
            target.update(sets)
            for key in dels:
                target.pop(key, None)

    def evicts(self, pod: str, incarnation: str | None) -> bool:
        """Whether this incarnation of `pod` must leave (evicted at a checkpoint, or lost)."""
        return incarnation is not None and self.evicted.get(pod) == incarnation

    def note_counted_failure(self, step: StepResult) -> None:
        """A step that counted a failure (count_failure: restartInRun, evictSlow, receive of
        an Error) charges it to its pod in `failures`."""
        if step.delta is None or "countedFailures" not in step.delta[1]:
            return
        if int(step.state.countedFailures) <= int(step.delta[0].countedFailures):
            return
        choices = dict(step.choices)
        who = choices.get("w")
        message = choices.get("m")
        if who is None and isinstance(message, Fn):
            who = apply(message, "from")
        if who is not None:
            pod = str(who)
            self.failures[pod] = self.failures.get(pod, 0) + 1


def _tracked(undo: UndoLog, items: Mapping[str, Any] | None) -> TrackedDict[str, Any]:
    return TrackedDict(undo, (items or {}).items())
