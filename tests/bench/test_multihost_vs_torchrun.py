"""bench/multihost_vs_torchrun.py: both peers get the same job on the same three hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..support.bench import load_bench
from ..support.netns import Host

bench = load_bench("multihost_vs_torchrun")
HOSTS: Any = [Host(i, f"ns{i}", f"10.77.0.{i + 1}", f"sw{i}") for i in range(3)]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_aegis_runs_one_node_per_host_node_0_with_the_state() -> None:
    argvs = bench.commands("aegis", HOSTS, 2, Path("/tmp/run"))
    assert [_flag(a, "--node-rank") for a in argvs] == ["0", "1", "2"]
    assert all(_flag(a, "--rdzv-endpoint") == "10.77.0.1:29400" for a in argvs)
    assert all(_flag(a, "--nnodes") == "3" and _flag(a, "--nproc-per-node") == "2" for a in argvs)
    assert ["--state-dir" in a for a in argvs] == [True, False, False]
    assert all(a[-1].endswith("train_ddp.py") for a in argvs)


def test_torchrun_runs_c10d_with_host_0_hosting_the_store() -> None:
    argvs = bench.commands("torchrun", HOSTS, 2, Path("/tmp/run"))
    assert all(_flag(a, "--rdzv-backend") == "c10d" for a in argvs)
    assert all(_flag(a, "--rdzv-endpoint") == "10.77.0.1:29500" for a in argvs)
    assert [_flag(a, "--rdzv-conf") for a in argvs] == ["is_host=1", "is_host=0", "is_host=0"]
    assert [_flag(a, "--local-addr") for a in argvs] == [h.address for h in HOSTS]
    assert all(_flag(a, "--max-restarts") == "1" for a in argvs)
    assert all(a[-1].endswith("train_ddp.py") for a in argvs)
