"""The `cluster` fixture: a fresh kmock API server per test, with Aegis's CRDs installed."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from aegis.k8s.aegis_controller import load_account_dir
from aegis.k8s.api import KubeApi
from aegis.k8s.keys import ACCOUNT_JWT_KEY, ACCOUNT_SEED_KEY
from aegis.k8s.render import load
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.nats_server import NatsServer

from .cluster import BASE, CRDS, Cluster, serve
from .harness import Nats


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A fresh emulated API server with the namespace and Aegis's CRDs installed."""
    box: dict[str, Any] = {}
    ready = threading.Event()
    thread = threading.Thread(target=serve, args=(box, ready), daemon=True)
    thread.start()
    assert ready.wait(10), "kmock did not start"
    api = KubeApi.for_url(box["url"], timeout_s=5.0)
    for crd in (o for o in load(BASE) if o["kind"] == "CustomResourceDefinition"):
        api.create(CRDS, None, crd)
    try:
        yield Cluster(box["url"], api, box["emulator"])
    finally:
        api.close()
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(10)


@pytest_asyncio.fixture
async def nats(tmp_path: Path) -> AsyncIterator[Nats]:
    """A real nats-server in operator mode; the controller loads its account from files."""
    operator = Operator()
    shared = operator.create_job_account("aegis-system", "shared")
    (tmp_path / ACCOUNT_JWT_KEY).write_text(shared.account.jwt)
    (tmp_path / ACCOUNT_SEED_KEY).write_bytes(bytes(shared.account.keypair.seed) + b"\n")
    async with NatsServer(operator, [shared]) as server:
        yield Nats(server.url, load_account_dir(tmp_path))
