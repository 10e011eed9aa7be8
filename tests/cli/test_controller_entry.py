"""`aegis controller` and `aegis k8s controller`: the process sets its collector thresholds
before it serves."""

from __future__ import annotations

import gc
import signal
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


def test_the_k8s_controller_serves_under_its_collector_thresholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aegis.cli import k8s as k8s_cli
    from aegis.k8s import aegis_controller

    seen: list[tuple[int, int, int]] = []
    closed: list[bool] = []

    class Api:
        def close(self) -> None:
            closed.append(True)

    monkeypatch.setattr(aegis_controller, "load_account_dir", lambda path: None)
    monkeypatch.setattr(k8s_cli.KubeApi, "from_config", classmethod(lambda cls, *a: Api()))
    monkeypatch.setattr(aegis_controller, "serve", lambda *a, **k: seen.append(gc.get_threshold()))
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # pytest keeps its handlers
    with thresholds(gc.get_threshold()):
        assert main(["k8s", "controller"]) == 0
    assert seen == [CONTROLLER_THRESHOLDS] and closed == [True]
