"""nats-py is imported without aiohttp (its websocket transport), which others may still use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.bus import Bus


def _modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names: list[str] = json.loads(out.strip().splitlines()[-1])
    return names


def test_the_bus_loads_no_aiohttp() -> None:
    loaded = _modules_after(
        "import aegis.runtime.transport.bus, aegis.runtime.transport.nats_server"
    )
    assert "nats.aio.client" in loaded
    assert not [m for m in loaded if m.split(".")[0] == "aiohttp"]


def test_aiohttp_can_still_be_imported_after_the_bus() -> None:
    loaded = _modules_after("import aegis.runtime.transport.bus\nimport aiohttp.client")
    assert "aiohttp.client" in loaded


async def test_a_websocket_url_is_refused_clearly() -> None:
    creds = Operator().create_job_account("ns", "j").ctl_credentials()  # never sent
    with pytest.raises(BusError, match="use nats:// or tls://, not websocket"):
        await Bus.connect("ws://127.0.0.1:1", creds, timeout=1)
