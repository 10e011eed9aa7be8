"""The namespaced hosts of aegis.testing.netns as a pytest fixture: skipped where this machine
cannot make them, or cannot impair a host's link."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aegis.testing.netns import Hosts, HostsUnavailable, stop_capture, unavailable

__all__ = ["Hosts", "hosts3", "stop_capture"]


class _Hosts(Hosts):
    """Hosts whose impairment a test that needs it skips where the machine cannot do it."""

    def impair(self, i: int, delay_ms: int, loss_pct: float) -> str:
        try:
            return super().impair(i, delay_ms, loss_pct)
        except HostsUnavailable as exc:
            pytest.skip(str(exc))


@pytest.fixture
def hosts3() -> Iterator[Hosts]:
    """Three namespaced hosts (skipped where namespaces cannot be made)."""
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    made = _Hosts(3)
    try:
        yield made
    finally:
        made.close()
