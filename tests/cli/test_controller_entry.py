"""`aegis controller` and `aegis k8s controller`: the process sets its collector thresholds
before it serves."""

from __future__ import annotations

import gc
import json
import signal
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from aegis.cli import main
from aegis.protocol.job_settings import ENV_VAR, JobSettings
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
    _settings(monkeypatch)
    argv = ["controller", "--state-dir", str(tmp_path)]
    argv += ["--nats-url", "nats://127.0.0.1:1", "--creds", "x.creds"]
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
    argv = ["controller", "--state-dir", str(tmp_path)]
    return [*argv, "--nats-url", "nats://127.0.0.1:1", "--creds", "x", *extra]


def _settings(monkeypatch: pytest.MonkeyPatch, **given: Any) -> JobSettings:
    """The job's settings, in the controller process's environment as the launcher sets it."""
    settings = JobSettings(job="j", workers=2, max_retry=1, **given)
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)
    return settings


def test_the_controller_takes_its_heartbeat_budget_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs: list[Any] = []

    async def serve(job: Any, *args: Any, **kwargs: Any) -> int:
        jobs.append(job)
        return 0

    monkeypatch.setattr(controller_service, "serve", serve)
    monkeypatch.setattr(controller_service, "load_credentials", lambda path: None)
    _settings(monkeypatch, heartbeat_rate=0.5)
    with thresholds(gc.get_threshold()):
        assert main(_controller_argv(tmp_path)) == 0
    assert jobs[0].heartbeat_rate == 0.5 and jobs[0].beat_s == 4.0  # 2 pods at 0.5 a second
    assert (jobs[0].pods, jobs[0].max_retry) == (("j-worker-0", "j-worker-1"), 1)


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
@pytest.mark.parametrize("command", ["run", "controller"])
def test_a_bad_heartbeat_budget_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    value: str,
) -> None:
    if command == "run":
        argv = ["run", "-n", "1", "--heartbeat-rate", value, "--", "true"]
        says = f"--heartbeat-rate {value}"
    else:  # the settings given whole are checked by the same rule
        _settings(monkeypatch, heartbeat_rate=float(value))
        argv, says = _controller_argv(tmp_path), f"--heartbeat-rate {float(value)}"
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "is not set"),
        ("{", "not JSON"),
        ('{"job": "j"}', "must hold exactly"),
        (json.dumps({**asdict(JobSettings()), "workers": "2"}), "workers must be int"),
        (json.dumps({**asdict(JobSettings()), "max_retry": -1}), "--max-retry must be >= 0"),
    ],
)
def test_the_controller_refuses_settings_it_cannot_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    says: str,
) -> None:
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(SystemExit) as exc:
        main(_controller_argv(tmp_path))
    assert exc.value.code == 2 and says in capsys.readouterr().err
