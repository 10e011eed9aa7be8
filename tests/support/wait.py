"""Poll a condition until it holds or a deadline passes; the failure names what was awaited.

`first_request` is the same for a service on the bus: it waits until the service subscribed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

from aegis.protocol.envelope import Message
from aegis.runtime.errors import BusError
from aegis.runtime.transport.bus import Bus

T = TypeVar("T")
NOBODY = "nobody is subscribed"  # the bus's words for NATS' "no responders"


def wait_for(cond: Callable[[], T | None], timeout: float, what: str, poll_s: float = 0.05) -> T:
    """Poll `cond` until it returns something true and return that; after `timeout` s fail
    with "timed out after T s waiting for WHAT". `cond` may raise to fail at once."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll_s)


async def wait_for_async(
    cond: Callable[[], T | None], timeout: float, what: str, poll_s: float = 0.02
) -> T:
    """`wait_for` inside an event loop: the loop keeps running between polls."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(poll_s)


async def first_request(bus: Bus, subject: str, msg: Message, timeout: float = 10.0) -> Message:
    """A request to a service that may not have subscribed yet: sent again only while NATS
    answers that nobody is subscribed (so it reached no one), until answered or `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await bus.request(subject, msg, timeout=5.0)
        except BusError as exc:
            if NOBODY not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise AssertionError(f"nobody subscribed to {subject} within {timeout}s") from None
        await asyncio.sleep(0.02)
