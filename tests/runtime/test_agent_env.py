"""What the agent hands its diagnosis worker: no spent token, gloo on loopback in local mode."""

from __future__ import annotations

import pytest

from aegis.protocol.environment import AgentConfig, Var
from aegis.runtime.agent import diagnosis_env, is_loopback


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("localhost", True),
        ("10.0.0.7", False),
        ("train-worker-0.train-workers.team.svc", False),  # not resolved: no DNS at start
        ("", False),
    ],
)
def test_loopback_is_told_without_dns(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(("host", "ifname"), [("127.0.0.1", "lo"), ("10.0.0.7", None)])
def test_the_diagnosis_worker_gets_no_token_and_gloo_on_loopback_locally(
    monkeypatch: pytest.MonkeyPatch, host: str, ifname: str | None
) -> None:
    monkeypatch.setenv(Var.BOOTSTRAP_TOKEN, "s3cret")
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    cfg = AgentConfig("job", "default", "job-worker-0", 0, 1, ("true",), master_addr=host)
    env = diagnosis_env(cfg)
    assert Var.BOOTSTRAP_TOKEN not in env
    assert env.get("GLOO_SOCKET_IFNAME") == ifname
