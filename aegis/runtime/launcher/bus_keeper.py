"""nats-server kept running for a local job: restarted on its port when it dies."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable

from aegis import retry
from aegis.runtime.errors import NatsServerError
from aegis.runtime.transport.nats_server import NatsServer

log = logging.getLogger(__name__)


def _restart_failed(attempt: int, exc: BaseException) -> None:
    log.warning("nats-server restart %d failed: %s", attempt, exc)


async def keep_bus_up(
    nats: NatsServer, done: asyncio.Event, interrupt: Callable[[int], None]
) -> None:
    """Restart nats-server on its port when it dies (controller and agents reconnect; a
    bus outage is not a pod loss); after `aegis.retry.NATS_RESTART`'s failed tries in a
    row the job ends (`interrupt(1)`), clearly, instead of waiting for a bus that does not
    come back. Returns once the job is `done`."""
    while not done.is_set():
        code = await nats.wait_exit()
        if done.is_set():
            return
        print(f"aegis: nats-server exited {code}; restarting it", file=sys.stderr, flush=True)
        try:
            await retry.call_async(
                nats.restart, retry.NATS_RESTART, (NatsServerError, OSError), _restart_failed
            )
        except (NatsServerError, OSError):
            tries = retry.NATS_RESTART.tries
            print(
                f"aegis: nats-server did not come back ({tries} tries): the job fails",
                file=sys.stderr,
                flush=True,
            )
            interrupt(1)
            return
