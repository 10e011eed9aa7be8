"""The AEGIS_* contract: to_env and from_env are inverses; every bad variable is named."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.environment import AgentConfig, ConfigError, Var, user_env

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
SECONDS = st.floats(min_value=0.001, max_value=1e6, allow_nan=False)


@st.composite
def configs(draw: st.DrawFn) -> AgentConfig:
    world = draw(st.integers(min_value=1, max_value=10_000))
    return AgentConfig(
        job=draw(NAMES),
        namespace=draw(NAMES),
        pod=draw(NAMES),
        rank=draw(st.integers(min_value=0, max_value=world - 1)),
        world_size=world,
        command=tuple(draw(st.lists(st.text(min_size=1), min_size=1, max_size=4))),
        grpc_target=draw(st.sampled_from(["", "127.0.0.1:50051"])),
        token=draw(st.text(max_size=20)),
        incarnation=draw(st.text(alphabet="0123456789abcdef", min_size=1, max_size=16)),
        node=draw(NAMES),
        connect_timeout=draw(SECONDS),
        heartbeat_s=draw(SECONDS),
        master_port=draw(st.integers(min_value=1, max_value=65535)),
        simulate=tuple(draw(st.lists(st.sampled_from(["gpu_lost", "slow_allreduce"]), max_size=2))),
        hang_timeout=draw(st.floats(min_value=-1, max_value=1e6, allow_nan=False)),
        checkpoint_file=draw(st.sampled_from(["", "/tmp/ckpt"])),
        container_restarts=draw(st.integers(min_value=0, max_value=5)),
        standby=draw(st.booleans()),
        preload=tuple(draw(st.lists(st.sampled_from(["torch", "numpy", "a.b_c"]), max_size=3))),
    )


@given(configs())
def test_from_env_inverts_to_env(cfg: AgentConfig) -> None:
    assert AgentConfig.from_env(cfg.to_env()) == cfg


BASE = AgentConfig("job", "default", "job-worker-0", 0, 2, ("python", "x.py")).to_env()


@pytest.mark.parametrize(
    ("var", "value", "says"),
    [
        (Var.RANK, "2", "not below"),
        (Var.RANK, "-1", ">= 0"),
        (Var.WORLD_SIZE, "0", ">= 1"),
        (Var.WORLD_SIZE, "two", "integer"),
        (Var.COMMAND, "python x.py", "JSON list"),
        (Var.COMMAND, "[]", "non-empty"),
        (Var.COMMAND, "[1]", "strings"),
        (Var.CONNECT_TIMEOUT, "nan", "finite"),
        (Var.CONNECT_TIMEOUT, "-5", "> 0"),
        (Var.HEARTBEAT_S, "inf", "finite"),
        (Var.HANG_TIMEOUT, "nan", "finite"),
        (Var.MASTER_PORT, "0", ">= 1"),
        (Var.CONTAINER_RESTARTS, "x", "integer"),
        (Var.STANDBY, "yes", "one of on, off"),
        (Var.PRELOAD, "torch,no such", "not a module name"),
        (Var.PRELOAD, "1torch", "not a module name"),
    ],
)
def test_a_bad_variable_is_named(var: Var, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        AgentConfig.from_env({**BASE, var: value})
    assert str(var) in str(err.value) and says in str(err.value)


@pytest.mark.parametrize("var", [Var.JOB, Var.POD, Var.RANK, Var.WORLD_SIZE, Var.COMMAND])
def test_a_missing_variable_is_named(var: Var) -> None:
    env = {k: v for k, v in BASE.items() if k != var}
    with pytest.raises(ConfigError, match=str(var)):
        AgentConfig.from_env(env)


def test_hang_detection_can_be_turned_off() -> None:
    cfg = AgentConfig.from_env({**BASE, Var.HANG_TIMEOUT: "0"})
    assert cfg.hang_timeout == 0 and not math.isnan(cfg.hang_timeout)


def test_the_training_command_sees_none_of_the_agents_variables() -> None:
    env = {**BASE, Var.BOOTSTRAP_TOKEN: "s3cret", Var.PROGRESS_DIR: "/state", "PATH": "/bin"}
    env[Var.PROGRESS_FILE] = "/tmp/progress.json"
    seen = user_env(env)
    told = {Var.JOB, Var.POD, Var.PROGRESS_FILE, Var.CHECKPOINT_FILE}  # RETRY: set by RankEnv
    assert set(seen) == {"PATH", *told} and seen["PATH"] == "/bin"
    assert "s3cret" not in seen.values() and "/state" not in seen.values()
