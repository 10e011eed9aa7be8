"""The agent's side of the diagnosis worker: start it warm, send rounds, restart it on timeout."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from aegis.checks.params import SIMULATE_ENV, CheckParams
from aegis.checks.protocol import (
    Request,
    Response,
    StoreSpec,
    encode_request,
    names,
    parse_line,
    response_from_dict,
)
from aegis.checks.result import CheckResult, CheckType, failed
from aegis.errors import AegisError

log = logging.getLogger(__name__)
_LINE_LIMIT = 1 << 20
STORE_TIMEOUT_S = 10.0  # a worker that cannot open a listening socket in this is restarted


class WorkerError(AegisError):
    """The diagnosis worker could not be started or answered out of protocol."""


class DiagnosisClient:
    """One long-lived `python -m aegis.checks.worker` per agent, torch imported at start.

    The worker's stdout has one reader at a time: every read of it (the start's wait for
    "ready", a round's or a store request's answer, a restart's new start) runs under
    `_lock`. A start that runs in the background (the agent warms its worker while it joins)
    holds the lock until the worker is ready, so a request made meanwhile waits for it (a
    round) or is declined at once (`host_store`), never reads beside it."""

    def __init__(
        self,
        *,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        simulate: Sequence[str] = (),
        start_timeout_s: float = 120.0,
        grace_s: float = 5.0,
    ) -> None:
        self._python = python
        self._env = dict(os.environ if env is None else env)
        if simulate:
            self._env[SIMULATE_ENV] = ",".join(simulate)
        self._start_timeout_s = start_timeout_s
        self._grace_s = grace_s
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_task: asyncio.Task[None] | None = None
        self._restart_task: asyncio.Task[None] | None = None
        self._stale = False  # the worker must be replaced before its next request
        self._lock = asyncio.Lock()  # held by whoever writes a request or reads stdout
        self._next_id = 0

    @property
    def pid(self) -> int | None:
        """The worker's pid while it runs."""
        return self._proc.pid if self.running and self._proc else None

    @property
    def running(self) -> bool:
        """Whether the worker process is alive."""
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        """Spawn the worker and wait until it has imported torch and said it is ready."""
        async with self._lock:
            await self._start_locked()

    async def _start_locked(self) -> None:
        if self.running:
            return
        env = {**self._env, "AEGIS_PARENT_PID": str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        try:
            self._proc = await asyncio.create_subprocess_exec(
                self._python,
                "-m",
                "aegis.checks.worker",
                env=env,
                limit=_LINE_LIMIT,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise WorkerError(
                f"cannot run {self._python}: {exc}; pass python= a usable "
                "interpreter with torch installed"
            ) from exc
        self._stderr_task = asyncio.create_task(self._drain_stderr(self._proc))
        try:
            await asyncio.wait_for(self._await_ready(), self._start_timeout_s)
        except (TimeoutError, EOFError) as exc:
            await self.kill()
            raise WorkerError(
                f"diagnosis worker did not start within {self._start_timeout_s:g}"
                f" s ({exc}); its stderr ends: {self.stderr_tail()}"
            ) from exc

    async def run(
        self,
        checks: Sequence[str | CheckType],
        round_id: str,
        params: CheckParams | Mapping[str, Any] | None = None,
    ) -> list[CheckResult]:
        """Run one round; never raises for a check's failure, never waits past the budgets."""
        if not isinstance(params, CheckParams):
            params = CheckParams.from_dict(params)
        wanted = names(checks)
        async with self._lock:
            t0 = time.monotonic()
            try:
                await self._ready_for_request()
            except WorkerError as exc:
                return [failed(c, f"diagnosis worker unavailable: {exc}", t0) for c in wanted]
            req = Request(self._new_id(), "run", round_id, wanted, params)
            limit = params.round_budget(wanted) + self._grace_s
            resp = await self._exchange(req, limit)
        if isinstance(resp, str):
            return [failed(c, resp, t0) for c in wanted]
        if resp.restart:
            self._schedule_restart()
        if not resp.ok:
            return [
                failed(c, f"diagnosis worker refused the round: {resp.error}", t0) for c in wanted
            ]
        return list(resp.results)

    async def host_store(self, host: str, port: int, world_size: int) -> str | None:
        """Have the warm worker host the training's rendezvous store on `port` (0: stop
        hosting); None once it listens, else why not. Never waits for a worker to start or
        for a round in progress: the caller then lets rank 0 host the store itself."""
        if not self.running or self._stale or self._lock.locked():
            return "the diagnosis worker is not idle"
        async with self._lock:
            req = Request(self._new_id(), "store", store=StoreSpec(host, port, world_size))
            resp = await self._exchange(req, STORE_TIMEOUT_S)
        if isinstance(resp, str):
            return resp
        return None if resp.ok else f"the diagnosis worker cannot host it: {resp.error}"

    async def kill(self) -> None:
        """SIGKILL the worker and reap it; the next `run` starts a fresh one."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            # os.kill, not proc.kill(): Popen.send_signal() first polls, and that waitpid can
            # reap an already exited worker under asyncio's child watcher, which then reports
            # exit code 255 instead of the real one. An unreaped zombie's pid is not reused.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
        if self._stderr_task is not None:
            await asyncio.gather(self._stderr_task, return_exceptions=True)

    async def close(self, timeout_s: float = 5.0) -> None:
        """Ask the worker to shut down; kill it if it does not within `timeout_s`."""
        if self._restart_task is not None:
            task, self._restart_task = self._restart_task, None
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        proc = self._proc
        if proc is not None and proc.returncode is None and proc.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                proc.stdin.write(encode_request(Request(self._new_id(), "shutdown")))
                proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout_s)
        await self.kill()

    async def __aenter__(self) -> DiagnosisClient:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def stderr_tail(self) -> str:
        """The worker's last stderr lines, joined (for error messages)."""
        return " | ".join(self._stderr_tail) or "(empty)"

    async def _ready_for_request(self) -> None:
        """Under the lock: a worker marked stale is replaced, a dead one started (whichever
        of a round and the background restart gets the lock first does it)."""
        if self._stale:
            self._stale = False
            await self.kill()
        if not self.running:
            await self._start_locked()

    async def _exchange(self, req: Request, limit_s: float) -> Response | str:
        """The response to `req`, or a failure text (the worker is then restarted)."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(encode_request(req))
            await proc.stdin.drain()
            return await asyncio.wait_for(self._read_response(req.id), limit_s)
        except TimeoutError:
            reason = f"diagnosis worker gave no answer within {limit_s:g} s; restarting it"
        except (ConnectionError, EOFError, ValueError) as exc:  # ValueError: an overlong line
            await self.kill()
            reason = (
                f"diagnosis worker died (exit code {proc.returncode}, {exc}); restarting"
                f" it; its stderr ends: {self.stderr_tail()}"
            )
        log.warning("%s", reason)
        self._schedule_restart()
        return reason

    async def _read_response(self, req_id: int) -> Response:
        while True:
            obj = await self._read_object()
            if obj.get("id") == req_id:
                return response_from_dict(obj)

    async def _await_ready(self) -> None:
        while (await self._read_object()).get("event") != "ready":
            pass

    async def _read_object(self) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        while True:
            line = await proc.stdout.readline()
            if not line:
                raise EOFError("the worker closed its stdout")
            obj = parse_line(line)
            if obj is not None:
                return obj
            log.debug("diagnosis worker stray output: %r", line[:200])

    def _schedule_restart(self) -> None:
        """Replace the worker before its next request, and ahead of it in the background
        (the next round finds it warm)."""
        self._stale = True
        if self._restart_task is None or self._restart_task.done():
            self._restart_task = asyncio.create_task(self._restart())

    async def _restart(self) -> None:
        async with self._lock:
            try:
                await self._ready_for_request()
            except WorkerError as exc:  # the next request tries again and reports it
                log.warning("%s", exc)

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        async for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._stderr_tail.append(line)
            log.debug("diagnosis worker[%s]: %s", proc.pid, line)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id
