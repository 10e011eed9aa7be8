"""An asyncio server on a thread and event loop of its own, for the threaded Aegis Controller:
its `/metrics` endpoint (`MetricsServerThread`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable

from aegis.k8s.errors import K8sError
from aegis.runtime.controller.observability import MetricsServer, ObserverMetrics


class ServerThread:
    """An asyncio server (`start()` and `stop()` coroutines) on an event loop and a thread of
    its own (the controller is threaded)."""

    def __init__(
        self, name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
    ) -> None:
        self.name = name
        self._start_server, self._stop_server = start, stop
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        """Bind and serve; raises what binding raised (OSError for a taken port)."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise K8sError(f"the {self.name} server did not start within {timeout}s")
        if self._error is not None:
            raise self._error

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and end the thread."""
        loop, ev = self._loop, self._stop
        if loop is not None and ev is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ev.set)
        self._thread.join(timeout)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        try:
            await self._start_server()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self._stop_server()


class MetricsServerThread(ServerThread):
    """`GET /metrics` of every job (one shared ObserverMetrics) on a thread of its own."""

    def __init__(self, metrics: ObserverMetrics, host: str = "0.0.0.0", port: int = 0) -> None:
        self.server = MetricsServer(metrics, host, port)
        super().__init__("metrics", self.server.start, self.server.close)

    @property
    def url(self) -> str:
        """Where the metrics are."""
        return self.server.url
