"""What the agent hands its diagnosis worker: no spent token, gloo on loopback in local mode."""

from __future__ import annotations

import pytest

from aegis.protocol.environment import AgentConfig, Var
from aegis.runtime.agent.placement import diagnosis_env, is_loopback


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


class _Diag:
    """Stands in for the diagnosis worker: records store requests, answers `why`."""

    def __init__(self, why: str | None) -> None:
        self.why = why
        self.asked: list[tuple[str, int, int]] = []

    async def host_store(self, host: str, port: int, world_size: int) -> str | None:
        self.asked.append((host, port, world_size))
        return self.why


@pytest.mark.parametrize(
    ("node", "why", "asked", "agent_store"),
    [
        (0, None, [("127.0.0.1", 29610, 4)], "True"),  # node 0's worker hosts it
        (0, "the diagnosis worker is not idle", [("127.0.0.1", 29610, 4)], "False"),  # rank 0
        (1, None, [], "True"),  # other nodes host nothing; their ranks are clients either way
    ],
)
async def test_node_0_hosts_the_rendezvous_store_before_its_ranks_start(
    node: int, why: str | None, asked: list[tuple[str, int, int]], agent_store: str
) -> None:
    from aegis.protocol.payloads import Order
    from aegis.runtime.agent.service import AgentService

    cfg = AgentConfig("job", "default", f"job-worker-{node}", node, 2, ("true",),
                      master_addr="10.0.0.7", nproc_per_node=2)  # fmt: skip
    diag = _Diag(why)
    agent = AgentService(cfg, diag=diag)  # type: ignore[arg-type]
    order = Order("RunCommand", None, 1, 3, "10.0.0.7", 29610, 29700, globals={}, derived={})
    ranks = agent._local_ranks(order, await agent._host_store(order))
    assert diag.asked == asked
    for runner in ranks.runners:
        env = runner.rank.environ(1, 1)
        assert env["TORCHELASTIC_USE_AGENT_STORE"] == agent_store
        assert env["MASTER_PORT"] == "29610"
