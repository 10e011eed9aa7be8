"""nats-py, imported without aiohttp: `import nats` loads aiohttp (~0.2 s of CPU in every
agent and controller process) only for its websocket transport, which Aegis does not use
(`Bus.connect` refuses ws:// and wss:// URLs). nats-py handles a missing aiohttp itself; the
block lasts only for this import, so anything else in the process may still import aiohttp."""

from __future__ import annotations

import sys

if "nats" not in sys.modules and "aiohttp" not in sys.modules:
    sys.modules["aiohttp"] = None  # type: ignore[assignment]  # `import aiohttp` fails
    try:
        import nats.aio.transport
    finally:
        del sys.modules["aiohttp"]

import nats
import nats.errors
from nats.aio.client import RawCredentials

__all__ = ["RawCredentials", "nats"]
