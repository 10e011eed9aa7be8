"""Every local rank of one pod (`--nproc-per-node K`), started together, with one outcome.

A pod is one spec worker: it finishes when all K ranks exit 0; the first rank that exits
non-zero makes the pod's Error, and the others are stopped (SIGTERM to each one's process
group, SIGKILL after the grace period). The failure names the local rank, its exit code or
signal, and the exception its `@record` wrote to TORCHELASTIC_ERROR_FILE, like torchrun's
ChildFailedError summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aegis.protocol.faults import ProcessFailure
from aegis.runtime.agent.runner import RankEnv, Runner
from aegis.runtime.agent.standby import StandbyPool

MAX_EXCEPTION = 400  # characters of a rank's exception kept in its pod's Error report
EXEC_FAILED_CODES = (126, 127)  # setpriv's exits when it cannot exec the command


@dataclass(frozen=True)
class Placement:
    """Where a pod's ranks sit in the job: its node rank among `nnodes`, K ranks each."""

    node_rank: int
    nnodes: int
    nproc: int
    master_addr: str
    master_port: int
    run_id: str
    job: str = ""
    pod: str = ""
    max_restarts: int = 0
    agent_store: bool = False  # the agent hosts the rendezvous store on master_port

    def rank_env(self, local_rank: int) -> RankEnv:
        """torchrun's environment of local rank `local_rank` (RANK = node x K + local)."""
        return RankEnv(
            self.node_rank * self.nproc + local_rank,
            self.nnodes * self.nproc,
            local_rank=local_rank,
            local_world_size=self.nproc,
            master_addr=self.master_addr,
            master_port=self.master_port,
            run_id=self.run_id,
            job=self.job,
            pod=self.pod,
            max_restarts=self.max_restarts,
            group_rank=self.node_rank,
            agent_store=self.agent_store,
        )


@dataclass(frozen=True)
class RankFailure:
    """The first local rank of a pod that exited non-zero."""

    local_rank: int
    rank: int
    exit_code: int  # negative: killed by that signal
    exception: str = ""  # "Type: message" from its error file, if it wrote one
    exec_failed: str = ""  # the command could not be exec'd (why): the user's error

    @property
    def user_error(self) -> bool:
        """Whether the rank never ran because its command cannot start."""
        return bool(self.exec_failed)

    def process_failure(self) -> ProcessFailure:
        """What the Error report tells of it, as fields."""
        return ProcessFailure(self.local_rank, self.rank, self.exit_code)

    def describe(self) -> str:
        """One line for the Error report, the fault log and `aegis ctl status`."""
        if self.exec_failed:
            return f"the command cannot start: {self.exec_failed}"
        code = self.exit_code
        if code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
        else:
            how = f"exit code {code}"
        text = f"local rank {self.local_rank} (rank {self.rank}) failed with {how}"
        return f"{text}: {self.exception}" if self.exception else text


def read_error_file(path: str) -> str:
    """The exception `torch.distributed.elastic...errors.record` wrote ("Type: message")."""
    try:
        obj: Any = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return ""
    message = obj.get("message") if isinstance(obj, dict) else None
    if isinstance(message, dict):
        message = message.get("message")
    if not isinstance(message, str):
        return ""
    return " ".join(message.split())[:MAX_EXCEPTION]


class LocalRanks:
    """The K runners of one pod; `start`, then `wait` for the pod's outcome."""

    def __init__(
        self,
        argv: Sequence[str],
        placement: Placement,
        *,
        env: Mapping[str, str],
        work_dir: Path,
        log_dir: Path | None = None,
        rank_env: Mapping[int, Mapping[str, str]] | None = None,
        standbys: StandbyPool | None = None,
    ) -> None:
        """`work_dir` holds each rank's error file; `rank_env[local_rank]` adds variables
        to that rank's environment (its progress file); `standbys` runs the ranks it has a
        standby for, and gets the next attempt's standbys once every rank has started."""
        self.placement = placement
        self.standbys = standbys
        self.runners = [
            Runner(
                argv,
                placement.rank_env(lr),
                env={**env, **(rank_env or {}).get(lr, {})},
                error_file=str(work_dir / f"error-{lr}.json"),
                log_dir=log_dir,
            )
            for lr in range(placement.nproc)
        ]

    @property
    def running(self) -> bool:
        """True while any rank runs."""
        return any(r.running for r in self.runners)

    async def start(self, *, retry: int) -> None:
        """Start every rank (RunnerError if one cannot start: the others are stopped)."""
        for runner in self.runners:
            runner.restart_count = retry
        try:
            for runner in self.runners:
                await runner.start(retry=retry, standbys=self.standbys)
        except BaseException:
            await self.stop(5.0)
            raise
        if self.standbys is not None:
            for runner in self.runners:
                self.standbys.refill(
                    runner.rank.local_rank, runner.argv, runner.last_env, runner.cwd
                )

    async def wait(self, grace: float = 10.0) -> RankFailure | None:
        """None when every rank exited 0; else the first failure (the others stopped)."""
        waits = {asyncio.create_task(r.wait()): lr for lr, r in enumerate(self.runners)}
        pending = set(waits)
        failure: RankFailure | None = None
        try:
            while pending and failure is None:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                failed = sorted((waits[t], t.result()) for t in done if t.result() != 0)
                if failed:
                    failure = self._failure(*failed[0])
        finally:
            for task in pending:
                task.cancel()
        if failure is not None:
            await self.stop(grace)
        return failure

    async def stop(self, grace: float = 10.0) -> None:
        """Stop every started rank (SIGTERM its group, SIGKILL after `grace`)."""
        started = [r for r in self.runners if r.pid is not None]
        await asyncio.gather(*(r.stop(grace) for r in started))

    def _failure(self, local_rank: int, code: int) -> RankFailure:
        runner = self.runners[local_rank]
        # the error file `@record` wrote, else the last exception line the rank printed
        exception = read_error_file(runner.error_file) or runner.stderr_filter.last_exception
        with contextlib.suppress(OSError):
            os.unlink(runner.error_file)
        failed = runner.stderr_filter.exec_failed if code in EXEC_FAILED_CODES else ""
        return RankFailure(local_rank, runner.rank.rank, code, exception, failed)
