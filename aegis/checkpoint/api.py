"""`save(state_dict, step)` into the node agent's shared memory, `load()` of the latest
complete step: the training side of Aegis's checkpoints (docs/checkpoints.md).

A save plans the version (nothing written if the state dict cannot be saved), gets a version
file from its agent, copies the state into it, and commits it: only a committed version
exists for the agent, so a rank that dies at any point of a save leaves the previous one
whole. The file is the one the last commit's reply reserved (the save then tells the agent
it writes it, not waiting), else asked for (`begin`). The commit is sent without waiting for
its reply (read at the next save; a refusal, which only a torn version gets, is a warning
then): once sent, the agent has it, and the agent reads all a dead rank sent before it
reports the failure. `strict=True` asks for its file and waits for its commit. Where
shared memory cannot hold the version, the agent says so and the rank writes it to the
checkpoint directory itself (a warning: that save blocks for the write). A save never
raises for a bad input or a missing agent: it warns and returns a `SaveResult` whose `ok` is
False (training goes on); `strict=True` raises `CheckpointError` instead.

`save(..., asynchronous=True)` returns once the version file is chosen and the copy has
started in a thread: the copy runs beside the next step's forward and backward, and the
next optimizer step (any `torch.optim.Optimizer`, through a global step pre-hook), save or
load waits for it. The version is committed only if no tensor it copies was changed in
place meanwhile (their version counters); otherwise it is dropped with a warning and the
previous version stands. `wait()` returns the outcome of the last asynchronous save.

`load()` returns the step the controller chose when it restarted the job: the newest step
every rank of the job holds, from the agent's memory after an in-place restart (zero-copy:
the tensors map the agent's version privately) or from the persisted copy after a
reschedule; None on a fresh job. It raises `CheckpointError` when that step cannot be read:
a rank never starts from scratch by mistake.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from aegis.checkpoint import disk, wire
from aegis.checkpoint.client import AgentClient, AgentUnavailable
from aegis.checkpoint.plan import Plan, SaveInputError, Template, plan_state
from aegis.checkpoint.slot import VersionError, read_persisted, read_version, write_version
from aegis.checks import stackdump
from aegis.errors import AegisError

log = logging.getLogger(__name__)

# tests only: called with the name of each point of a save (the crash-at-every-point tests)
PROBE: Callable[[str], None] | None = None


class CheckpointError(AegisError):
    """A checkpoint could not be saved (strict) or a chosen step cannot be restored."""


@dataclass(frozen=True)
class SaveResult:
    """What a save did: `ok`, where the version went ("memory" or "storage"), how long the
    training was blocked, the version's bytes, and why not when not `ok`."""

    ok: bool
    step: int
    where: str = ""
    seconds: float = 0.0
    nbytes: int = 0
    error: str = ""
    persisting: bool = False  # the agent persists this step (every K saves)
    pending: bool = False  # asynchronous: the copy goes on; `wait()` says how it ended


@dataclass(frozen=True)
class Restored:
    """The restored step, its state dict, where it came from ("memory" or "disk")."""

    step: int
    state: dict[Any, Any]
    source: str
    seconds: float


_client: list[AgentClient | None] = []
_pending: list[tuple[threading.Thread, list[SaveResult]]] = []  # the asynchronous save
_hooked: list[object] = []  # the optimizer step pre-hook, once registered
_maps: dict[str, tuple[mmap.mmap, torch.Tensor]] = {}  # version file -> its writable map
_framed: dict[str, Template] = {}  # version file -> the layout last written whole into it
_warned: set[str] = set()


def _agent() -> AgentClient | None:
    if not _client:
        _client.append(AgentClient.from_env())
        stackdump.register()
    return _client[0]


def _warn(kind: str, message: str) -> None:
    """A warning, once per kind (a failing save every step would flood the log)."""
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(f"aegis.checkpoint: {message}", RuntimeWarning, stacklevel=3)
    log.warning("aegis.checkpoint: %s", message)


def _probe(point: str) -> None:
    if PROBE is not None:
        PROBE(point)


def available() -> bool:
    """Whether this process runs under an Aegis agent (its saves go somewhere)."""
    return _agent() is not None


def save(
    state_dict: Mapping[Any, Any], step: int, *, strict: bool = False, asynchronous: bool = False
) -> SaveResult:
    """Copy `state_dict` as step `step` into the agent's memory; returns once it is copied
    (or, `asynchronous`, once the copy has started)."""
    wait()
    started = time.perf_counter()

    def failed(kind: str, message: str) -> SaveResult:
        if strict:
            raise CheckpointError(message)
        _warn(kind, message)
        return SaveResult(False, step, seconds=time.perf_counter() - started, error=message)

    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return failed("step", f"step must be an int >= 0, not {step!r}; nothing saved")
    client = _agent()
    if client is None:
        return failed("no-agent", "not running under an Aegis agent; nothing saved")
    try:
        plan = plan_state(state_dict, step)
    except SaveInputError as exc:
        return failed("input", f"step {step} not saved: {exc}")
    try:
        if asynchronous:
            return _store_async(client, plan, started)
        return _store(client, plan, started, strict)
    except AgentUnavailable as exc:
        return failed("agent", f"step {step} not saved: {exc}")
    except _Refused as exc:
        return failed(exc.kind, f"step {step} not saved: {exc}")


