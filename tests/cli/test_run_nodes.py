"""`aegis run`'s flags for a job across hosts: torchrun's, Slurm's variables in their place,
and the clear refusals before anything starts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from aegis.cli import main
from aegis.cli.run_nodes import (
    NodeFlagError,
    node_job,
    parse_endpoint,
    parse_nnodes,
    read_secret,
    wants_nodes,
)

SECRET = "0123456789abcdef0123"
SLURM = {
    "SLURM_NODEID": "1",
    "SLURM_NNODES": "2",
    "SLURM_JOB_NODELIST": "gpu[07-08]",
    "AEGIS_JOIN_SECRET": SECRET,
}


def args(**given: object) -> argparse.Namespace:
    base = {
        "workers": None,
        "node_rank": None,
        "rdzv_endpoint": None,
        "join_secret_file": None,
        "join_timeout": 600.0,
        "host_timeout": 30.0,
    }
    return argparse.Namespace(**{**base, **given})


def test_nnodes_and_endpoints() -> None:
    assert parse_nnodes("3") == (3, 3)
    assert parse_nnodes("2:4") == (2, 4)
    for bad in ("0", "3:2", "a", "1:b"):
        with pytest.raises(NodeFlagError):
            parse_nnodes(bad)
    assert parse_endpoint("gpu07") == ("gpu07", 29400)
    assert parse_endpoint("10.0.0.1:29500") == ("10.0.0.1", 29500)
    assert parse_endpoint("[fd00::1]:1234") == ("fd00::1", 1234)
    for bad in ("h:0", "h:x", ":29400", "[fd00::1]x"):
        with pytest.raises(NodeFlagError):
            parse_endpoint(bad)


def test_the_secret_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text(SECRET + "\n")
    assert read_secret(path, {}) == SECRET.encode()
    assert read_secret(None, {"AEGIS_JOIN_SECRET": SECRET}) == SECRET.encode()
    with pytest.raises(NodeFlagError, match="openssl rand"):
        read_secret(None, {})
    with pytest.raises(NodeFlagError, match="at least 16"):
        read_secret(None, {"AEGIS_JOIN_SECRET": "short"})
    with pytest.raises(NodeFlagError, match="--join-secret-file"):
        read_secret(tmp_path / "missing", {})


def test_which_runs_are_nodes_of_a_job_across_hosts() -> None:
    assert not wants_nodes(args(workers="2"), {})  # -n 2 on this machine
    assert wants_nodes(args(workers="2", rdzv_endpoint="h"), {})
    assert wants_nodes(args(node_rank=0), {})
    assert wants_nodes(args(), SLURM)  # srun aegis run -- CMD
    assert not wants_nodes(args(workers="2"), SLURM)  # -n 2 inside an allocation: here


def test_slurm_fills_in_what_the_flags_leave_out() -> None:
    nodes = node_job(args(), SLURM)
    assert (nodes.nnodes, nodes.max_nodes, nodes.node_rank) == (2, 2, 1)
    assert nodes.endpoint == "gpu07:29400" and nodes.secret == SECRET.encode()
    flags = node_job(args(workers="2:3", node_rank=2, rdzv_endpoint="head:1234"), SLURM)
    assert (flags.nnodes, flags.max_nodes, flags.node_rank, flags.endpoint) == (
        2,
        3,
        2,
        "head:1234",
    )


@pytest.mark.parametrize(
    ("given", "env", "why"),
    [
        ({"node_rank": 1}, {"AEGIS_JOIN_SECRET": SECRET}, "needs --nnodes"),
        ({"node_rank": 1, "workers": "2"}, {"AEGIS_JOIN_SECRET": SECRET}, "--rdzv-endpoint"),
        ({"rdzv_endpoint": "h", "workers": "2"}, {"AEGIS_JOIN_SECRET": SECRET}, "--node-rank"),
        (
            {"rdzv_endpoint": "h", "workers": "2", "node_rank": 2},
            {"AEGIS_JOIN_SECRET": SECRET},
            "use 0..1",
        ),
        ({"rdzv_endpoint": "h", "workers": "2", "node_rank": 1}, {}, "AEGIS_JOIN_SECRET"),
        (
            {"rdzv_endpoint": "h", "workers": "2", "node_rank": 1, "host_timeout": 0.0},
            {"AEGIS_JOIN_SECRET": SECRET},
            "--host-timeout",
        ),
        ({}, {**SLURM, "SLURM_STEP_TASKS_PER_NODE": "4(x2)"}, "ntasks-per-node=1"),
    ],
)
def test_incomplete_flags_are_refused(given: dict[str, Any], env: dict[str, str], why: str) -> None:
    with pytest.raises(NodeFlagError, match=why):
        node_job(args(**given), env)


def test_the_cli_refuses_before_starting_anything(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AEGIS_JOIN_SECRET", raising=False)
    for name in ("SLURM_NODEID", "SLURM_NNODES", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    for argv, why in (
        (["run", "--nnodes", "2:3", "--", "true"], "MIN:MAX needs --rdzv-endpoint"),
        (
            ["run", "-n", "2", "--node-rank", "1", "--rdzv-endpoint", "h", "--", "true"],
            "AEGIS_JOIN_SECRET",
        ),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert why in capsys.readouterr().err
