"""A job's controller (ControllerCore + ControllerService) serving on a real nats-server."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.store import FileStatusStore, Status
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus


class MemoryStore:
    """A StatusStore in memory: for runs whose disk is not what is measured or tested."""

    def __init__(self) -> None:
        self.status: Status | None = None

    def load(self) -> Status | None:
        return self.status

    def save(self, status: Status) -> None:
        self.status = status


@dataclass
class RunningController:
    """The core (its state and counters), the service, its task (the exit code) and its bus."""

    core: ControllerCore
    service: ControllerService
    task: asyncio.Task[int]
    bus: Bus


@asynccontextmanager
async def running_controller(
    nats_url: str,
    job: JobAccount,
    status: Path,
    pods: Sequence[str],
    max_retry: int = 2,
    wal: Path | None = None,
    heartbeat_timeout: float | None = None,
    heartbeat_rate: float | None = None,
    max_running: int | None = None,
) -> AsyncIterator[RunningController]:
    """Serve `job` (its status saved at `status`, with a write-ahead log at `wal` as `aegis
    controller` has; the job's default heartbeat timeout and budget unless given; with
    `max_running`, that many handlers of a subscription at once) until the block ends, then
    stop and close."""
    config = JobConfig(job.subjects.job, job.subjects.namespace, tuple(pods), max_retry)
    if heartbeat_timeout is not None:
        config = dataclasses.replace(config, heartbeat_timeout=heartbeat_timeout)
    if heartbeat_rate is not None:
        config = dataclasses.replace(config, heartbeat_rate=heartbeat_rate)
    core = ControllerCore(
        config,
        FileStatusStore(status),
        wal=None if wal is None else WriteAheadLog(wal),
    )
    bus = await Bus.connect(nats_url, job.controller_credentials())
    service = ControllerService(core, bus)
    if max_running is not None:
        service.max_running = max_running
    task = asyncio.create_task(service.run())
    try:
        yield RunningController(core, service, task, bus)
    finally:
        service.stop(0)
        await asyncio.wait_for(task, 10)
        await bus.close()
        await asyncio.wait_for(service.close(), 10)