class _Refused(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _begin(client: AgentClient, plan: Plan, started: float) -> wire.Reply | SaveResult:
    """The agent's version file for `plan` (its reply), or the result of saving to storage
    directly when shared memory cannot hold it."""
    reply = client.request("begin", step=plan.step, bytes=plan.total, kind=plan.kind)
    _late(client)
    if not reply.ok:
        direct = reply.get("direct")
        if not isinstance(direct, str) or not direct:
            raise _Refused(str(reply.get("reason") or "refused"), reply.error)
        _warn("direct", f"{reply.error}; saving step {plan.step} to {direct} instead (blocking)")
        _save_direct(plan, direct, int(reply.get("rank", 0)))
        done = client.request("direct", step=plan.step)
        if not done.ok:
            raise _Refused("direct", done.error)
        return SaveResult(True, plan.step, "storage", time.perf_counter() - started, plan.total)
    return reply


def _reserved(client: AgentClient, plan: Plan) -> wire.Reply | None:
    """The file the agent reserved for this save with the last commit, told that the rank
    writes it now (not waiting: the agent reads it before anything the rank sends later);
    None when there is none or it does not fit (`begin` then gives it back)."""
    client.catch_up()
    _late(client)
    found = client.take_reserved()
    size = None if found is None else found.get("size")
    if found is None or not isinstance(size, int) or size < plan.total:
        return None
    _probe("reserved")
    client.send(f"step {plan.step}", "write", step=plan.step, slot=found.get("slot"))
    every = found.get("every", 0)
    persist = wire.persists(plan.step, every if isinstance(every, int) else 0)
    return wire.Reply(True, fields={**found, "persist": persist})


def _store(client: AgentClient, plan: Plan, started: float, strict: bool) -> SaveResult:
    reply = None if strict else _reserved(client, plan)
    if reply is None:
        begun = _begin(client, plan, started)
        if isinstance(begun, SaveResult):
            return begun
        reply = begun
    _probe("begun")
    _forget_others(reply.get("files"))
    path = str(reply.get("path"))
    _write(plan, path, *_map(path, int(reply.get("size", 0))))
    _probe("before-commit")
    commit = {"step": plan.step, "slot": reply.get("slot")}
    if strict:  # its outcome is the save's
        done = client.request("commit", **commit)
        _late(client)
        if not done.ok:
            raise _Refused("commit", done.error)
        persisting = bool(done.get("persist"))
    else:  # sent, the agent has it (the rank may die now); its reply is read with the next
        # save, and holds the file that save writes (reserved for a version of this size)
        client.send(f"step {plan.step}", "commit", **commit, reserve=plan.total)
        persisting = bool(reply.get("persist"))
    _probe("after-commit")
    return SaveResult(
        True, plan.step, "memory", time.perf_counter() - started, plan.total, persisting=persisting
    )


def _write(plan: Plan, path: str, buf: mmap.mmap, whole: torch.Tensor) -> None:
    """Write `plan` into the version file at `path` (its framing only where the file does
    not hold this layout already)."""
    framed = plan.template is not None and _framed.pop(path, None) is plan.template
    write_version(plan, buf, whole, PROBE, framed=framed)
    if plan.template is not None:
        _framed[path] = plan.template


def _late(client: AgentClient) -> None:
    """Warn of a commit sent without waiting that the agent refused (read since)."""
    for what, reply in client.late:
        if not reply.ok:
            _warn("commit", f"{what} was not committed: {reply.error}")
    client.late.clear()


def _store_async(client: AgentClient, plan: Plan, started: float) -> SaveResult:
    reply = _begin(client, plan, started)
    if isinstance(reply, SaveResult):
        return reply
    _forget_others(reply.get("files"))
    path = str(reply.get("path"))
    buf, whole = _map(path, int(reply.get("size", 0)))
    versions = [t.tensor._version for t in plan.tensors]
    outcome: list[SaveResult] = []

    def copy() -> None:
        try:
            _write(plan, path, buf, whole)
            changed = [
                t.leaf.fqn
                for t, v in zip(plan.tensors, versions, strict=True)
                if t.tensor._version != v
            ]
            if changed:  # written in place during the copy: this version is not one step's
                _warn(
                    "changed",
                    f"step {plan.step} dropped: {changed[0]} (and "
                    f"{len(changed) - 1} more) changed while it was copied",
                )
                outcome.append(SaveResult(False, plan.step, error=f"{changed[0]} changed"))
                return
            done = client.request("commit", step=plan.step, slot=reply.get("slot"))
            _late(client)
            result = SaveResult(
                done.ok,
                plan.step,
                "memory" if done.ok else "",
                0.0,
                plan.total,
                done.error,
                bool(done.get("persist")),
            )
            outcome.append(result)
        except (AgentUnavailable, OSError, RuntimeError) as exc:
            outcome.append(SaveResult(False, plan.step, error=f"step {plan.step}: {exc}"))

    thread = threading.Thread(target=copy, name=f"aegis-checkpoint-{plan.step}", daemon=True)
    _hook_optimizers()
    _pending.append((thread, outcome))
    thread.start()
    return SaveResult(
        True, plan.step, "memory", time.perf_counter() - started, plan.total, pending=True
    )


def wait() -> SaveResult | None:
    """Wait for the asynchronous save still copying, if any; how it ended (None: none)."""
    if not _pending:
        return None
    thread, outcome = _pending.pop()
    thread.join()
    return outcome[0] if outcome else None


def _hook_optimizers() -> None:
    """Every optimizer step waits for an asynchronous save's copy (once per process)."""
    if not _hooked:
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        def before_step(*_: object) -> None:
            wait()

        _hooked.append(register_optimizer_step_pre_hook(before_step))


def _map(path: str, size: int) -> tuple[mmap.mmap, torch.Tensor]:
    """The writable map of a version file (kept for the next saves into it)."""
    found = _maps.get(path)
    if found is not None and len(found[0]) == size:
        return found
    if found is not None:
        _unmap(path)
    fd = os.open(path, os.O_RDWR)
    try:
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        buf = mmap.mmap(fd, size, flags=flags)
    finally:
        os.close(fd)
    whole = torch.frombuffer(buf, dtype=torch.uint8)
    if torch.cuda.is_available():  # device tensors copy straight into pinned shared memory
        rc = torch.cuda.cudart().cudaHostRegister(whole.data_ptr(), size, 0)
        if int(rc) != 0:
            log.warning("aegis.checkpoint: cudaHostRegister of %s failed (%s): pageable", path, rc)
    _maps[path] = (buf, whole)
    return buf, whole


def _forget_others(files: object) -> None:
    """Unmap the version files the agent no longer uses for this rank (it lists its own)."""
    if isinstance(files, list):
        for path in [p for p in _maps if p not in files]:
            _unmap(path)


def _unmap(path: str) -> None:
    _framed.pop(path, None)
    buf, whole = _maps.pop(path)
    if torch.cuda.is_available():
        torch.cuda.cudart().cudaHostUnregister(whole.data_ptr())
    del whole
    with contextlib.suppress(BufferError):  # a tensor still exports it: it goes with that
        buf.close()


def _save_direct(plan: Plan, root: str, rank: int) -> None:
    """Write the version straight to the checkpoint directory (shared memory is full)."""
    buf = mmap.mmap(-1, plan.total)
    write_version(plan, buf, torch.frombuffer(buf, dtype=torch.uint8))
    view = memoryview(buf)

    def fill(tmp: Path) -> None:
        data = view[wire.DATA_OFFSET : wire.DATA_OFFSET + plan.data_len]
        (tmp / disk.DATA_FILE).write_bytes(data)
        (tmp / disk.INDEX_FILE).write_bytes(plan.index)
        if plan.meta:
            (tmp / disk.METADATA_FILE).write_bytes(plan.meta)

    try:
        disk.publish_rank_dir(root, plan.step, rank, fill)
    except OSError as exc:
        raise _Refused("direct", f"cannot write {root}: {exc}") from None
    finally:
        view.release()


def load() -> Restored | None:
    """The step the job restarts from (None on a fresh job or outside Aegis)."""
    wait()
    started = time.perf_counter()
    client = _agent()
    if client is None:
        return None
    try:
        reply = client.request("restore")
        _late(client)
    except AgentUnavailable as exc:
        raise CheckpointError(f"cannot ask the agent what to restore: {exc}") from None
    if not reply.ok:
        raise CheckpointError(f"cannot restore: {reply.error}")
    step = reply.get("step")
    if step is None:
        return None
    source, path = str(reply.get("source")), str(reply.get("path"))
    try:
        if source == "memory":
            _, state = read_version(path, int(step))
        else:
            state = read_persisted(path)
    except (VersionError, OSError) as exc:
        raise CheckpointError(f"cannot restore step {step} from {source} ({path}): {exc}") from None
    return Restored(int(step), state, source, time.perf_counter() - started)
