"""`aegis controller` and `aegis k8s controller`: the process sets its collector thresholds
before it serves."""

from __future__ import annotations

import gc
import signal
from pathlib import Path
from typing import Any

import pytest

from aegis.cli import main
from aegis.runtime.controller import service as controller_service
from aegis.runtime.controller.gc_tuning import CONTROLLER_THRESHOLDS, thresholds


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


def _controller_argv(tmp_path: Path, *extra: str) -> list[str]:
    argv = ["controller", "--state-dir", str(tmp_path), "--job", "j", "--workers", "2"]
    return [*argv, "--max-retry", "1", "--nats-url", "nats://127.0.0.1:1", "--creds", "x", *extra]


def test_the_controller_takes_its_heartbeat_budget_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs: list[Any] = []

    async def serve(job: Any, *args: Any, **kwargs: Any) -> int:
        jobs.append(job)
        return 0

    monkeypatch.setattr(controller_service, "serve", serve)
    monkeypatch.setattr(controller_service, "load_credentials", lambda path: None)
    with thresholds(gc.get_threshold()):
        assert main(_controller_argv(tmp_path, "--heartbeat-rate", "0.5")) == 0
    assert jobs[0].heartbeat_rate == 0.5 and jobs[0].beat_s == 4.0  # 2 pods at 0.5 a second


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
@pytest.mark.parametrize("command", ["run", "controller"])
def test_a_bad_heartbeat_budget_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, value: str
) -> None:
    if command == "run":
        argv = ["run", "-n", "1", "--heartbeat-rate", value, "--", "true"]
    else:
        argv = _controller_argv(tmp_path, "--heartbeat-rate", value)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and f"--heartbeat-rate {value}" in capsys.readouterr().err
