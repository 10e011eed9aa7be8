"""`aegis controller`: the process sets its collector thresholds before it serves."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from aegis.cli import main
from aegis.runtime import controller_service
from aegis.runtime.gc_tuning import CONTROLLER_THRESHOLDS, thresholds


def test_the_controller_serves_under_its_collector_thresholds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int, int]] = []

    async def serve(*args: Any, **kwargs: Any) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(controller_service, "serve", serve)
    monkeypatch.setattr(controller_service, "load_credentials", lambda path: None)
    argv = ["controller", "--state-dir", str(tmp_path), "--job", "j", "--workers", "2"]
    argv += ["--max-retry", "1", "--nats-url", "nats://127.0.0.1:1", "--creds", "x.creds"]
    with thresholds(gc.get_threshold()):  # the test process gets its own back
        assert main(argv) == 0
    assert seen == [CONTROLLER_THRESHOLDS]
