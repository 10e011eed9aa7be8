"""The `cluster` fixture: a fresh kmock API server per test, with Aegis's CRDs installed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from aegis.k8s.api import KubeApi
from aegis.k8s.render import load

from .cluster import BASE, CRDS, Cluster, serve


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
